package verifier

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// trimmedTopic is a topic in memory whose partitions' logs may begin past
// offset 0 (records deleted) and may not be readable to their end (a
// broker that stops answering for them).
type trimmedTopic struct {
	drivers.Driver
	parts  [][][]byte      // per partition, the values at offsets 0..
	starts map[int32]int64 // where each log begins now
	stuck  map[int32]bool  // partitions whose read makes no progress
}

func (m *trimmedTopic) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	ends := drivers.MakeOffsets(len(m.parts))
	for p, vs := range m.parts {
		ends.Set(int32(p), int64(len(vs)))
	}
	return ends, nil
}

// Read reads each partition from spec.From to spec.To. A read that begins
// below a partition's log start waits, as Kafka's reader did before it
// asked for the log start: it gets nothing, and the partition is not read
// to its end.
func (m *trimmedTopic) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep := drivers.NewReadReport(spec)
	for _, p := range spec.From.Partitions() {
		from, _ := spec.From.Get(p)
		to, _ := spec.To.Get(p)
		pr := drivers.PartitionRead{Asked: true, Next: from, Target: to}
		if m.stuck[p] || from < m.starts[p] {
			pr.Complete = from >= to
			rep.SetNote(p, "no progress")
			rep.Partitions[p] = pr
			continue
		}
		for o := from; o < to; o++ {
			if err := fn(drivers.Record{Pos: drivers.Position{Partition: p, Offset: o}, Value: m.parts[p][o]}); err != nil {
				return rep, err
			}
			pr.Records++
		}
		pr.Next, pr.Complete = to, true
		rep.Partitions[p] = pr
	}
	return rep, nil
}

// startsTopic is a trimmedTopic whose driver says where each log begins
// (drivers.LogStarter), as Kafka's does.
type startsTopic struct{ *trimmedTopic }

func (m startsTopic) StartOffsets(context.Context, string) (drivers.Offsets, error) {
	out := drivers.MakeOffsets(len(m.parts))
	for p := range m.parts {
		out.Set(int32(p), m.starts[int32(p)])
	}
	return out, nil
}

