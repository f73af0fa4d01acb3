package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// A run with --group whose members never delivered one of the run's
// acked messages (they never joined the partitions, every poll failed,
// or the only member stopped on its first delivery) judged nothing of
// the group: its 0 skipped and 0 commits lost read PASS before. It is
// not the experiment asked for; a group that delivered is judged as
// before.
func TestGroupThatDeliveredNothingIsNoPass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acked int64
		group GroupResult
		want  string
	}{
		{"never delivered, with an error", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g", Err: "member 0: poll: coordinator not available"}}, Aborted},
		{"never delivered, no error", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}}, Aborted},
		{"delivered", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}, Delivered: 100, Deliveries: 100, Commits: 3}, Pass},
		{"nothing acked to deliver", 0, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}}, Fail}, // the acked check fails it
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.group
			res := &Result{Sent: 100, Acked: tc.acked, Read: tc.acked, ReadBackComplete: true, Group: &g}
			applyVerdict(res, Options{})
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s; reasons %v", res.Verdict, tc.want, res.Reasons)
			}
		})
	}
}

// A message the read-back found in the log below an acknowledged commit
// and the group was never given is skipped, whatever its producer was
// told: a send that timed out (outcome unknown) or was never answered
// before ackcheck stopped, yet was written, is in the log the group
// committed past. Only acked messages were judged before: those read
// PASS. Offsets are compared within a partition only.
func TestGroupSkipsWhateverTheProducerWasTold(t *testing.T) {
	const none = uint8(0) // no outcome recorded
	for _, tc := range []struct {
		name    string
		outcome uint8
		part    int32 // where the read-back found it
		offset  int64
		read    bool
		skipped int64
		// undelivered: read back past every commit of its partition.
		undelivered int64
	}{
		{"acked, below the commit", ledger.OutcomeAcked, 0, 3, true, 1, 0},
		{"unknown, below the commit", ledger.OutcomeUnknown, 0, 3, true, 1, 0},
		{"rejected yet written, below the commit", ledger.OutcomeRejected, 0, 3, true, 1, 0},
		{"never answered, below the commit", none, 0, 3, true, 1, 0},
		{"unknown, past the commit", ledger.OutcomeUnknown, 0, 12, true, 0, 1},
		{"unknown, not read back", ledger.OutcomeUnknown, 0, 3, false, 0, 0},
		{"acked, below another partition's commit", ledger.OutcomeAcked, 1, 3, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			run, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			reads, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer reads.Close()
			// Messages 0..9 at offsets 0..9 of partition 0 (all but 3,
			// which is the message under test, seq 3 too), delivered and
			// committed at 10; partition 1 has nothing committed.
			for i := uint64(0); i < 10; i++ {
				run.Record(ledger.Send, ledger.Event{Producer: 0, Seq: i, Time: start.UnixNano()})
				if i == 3 {
					if tc.outcome != none {
						run.Record(ledger.Outcome, ledger.Event{Producer: 0, Seq: i, Status: tc.outcome, Partition: tc.part, Offset: -1, Time: 1})
					}
					if tc.read {
						reads.Record(ledger.Read, ledger.Event{Producer: 0, Seq: i, Status: uint8(message.Valid), Partition: tc.part, Offset: tc.offset, Time: start.UnixNano()})
					}
					continue
				}
				run.Record(ledger.Outcome, ledger.Event{Producer: 0, Seq: i, Status: ledger.OutcomeAcked, Partition: 0, Offset: int64(i), Time: 1})
				reads.Record(ledger.Read, ledger.Event{Producer: 0, Seq: i, Status: uint8(message.Valid), Partition: 0, Offset: int64(i), Time: start.UnixNano()})
				run.Record(ledger.Delivery, ledger.Event{Producer: 0, Seq: i, Partition: 0, Offset: int64(i), Time: start.Add(time.Second).UnixNano()})
			}
			run.Record(ledger.Commit, ledger.Event{Producer: ledger.CommitProducer, Seq: 0, Partition: 0, Offset: 10, Time: start.Add(2 * time.Second).UnixNano()})
			for _, l := range []*ledger.Ledger{run, reads} {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			info := ledger.RunInfo{RunID: 1, LoadStart: start, LoadEnd: start.Add(3 * time.Second), Group: &ledger.GroupInfo{Name: "g", Members: 1}}
			res := &Result{}
			if err := judgeGroup(context.Background(), run, reads, info, nil, Options{}, res); err != nil {
				t.Fatal(err)
			}
			if res.Group.Skipped != tc.skipped || res.Group.Undelivered != tc.undelivered {
				t.Fatalf("skipped %d, undelivered %d; want %d, %d (%+v)", res.Group.Skipped, res.Group.Undelivered, tc.skipped, tc.undelivered, res.Group)
			}
		})
	}
}

// A commit lost when what a commit promises could not be read from the
// cluster (CommitPromise failed at the start: Promise empty) read PASS,
// counted as on a cluster that promises nothing, though the cluster may
// well promise durable commits. It is now no PASS (unproven, recorded
// against commit-lost); with the promise read and not durable it is
// counted, and with it durable it fails, as before.
func TestCommitLostWithThePromiseUnknownIsNoPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		info ledger.GroupInfo
		want string
	}{
		{"promise not read", ledger.GroupInfo{Name: "g"}, Unproven},
		{"promise read, not durable", ledger.GroupInfo{Name: "g", Promise: "replicated to 1 broker"}, Pass},
		{"promise read, durable", ledger.GroupInfo{Name: "g", Promise: "replicated to 3 brokers", Durable: true}, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Sent: 100, Acked: 100, Read: 100, ReadBackComplete: true,
				Group: &GroupResult{GroupInfo: tc.info, Delivered: 100, Deliveries: 130, Commits: 20, CommitsLost: 2, Redelivered: 30, RedeliveredAfterCommit: 30}}
			applyVerdict(res, Options{})
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s; reasons %v", res.Verdict, tc.want, res.Reasons)
			}
		})
	}
}
