package pulsar

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/apache/pulsar-client-go/pulsar"
)

func TestPackKeepsTheLogOrder(t *testing.T) {
	// Message IDs in log order: ledgers roll over, entries grow within a
	// ledger, batch indexes within an entry; -1 is an unbatched message.
	ids := [][3]int64{
		{0, 0, -1}, {0, 0, 1}, {0, 1, 0}, {0, 1, 4095}, {0, 2, -1}, {0, maxEntry, maxBatch},
		{1, 0, 0}, {7, 49999, 999}, {8, 0, -1}, {maxLedger, maxEntry, maxBatch},
	}
	var packed []int64
	for _, id := range ids {
		p, err := Pack(id[0], id[1], int32(id[2]))
		if err != nil {
			t.Fatalf("%v: %v", id, err)
		}
		l, e, b := Unpack(p)
		wantB := int32(id[2])
		if wantB < 0 {
			wantB = 0
		}
		if l != id[0] || e != id[1] || b != wantB {
			t.Errorf("%v -> %d -> (%d, %d, %d)", id, p, l, e, b)
		}
		packed = append(packed, p)
	}
	if !sort.SliceIsSorted(packed, func(i, j int) bool { return packed[i] < packed[j] }) {
		t.Fatalf("packing does not keep the order: %v", packed)
	}
	if packed[len(packed)-1] < 0 {
		t.Fatal("the largest position is negative")
	}
	after, _ := afterEntry(0, 1)
	if first2, _ := Pack(0, 2, -1); after != first2 {
		t.Errorf("afterEntry(0,1) = %d, want the first position of entry 2, %d", after, first2)
	}
}

func TestPackRefusesWhatDoesNotFit(t *testing.T) {
	for _, id := range [][3]int64{{maxLedger + 1, 0, 0}, {0, maxEntry + 1, 0}, {0, 0, maxBatch + 1}, {-1, 0, 0}, {0, -1, 0}} {
		if p, err := Pack(id[0], id[1], int32(id[2])); err == nil {
			t.Errorf("%v packed as %d", id, p)
		}
	}
}

func TestOutcomeClasses(t *testing.T) {
	id := pulsar.NewMessageID(3, 9, 2, 1)
	o := outcome(1, id, nil)
	want, _ := Pack(3, 9, 2)
	if o.Status != drivers.Acked || o.Pos != (drivers.Position{Partition: 1, Offset: want}) || o.Err != nil {
		t.Errorf("ack: %+v", o)
	}
	if o := outcome(1, pulsar.NewMessageID(maxLedger+1, 0, 0, 1), nil); o.Status != drivers.Acked || o.Pos.Offset != -1 {
		t.Errorf("an ack at an unrepresentable ID must stay an ack with no position: %+v", o)
	}
	tests := []struct {
		err  error
		want drivers.Status
	}{
		{pulsar.ErrSendQueueIsFull, drivers.Rejected},
		{pulsar.ErrMessageTooLarge, drivers.Rejected},
		{pulsar.ErrProducerClosed, drivers.Rejected},
		{pulsar.ErrSendTimeout, drivers.Unknown},
		{pulsar.ErrContextExpired, drivers.Unknown},
		{pulsar.ErrTopicTerminated, drivers.Unknown},
		{fmt.Errorf("wrapped: %w", pulsar.ErrSendTimeout), drivers.Unknown},
		{errors.New("connection reset"), drivers.Unknown},
	}
	for _, tc := range tests {
		if o := outcome(0, nil, tc.err); o.Status != tc.want || o.Err == nil {
			t.Errorf("%v: %v, want %v", tc.err, o.Status, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{ServiceURL: "127.0.0.1:6650", AdminURL: "http://127.0.0.1:8080"},
		{ServiceURL: "pulsar://127.0.0.1:6650", AdminURL: "127.0.0.1:8080"},
		{ServiceURL: "pulsar://127.0.0.1:6650", AdminURL: "http://127.0.0.1:8080", SendTimeout: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (Config{ServiceURL: "pulsar://127.0.0.1:6650", AdminURL: "http://127.0.0.1:8080"}).Validate(); err != nil {
		t.Fatal(err)
	}
}