// The read-back starts at each partition's log start when the driver can
// say it, and a message acked below it is lost (below_log_start in
// lost.jsonl), even in a partition not read to its end. Any other acked
// message not read from a partition not read to its end is unread: never
// in lost, lost_by_partition or lost.jsonl, but in unread and
// unread.jsonl; and it never hides a loss in a partition read to its end
// (issue 35 points 3 and 4). Two partitions of 10 messages each, acked at
// offsets 0-9.
func TestLogStartAndUnread(t *testing.T) {
	tests := []struct {
		name       string
		starts     map[int32]int64
		stuck      map[int32]bool
		noStarts   bool // the driver cannot say where a log begins
		neverSent  bool // one more message acked in partition 0 at offset -1, never written
		verdict    string
		lost       int64
		deleted    int64 // of lost, below the log start
		unread     int64
		lostParts  []int32
		unreadPart []int32
	}{
		{name: "nothing deleted, all read", verdict: Pass},
		{name: "partition 0 deleted to its end", starts: map[int32]int64{0: 10}, verdict: Fail, lost: 10, deleted: 10, lostParts: []int32{0}},
		{name: "partition 0 deleted in part", starts: map[int32]int64{0: 4}, verdict: Fail, lost: 4, deleted: 4, lostParts: []int32{0}},
		{name: "partition 0 deleted, the driver cannot say", starts: map[int32]int64{0: 10}, noStarts: true,
			verdict: Incomplete, unread: 10, unreadPart: []int32{0}},
		{name: "partition 1 not read", stuck: map[int32]bool{1: true}, verdict: Incomplete, unread: 10, unreadPart: []int32{1}},
		{name: "partition 1 not read, a loss in partition 0 read to its end", stuck: map[int32]bool{1: true}, neverSent: true,
			verdict: Fail, lost: 1, unread: 10, lostParts: []int32{0}, unreadPart: []int32{1}},
		{name: "partition 1 not read and deleted in part", starts: map[int32]int64{1: 3}, stuck: map[int32]bool{1: true},
			verdict: Fail, lost: 3, deleted: 3, unread: 7, lostParts: []int32{1}, unreadPart: []int32{1}},
	}
	for _, tc := range tests {
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
			topic := &trimmedTopic{parts: make([][][]byte, 2), starts: tc.starts, stuck: tc.stuck}
			enc := message.NewEncoder(100)
			n := uint64(20)
			if tc.neverSent {
				n++
			}
			for i := uint64(0); i < n; i++ {
				id := message.ID{Run: 1, Producer: 0, Seq: i}
				part, off := int32(i%2), int64(i/2)
				if i < 20 {
					topic.parts[part] = append(topic.parts[part], enc.Encode(nil, id, start.UnixNano()))
				} else {
					part, off = 0, -1 // acked, never written (a driver that drops)
				}
				run.Record(ledger.Send, ledger.Event{Producer: 0, Seq: i, Time: start.UnixNano(), Partition: part})
				run.Record(ledger.Outcome, ledger.Event{Producer: 0, Seq: i, Status: ledger.OutcomeAcked, Partition: part, Offset: off, Time: int64(time.Millisecond)})
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
			var d drivers.Driver = startsTopic{topic}
			if tc.noStarts {
				d = topic
			}
			rb, err := ReadBack(ctx, d, reads, info, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			res, err := CheckLedgers(ctx, Ledgers{Run: run, Reads: reads}, Options{ListDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: lost %d (deleted %d), unread %d; %v; notes %v", res.Verdict, res.Lost, res.LostBelowLogStart, res.Unread, res.Reasons, rb.Notes)
			if res.Verdict != tc.verdict || res.Lost != tc.lost || res.LostBelowLogStart != tc.deleted || res.Unread != tc.unread {
				t.Fatalf("verdict %s, lost %d (below the log start %d), unread %d; want %s, %d (%d), %d",
					res.Verdict, res.Lost, res.LostBelowLogStart, res.Unread, tc.verdict, tc.lost, tc.deleted, tc.unread)
			}
			if !sameKeys(res.LostByPartition, tc.lostParts) || !sameKeys(res.UnreadByPartition, tc.unreadPart) {
				t.Fatalf("lost by partition %v, unread by partition %v; want %v and %v", res.LostByPartition, res.UnreadByPartition, tc.lostParts, tc.unreadPart)
			}
			lost := listed(t, filepath.Join(dir, LostFile))
			var below int64
			for _, l := range lost {
				if l.Unread {
					t.Fatalf("lost.jsonl lists an unread message: %+v", l)
				}
				ls, ok := tc.starts[l.Partition]
				if want := ok && !tc.noStarts && l.AckedOffset >= 0 && l.AckedOffset < ls; l.BelowLogStart != want || (want && l.LogStart != ls) {
					t.Fatalf("lost.jsonl: %+v; want below_log_start %v at %d", l, want, ls)
				}
				if l.BelowLogStart {
					below++
				}
			}
			unread := listed(t, filepath.Join(dir, UnreadFile))
			for _, l := range unread {
				if !l.Unread || l.BelowLogStart || !tc.stuck[l.Partition] && !tc.noStarts {
					t.Fatalf("unread.jsonl: %+v", l)
				}
			}
			if int64(len(lost)) != tc.lost || below != tc.deleted || int64(len(unread)) != tc.unread {
				t.Fatalf("lost.jsonl %d lines (%d below the log start), unread.jsonl %d; want %d (%d), %d", len(lost), below, len(unread), tc.lost, tc.deleted, tc.unread)
			}
		})
	}
}

func sameKeys(m map[int32]*PartitionLoss, want []int32) bool {
	if len(m) != len(want) {
		return false
	}
	for _, p := range want {
		if m[p] == nil {
			return false
		}
	}
	return true
}

func listed(t *testing.T, path string) []LostLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []LostLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l LostLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}
