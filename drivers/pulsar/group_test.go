package pulsar

import (
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestCommittedFloor maps mark-delete positions onto ackcheck's
// positions: past every message of the entry, so that a group that acked
// a partition's last entry has committed exactly where EndOffsets says
// the partition ends, and a commit never falls inside an entry.
func TestCommittedFloor(t *testing.T) {
	p := func(l, e int64, b int32) int64 {
		v, err := Pack(l, e, b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"12:4", p(12, 5, 0), false},           // entry 4 acked: the next entry's first message
		{"12:-1", p(12, 0, 0), false},          // nothing of ledger 12 acked
		{" 7:0 ", p(7, 1, 0), false},           // spaces as the admin API never prints them
		{"0:16777216", 0, true},                // an entry past what Pack holds: refused, not wrapped
		{"12", 0, true},                        // not ledger:entry
		{"12:x", 0, true},                      // not a number
		{"12:-2", 0, true},                     // below -1
		{"", 0, true},                          // nothing
		{"134217728:0", 0, true},               // a ledger past what Pack holds
		{"3:2:1", 0, true},                     // a message ID, not a position
		{"100:49999", p(100, 50000, 0), false}, // the last entry of a full default ledger
	} {
		got, err := committedFloor(c.in)
		switch {
		case c.bad && err == nil:
			t.Errorf("committedFloor(%q) = %d, want an error", c.in, got)
		case !c.bad && err != nil:
			t.Errorf("committedFloor(%q): %v", c.in, err)
		case !c.bad && got != c.want:
			t.Errorf("committedFloor(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	// Every message of entry 12:4, batched or not, is below its floor;
	// the next entry's first is not.
	floor, _ := committedFloor("12:4")
	for _, b := range []int32{-1, 0, 7, maxBatch} {
		if pos, _ := Pack(12, 4, b); pos >= floor {
			t.Errorf("message 12:4:%d at %d is not below the floor %d of its acked entry", b, pos, floor)
		}
	}
	if next, _ := Pack(12, 5, -1); next < floor {
		t.Errorf("the next entry's message at %d is below the floor %d", next, floor)
	}
}

// TestStartID: a group begins where the run began on each partition; a
// partition never written begins at its first message.
func TestStartID(t *testing.T) {
	pos, _ := Pack(9, 3, 0)
	for _, c := range []struct {
		start int64
		want  utils.MessageID
	}{
		{0, utils.Earliest},
		{-1, utils.Earliest},
		{pos, utils.MessageID{LedgerID: 9, EntryID: 3, PartitionIndex: 2, BatchIndex: -1}},
	} {
		if got := startID(c.start, 2); got != c.want {
			t.Errorf("startID(%d) = %+v, want %+v", c.start, got, c.want)
		}
	}
}

// TestGroupPromise: an ack is never durable (the broker answers before
// the cursor is written), and the meaning names the settings in force.
func TestGroupPromise(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  map[string]string
		says []string
	}{
		{"defaults", map[string]string{"managedLedgerDefaultMarkDeleteRateLimit": "1.0", "managedLedgerCursorPositionFlushSeconds": "60",
			"managedLedgerDefaultWriteQuorum": "2", "managedLedgerDefaultAckQuorum": "2"},
			[]string{"in memory", "at most 1.0 times a second", "every 60 s", "write quorum 2, ack quorum 2", "rolls the subscription back"}},
		{"no rate limit", map[string]string{"managedLedgerDefaultMarkDeleteRateLimit": "0"}, []string{"after each ack, asynchronously", "write quorum ?"}},
		{"nothing known", map[string]string{}, []string{"at most ? times"}},
	} {
		p := groupPromise(c.cfg)
		if p.Durable {
			t.Errorf("%s: durable; an answered ack is only in the broker's memory", c.name)
		}
		for _, s := range c.says {
			if !strings.Contains(p.Meaning, s) {
				t.Errorf("%s: %q does not say %q", c.name, p.Meaning, s)
			}
		}
	}
}

// TestCheckGroup refuses names a subscription in a REST path cannot have.
func TestCheckGroup(t *testing.T) {
	for name, ok := range map[string]bool{"g1": true, "orders.group_2-x": true, "": false, "a/b": false, "a b": false, "a%2F": false, "a?": false} {
		if err := checkGroup(name); (err == nil) != ok {
			t.Errorf("checkGroup(%q) = %v", name, err)
		}
	}
	if got := ReadbackSubscription("g"); got != "g-ackcheck-readback" {
		t.Errorf("ReadbackSubscription(g) = %q", got)
	}
}

// batchID is a message ID with a batch size, as the client gives a
// batched message's.
type batchID struct {
	pulsar.MessageID
	idx, size int32
}

func (b batchID) BatchIdx() int32  { return b.idx }
func (b batchID) BatchSize() int32 { return b.size }

// TestEntryOpen: a poll goes on only for a batch whose last message has
// not come.
func TestEntryOpen(t *testing.T) {
	base := pulsar.NewMessageID(1, 2, -1, 0)
	for _, c := range []struct {
		idx, size int32
		open      bool
	}{
		{-1, 0, false}, // not batched
		{0, 1, false},  // a batch of one
		{0, 3, true},
		{1, 3, true},
		{2, 3, false}, // the batch's last
		{0, 0, false}, // a batch size the client did not give
	} {
		if got := entryOpen(batchID{base, c.idx, c.size}); got != c.open {
			t.Errorf("batch index %d of %d: open %v, want %v", c.idx, c.size, got, c.open)
		}
	}
}
