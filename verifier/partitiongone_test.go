package verifier

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// lessPartitions is a memTopic whose broker lists only its first n
// partitions: a topic recreated with fewer partitions.
type lessPartitions struct {
	*memTopic
	n int
}

func (m lessPartitions) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	ends, err := m.memTopic.EndOffsets(ctx, topic)
	for _, p := range ends.Partitions() {
		if int(p) >= m.n {
			ends.Delete(p)
		}
	}
	return ends, err
}

// Read reads the partitions the broker lists.
func (m lessPartitions) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	return (&memTopic{parts: m.parts[:m.n]}).Read(ctx, spec, fn)
}

// A partition of the run that the broker no longer lists is said so in
// the read-back's notes, and its acked messages are judged lost (as for a
// topic gone), not "unread" beside a read-back called complete (hostile
// review of issue 24's fixes: result.json said read_back_complete true,
// no note, and counted them in lost_unread as well as in lost).
func TestPartitionGoneIsJudged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed int
		lost   int64
	}{
		{"every partition listed", 2, 0},
		{"partition 1 gone", 1, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			run, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			start := time.Now().Add(-time.Minute)
			info := ledger.RunInfo{RunID: 1, Driver: "memory", Topic: "t", Producers: 1,
				StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0, 1: 0}), LoadStart: start, LoadEnd: start.Add(time.Second), Clean: true}
			topic := &memTopic{parts: make([][][]byte, 2)}
			enc := message.NewEncoder(100)
			for i := int64(0); i < 100; i++ {
				id := message.ID{Run: 1, Producer: 0, Seq: uint64(i)}
				part := int32(i % 2)
				off := int64(len(topic.parts[part]))
				topic.parts[part] = append(topic.parts[part], enc.Encode(nil, id, start.UnixNano()))
				run.Record(ledger.Send, ledger.Event{Producer: 0, Seq: uint64(i), Time: start.UnixNano(), Partition: part})
				run.Record(ledger.Outcome, ledger.Event{Producer: 0, Seq: uint64(i), Status: ledger.OutcomeAcked, Partition: part, Offset: off, Time: int64(time.Millisecond)})
			}
			if err := run.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := run.PutMeta(ledger.MetaRun, info); err != nil {
				t.Fatal(err)
			}
			reads, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reads.Close()
			rb, err := ReadBack(ctx, lessPartitions{topic, tc.listed}, reads, info, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckLedgers(ctx, Ledgers{Run: run, Reads: reads}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			noted := strings.Contains(rb.Notes[1], "partition 1 of t does not exist any more")
			if len(rb.Unread) != 0 || noted != (tc.lost > 0) || res.Lost != tc.lost || res.Unread != 0 || (res.Verdict == Fail) != (tc.lost > 0) {
				t.Fatalf("unread %v, notes %v; lost %d (unread %d), verdict %s %v", rb.Unread, rb.Notes, res.Lost, res.Unread, res.Verdict, res.Reasons)
			}
			if tc.lost > 0 && !slices.ContainsFunc(res.Failures, func(f Failure) bool { return f.Check == CheckLost }) {
				t.Fatalf("failures %+v", res.Failures)
			}
		})
	}
}
