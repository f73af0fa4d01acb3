package verifier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// Tests of the verdict path at its edges: each rule exactly at its
// boundary, on both sides, so that a rule moved by one (< for <=, a
// dropped arm of an ||) fails a test. A false PASS is the worst bug
// ackcheck can have; most of these cases are one step from one.

// checksOf returns the checks that failed, in order, joined by ",".
func checksOf(r *Result) string {
	var cs []string
	for _, f := range r.Failures {
		cs = append(cs, f.Check)
	}
	return strings.Join(cs, ",")
}

// The acked rule: a run that acked nothing fails whatever faults ran; one
// that acked under 1% fails unless a fault that applied explains it;
// exactly 1% passes. A fault that was skipped or failed explains nothing.
func TestAckedRuleEdges(t *testing.T) {
	applied := []FaultReport{{Record: faults.Record{Action: faults.Kill, Result: faults.Applied}}}
	notApplied := []FaultReport{{Record: faults.Record{Action: faults.Kill, Result: faults.Skipped}},
		{Record: faults.Record{Action: faults.Pause, Result: faults.Failed}}}
	tests := []struct {
		name        string
		sent, acked int64
		faults      []FaultReport
		want        string // failed checks, "" for a pass
	}{
		{"none acked, no fault", 100, 0, nil, CheckAcked},
		{"none acked, a fault applied", 100, 0, applied, CheckAcked},
		{"exactly 1%", 100, 1, nil, ""},
		{"exactly 1% of 1000", 1000, 10, nil, ""},
		{"just under 1%", 1000, 9, nil, CheckAcked},
		{"just under 1%, a fault applied", 1000, 9, applied, ""},
		{"just under 1%, faults not applied", 1000, 9, notApplied, CheckAcked},
		{"all acked", 5, 5, nil, ""},
		{"nothing sent", 0, 0, applied, CheckSent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Sent: tc.sent, Acked: tc.acked, Read: tc.acked, ReadBackComplete: true, Faults: tc.faults}
			applyVerdict(r, Options{})
			if got := checksOf(r); got != tc.want {
				t.Fatalf("failed checks %q, want %q (reasons %q)", got, tc.want, r.Reasons)
			}
			if (tc.want == "") != (r.Verdict == Pass) {
				t.Fatalf("verdict %s with failed checks %q", r.Verdict, checksOf(r))
			}
		})
	}
}

// The acked rule's reason names the broker's most frequent answers, most
// frequent first, ties by text, at most three.
func TestAckedReasonNamesTopErrors(t *testing.T) {
	r := &Result{Sent: 100, ReadBackComplete: true,
		Errors: map[string]int64{"b": 5, "a": 5, "c": 9, "d": 1}}
	applyVerdict(r, Options{})
	want := "only 0 of 100 sent messages were acked: the run tested almost nothing; the broker answered: 9× c; 5× a; 5× b"
	if len(r.Reasons) != 1 || r.Reasons[0] != want {
		t.Fatalf("reasons %q, want %q", r.Reasons, want)
	}
	if got := topErrors(nil, 3); got != "" {
		t.Fatalf("topErrors of none = %q", got)
	}
}

// Recovery deadlines at equality pass, one step over fail, and a fault
// with no first-ack figures (not one that takes a node away) is not
// judged by them.
func TestDeadlineEdges(t *testing.T) {
	fault := func(ready, inSync float64) []FaultReport {
		return []FaultReport{{Record: faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 1},
			ReadyMs: ready, InSyncMs: inSync, FirstAckMs: map[int32]float64{0: 5}}}
	}
	tests := []struct {
		name   string
		noAck  float64
		faults []FaultReport
		opts   Options
		want   string
	}{
		{"no-ack equal to the limit", 2000, nil, Options{MaxNoAck: 2 * time.Second}, ""},
		{"no-ack 1 ms over", 2001, nil, Options{MaxNoAck: 2 * time.Second}, CheckMaxNoAck},
		{"no-ack without a limit", 1e9, nil, Options{}, ""},
		{"ready equal", 0, fault(1000, 10), Options{MaxReady: time.Second}, ""},
		{"ready over", 0, fault(1001, 10), Options{MaxReady: time.Second}, CheckMaxReady},
		{"ready never", 0, fault(-1, 10), Options{MaxReady: time.Second}, CheckMaxReady},
		{"ready at once", 0, fault(0, 10), Options{MaxReady: time.Second}, ""},
		{"in sync equal", 0, fault(10, 3000), Options{MaxInSync: 3 * time.Second}, ""},
		{"in sync over", 0, fault(10, 3001), Options{MaxInSync: 3 * time.Second}, CheckMaxInSync},
		{"in sync never", 0, fault(10, -1), Options{MaxInSync: 3 * time.Second}, CheckMaxInSync},
		{"both over", 0, fault(5000, 5000), Options{MaxReady: time.Second, MaxInSync: time.Second}, CheckMaxReady + "," + CheckMaxInSync},
		{"not tracked", 0, []FaultReport{{Record: faults.Record{Action: faults.Kill, Result: faults.Applied}, ReadyMs: -1, InSyncMs: -1}},
			Options{MaxReady: time.Second, MaxInSync: time.Second}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Sent: 10, Acked: 10, Read: 10, ReadBackComplete: true, LongestNoAckMs: tc.noAck, Faults: tc.faults}
			applyVerdict(r, tc.opts)
			if got := checksOf(r); got != tc.want {
				t.Fatalf("failed checks %q, want %q (reasons %q)", got, tc.want, r.Reasons)
			}
		})
	}
}

// Every rule fires together with the others: one failure does not hide
// another, and each is reported once, under its own check.
func TestEveryRuleReportedOnce(t *testing.T) {
	r := &Result{Sent: 1000, Acked: 1, Lost: 1, Corrupt: 2, Phantom: 3, Duplicates: 4, Reordered: 5,
		LongestNoAckMs: 10, Faults: []FaultReport{{Record: faults.Record{Action: faults.UnexpectedDeath, Result: faults.Observed, Node: 3}}}}
	applyVerdict(r, Options{NoDuplicates: true, Ordered: true, MaxNoAck: time.Millisecond})
	want := strings.Join([]string{CheckLost, CheckCorrupt, CheckPhantom, CheckDuplicates, CheckReordered, CheckReadBack,
		CheckAcked, CheckMaxNoAck, CheckUnexpectedDeath}, ",")
	if got := checksOf(r); got != want || r.Verdict != Fail {
		t.Fatalf("verdict %s, checks %q, want %q", r.Verdict, got, want)
	}
	for i, f := range r.Failures {
		if f.Message != r.Reasons[i] {
			t.Fatalf("failure %d says %q, reason %q", i, f.Message, r.Reasons[i])
		}
	}
	if !strings.Contains(r.Reasons[0], "1 acked messages") || !strings.Contains(r.Reasons[2], "3 messages were read") {
		t.Fatalf("reasons do not carry their counts: %q", r.Reasons)
	}
}

// The ack position check: an ack whose position holds no valid copy is a
// mismatch, offset 0 included (a real position, the first of a fresh
// partition); an ack without a position (-1) is not judged; a corrupt
// copy at the position or a valid copy at the same offset of another
// partition does not vouch for it.
func TestAckPositionEdges(t *testing.T) {
	valid := func(part int32, off int64) ledger.Event {
		return ledger.Event{Partition: part, Offset: off, Status: uint8(message.Valid)}
	}
	bad := ledger.Event{Partition: 0, Offset: 0, Status: uint8(message.Corrupt)}
	tests := []struct {
		name     string
		ack      ledger.Event
		reads    []ledger.Event
		mismatch int64
	}{
		{"offset 0, copy at 0", ledger.Event{Partition: 0, Offset: 0}, []ledger.Event{valid(0, 0)}, 0},
		{"offset 0, copy elsewhere", ledger.Event{Partition: 0, Offset: 0}, []ledger.Event{valid(0, 5)}, 1},
		{"offset 0, copy at 0 of another partition", ledger.Event{Partition: 0, Offset: 0}, []ledger.Event{valid(1, 0)}, 1},
		{"offset 0, only a corrupt copy there", ledger.Event{Partition: 0, Offset: 0}, []ledger.Event{bad, valid(0, 5)}, 1},
		{"no position", ledger.Event{Partition: -1, Offset: -1}, []ledger.Event{valid(0, 5)}, 0},
		{"second of two copies", ledger.Event{Partition: 0, Offset: 7}, []ledger.Event{valid(0, 3), valid(0, 7)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Samples: map[string][]Sample{}}
			c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 1, Clean: true}, nil, 10)
			c.add(&history{sent: true, acked: true, ack: tc.ack, reads: tc.reads})
			if res.AckPositionMismatch != tc.mismatch || res.Lost != 0 || res.Read != 1 {
				t.Fatalf("mismatch %d (want %d), lost %d, read %d", res.AckPositionMismatch, tc.mismatch, res.Lost, res.Read)
			}
		})
	}
}

// Copies of one message: duplicates are the valid copies past the first,
// the first is the lowest (partition, offset) whatever order the read saw
// them in, and reordering is judged by that first copy.
func TestCopiesAndOrder(t *testing.T) {
	valid := func(part int32, off int64) ledger.Event {
		return ledger.Event{Partition: part, Offset: off, Status: uint8(message.Valid)}
	}
	res := &Result{Samples: map[string][]Sample{}}
	c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 1, Clean: true}, nil, 10)
	acked := func(seq uint64, reads ...ledger.Event) *history {
		return &history{seq: seq, sent: true, acked: true, ack: ledger.Event{Partition: -1, Offset: -1}, reads: reads}
	}
	// seq 0: copies at 9, 4 and 7 (read in that order): first copy 4.
	c.add(acked(0, valid(0, 9), valid(0, 4), valid(0, 7)))
	// seq 1 at 6: after seq 0's first copy 4, so in order, though before
	// seq 0's second copy.
	c.add(acked(1, valid(0, 6)))
	// seq 2 at 6 again, equal to the previous: not before it.
	c.add(acked(2, valid(0, 6), valid(0, 6)))
	// seq 3 at 5: before seq 2's 6: reordered.
	c.add(acked(3, valid(0, 5)))
	// seq 4 on partition 1, copies at 1/3, 1/2 and 0/8: first copy 0/8,
	// which is after 5 on partition 0: in order.
	c.add(acked(4, valid(1, 3), valid(1, 2), valid(0, 8)))
	if res.Duplicates != 4 || res.Reordered != 1 || res.Read != 5 {
		t.Fatalf("duplicates %d (want 4), reordered %d (want 1), read %d", res.Duplicates, res.Reordered, res.Read)
	}
	d := res.Samples["duplicates"]
	if len(d) != 2 || d[0].Offset != 4 || fmt.Sprint(d[0].Others) != "[9 7]" || d[1].Partition != 0 || d[1].Offset != 8 || fmt.Sprint(d[1].Others) != "[3 2]" {
		t.Fatalf("duplicate samples %+v", d)
	}
	if s := res.Samples["reordered"]; len(s) != 1 || s[0].Offset != 5 {
		t.Fatalf("reordered samples %+v", s)
	}
	// A new producer starts its own order: its first message at offset 0
	// is not reordered against the previous producer's 8.
	c.add(&history{producer: 1, sent: true, acked: true, ack: ledger.Event{Partition: -1, Offset: -1}, reads: []ledger.Event{valid(0, 0)}})
	if res.Reordered != 1 {
		t.Fatalf("a new producer was judged against the last one: reordered %d", res.Reordered)
	}
}

// Samples are capped at MaxSamples per class, and the count goes on.
func TestSamplesCapped(t *testing.T) {
	res := &Result{Samples: map[string][]Sample{}}
	c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 1, Clean: true}, nil, 2)
	for i := uint64(0); i < 5; i++ {
		c.add(&history{seq: i, sent: true, acked: true, ack: ledger.Event{Partition: 0, Offset: int64(i)}})
	}
	if res.Lost != 5 || len(res.Samples["lost"]) != 2 || res.Samples["lost"][1].Offset != 1 {
		t.Fatalf("lost %d, samples %+v", res.Lost, res.Samples["lost"])
	}
}

// Outcomes: each failed send is counted under its outcome, the last one
// recorded when there are several; a send with an ack among its outcomes
// is acked.
func TestOutcomeCounts(t *testing.T) {
	ms := time.Millisecond
	r := judge(t, true, true, Options{},
		send(0, 0, 0), ack(0, 0, 0, 0, ms), read(0, 0, 0, 0),
		send(0, 1, 0), fail(0, 1, ledger.OutcomeRejected),
		send(0, 2, 0), fail(0, 2, ledger.OutcomeUnknown),
		send(0, 3, 0),
		send(0, 4, 0), fail(0, 4, ledger.OutcomeUnknown), fail(0, 4, ledger.OutcomeRejected),
		send(0, 5, 0), fail(0, 5, ledger.OutcomeUnknown), ack(0, 5, 0, 1, ms), read(0, 5, 0, 1),
	)
	got := fmt.Sprintf("sent %d acked %d failed %d rejected %d unknown %d no-outcome %d", r.Sent, r.Acked, r.Failed, r.Rejected, r.Unknown, r.NoOutcome)
	if want := "sent 6 acked 2 failed 4 rejected 2 unknown 1 no-outcome 1"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// End-to-end latency of a message read live more than once is its
// earliest read, whatever order the copies were recorded in.
func TestE2EEarliestLiveRead(t *testing.T) {
	ms := time.Millisecond
	live := func(seq uint64, lat time.Duration) ev {
		return ev{ledger.LiveRead, ledger.Event{Producer: 0, Seq: seq, Time: int64(lat), Status: uint8(message.Valid)}}
	}
	tests := []struct {
		name string
		lats []time.Duration
		want float64
	}{
		{"earliest in the middle", []time.Duration{30 * ms, 10 * ms, 20 * ms}, 10},
		{"earliest last", []time.Duration{30 * ms, 20 * ms, 12 * ms}, 12},
		{"earliest first", []time.Duration{7 * ms, 20 * ms}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := []ev{send(0, 0, 0), ack(0, 0, 0, 0, ms), read(0, 0, 0, 0)}
			for _, l := range tc.lats {
				evs = append(evs, live(0, l))
			}
			r := judge(t, true, true, Options{}, evs...)
			if r.E2E.Count != 1 || r.E2E.Max < tc.want*0.99 || r.E2E.Max > tc.want*1.01 {
				t.Fatalf("e2e %+v, want one value of %.0f ms", r.E2E, tc.want)
			}
		})
	}
}

// Live reads of IDs the ledger holds nothing else of are passed over; the
// next message's latency is its own.
func TestE2ESkipsUnknownLiveReads(t *testing.T) {
	ms := time.Millisecond
	live := func(p uint32, seq uint64, lat time.Duration) ev {
		return ev{ledger.LiveRead, ledger.Event{Producer: p, Seq: seq, Time: int64(lat), Status: uint8(message.Valid)}}
	}
	r := judge(t, true, true, Options{},
		live(0, 0, time.Second), live(0, 1, time.Second),
		send(0, 2, 0), ack(0, 2, 0, 0, ms), read(0, 2, 0, 0), live(0, 2, 40*ms),
		live(0, 3, time.Second),
		send(1, 0, 0), ack(1, 0, 1, 0, ms), read(1, 0, 1, 0), live(1, 0, 60*ms))
	if r.E2E.Count != 2 || r.E2E.Max > 61 || r.E2E.P50 < 39 || r.E2E.P50 > 41 {
		t.Fatalf("e2e %+v, want 40 and 60 ms", r.E2E)
	}
}

// gaps: a stretch of exactly minLen empty buckets is a gap, one shorter is
// not; stretches at the start and at the end count too.
func TestGapsEdges(t *testing.T) {
	bits := func(set ...int64) []uint64 {
		var bm []uint64
		for _, b := range set {
			for int64(len(bm))*64 <= b {
				bm = append(bm, 0)
			}
			bm[b/64] |= 1 << (b % 64)
		}
		return bm
	}
	tests := []struct {
		name   string
		bm     []uint64
		n, min int64
		want   string
	}{
		{"exactly min", bits(0, 6, 7), 8, 5, "[[1 6]]"},
		{"one short", bits(0, 5, 6), 7, 5, "[]"},
		{"at the start", bits(5), 6, 5, "[[0 5]]"},
		{"at the end", bits(0), 6, 5, "[[1 6]]"},
		{"past the bitmap", bits(0), 130, 100, "[[1 130]]"},
		{"across words", bits(60, 70), 71, 9, "[[0 60] [61 70]]"},
		{"none", bits(0, 1, 2), 3, 1, "[]"},
		{"n 0", nil, 0, 1, "[]"},
		{"min 1, every hole", bits(1, 3), 5, 1, "[[0 1] [2 3] [4 5]]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := gaps(tc.bm, tc.n, tc.min)
			if s := fmt.Sprint(got); s != tc.want && !(tc.want == "[]" && len(got) == 0) {
				t.Fatalf("gaps = %s, want %s", s, tc.want)
			}
		})
	}
}

// longestStall: a stretch without acks counts toward a fault when it
// overlaps [from, to]; one that ends exactly at the fault's bucket ended
// before the fault and does not; one that starts exactly at to's bucket
// does. to 0 means the end of the load.
func TestLongestStallEdges(t *testing.T) {
	res := int64(gapResolution)
	bits := func(set ...int64) []uint64 {
		var bm []uint64
		for _, b := range set {
			for int64(len(bm))*64 <= b {
				bm = append(bm, 0)
			}
			bm[b/64] |= 1 << (b % 64)
		}
		return bm
	}
	// Acks in buckets 0, 10, 13 and 19 of 20: gaps [1,10) of 9 buckets,
	// [11,13) of 2 and [14,19) of 5.
	bm := bits(0, 10, 13, 19)
	tests := []struct {
		name     string
		from, to int64 // buckets; to -1: 0 (the end of the load)
		want     float64
	}{
		{"fault at the bucket where the long gap ends", 10, 12, 20},
		{"fault one bucket earlier", 9, 12, 90},
		{"window reaching exactly the start of a gap", 12, 14, 50},
		{"window ending before a gap", 11, 13, 20},
		{"to the end of the load", 10, -1, 50},
		{"after every gap", 19, -1, 0},
	}
	// The load starts at a real time: buckets count from it.
	start := t0.UnixNano()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			to := int64(0)
			if tc.to >= 0 {
				to = start + tc.to*res
			}
			if got := longestStall(bm, 20, start, start+tc.from*res, to); got != tc.want {
				t.Fatalf("longestStall = %v ms, want %v", got, tc.want)
			}
		})
	}
}

// Through Check: a partition's stretch of exactly gapMin without acks is
// listed in PartitionGaps, one 10 ms shorter is not, and a partition with
// no gap is listed with none.
func TestPartitionGapAtMinimum(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		pause time.Duration // from the ack at 1 s to the next
		want  string
	}{
		{"exactly the minimum", gapMin + gapResolution, "1.01-1.51"},
		{"one bucket short", gapMin, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []ev
			seq := uint64(0)
			// Acks every 10 ms on partition 0 from 0 to 10 s, but none
			// between 1 s and 1 s + pause; partition 1 acks throughout.
			for at := time.Duration(0); at < 10*time.Second; at += 10 * ms {
				evs = append(evs, send(0, seq, at), ack(0, seq, 1, int64(seq), 0), read(0, seq, 1, int64(seq)))
				seq++
				if at > time.Second && at < time.Second+tc.pause {
					continue
				}
				evs = append(evs, send(0, seq, at), ack(0, seq, 0, int64(seq), 0), read(0, seq, 0, int64(seq)))
				seq++
			}
			l := ledgerWith(t, evs, nil)
			run := ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * time.Second), Clean: true,
				StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0, 1: 0})}
			if err := l.PutMeta(ledger.MetaRun, run); err != nil {
				t.Fatal(err)
			}
			r, err := Check(context.Background(), l, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range r.PartitionGaps[0] {
				got = append(got, fmt.Sprintf("%.2f-%.2f", g.FromS, g.ToS))
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("partition 0 gaps %q, want %q", got, tc.want)
			}
			if r.GapMinMs != 500 {
				t.Fatalf("GapMinMs %v, want 500", r.GapMinMs)
			}
			if g, ok := r.PartitionGaps[1]; !ok || len(g) != 0 {
				t.Fatalf("partition 1 gaps %v (listed %v), want listed with none", g, ok)
			}
		})
	}
}

// spyTopic answers EndOffsets with ends (or err) and records what Read
// was asked to read; it delivers nothing.
type spyTopic struct {
	drivers.Driver
	ends     map[int32]int64
	err      error
	from, to map[int32]int64
	read     bool
}

func (s *spyTopic) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	if s.err != nil {
		return drivers.Offsets{}, s.err
	}
	return drivers.OffsetsOf(s.ends), nil
}
func (s *spyTopic) Read(_ context.Context, spec drivers.ReadSpec, _ func(drivers.Record) error) (drivers.ReadReport, error) {
	s.read, s.from, s.to = true, spec.From.Map(), spec.To.Map()
	rep := drivers.NewReadReport(spec)
	for p := range rep.Partitions {
		if pr := &rep.Partitions[p]; pr.Asked {
			pr.Next, pr.Complete = pr.Target, true
		}
	}
	return rep, nil
}

// ReadBack's range per partition: from the start offset to the end; a
// partition that took no new messages (end == start) is read as an empty
// range, not as truncated; one whose log now ends before its start was
// truncated or recreated and is read from 0 with a note. A topic that is
// gone is no complete read-back. (A partition the broker no longer lists:
// main's TestPartitionGoneIsJudged.)
func TestReadBackRanges(t *testing.T) {
	tests := []struct {
		name     string
		ends     map[int32]int64
		err      error
		from, to string
		notes    string
		complete bool
	}{
		{"no new messages", map[int32]int64{0: 5}, nil, "map[0:5]", "map[0:5]", "", true},
		{"new messages", map[int32]int64{0: 9}, nil, "map[0:5]", "map[0:9]", "", true},
		{"log shorter than at the start", map[int32]int64{0: 3}, nil, "map[0:0]", "map[0:3]", "0: log ends at 3, before the 5 it had when the load started", true},
		{"topic gone", nil, fmt.Errorf("describe: %w", drivers.ErrTopicMissing), "map[]", "map[]", "0: topic t does not exist any more", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			d := &spyTopic{ends: tc.ends, err: tc.err}
			run := ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 5})}
			rep, err := ReadBack(context.Background(), d, l, run, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(d.from) != tc.from || fmt.Sprint(d.to) != tc.to {
				t.Fatalf("read from %v to %v, want %s to %s", d.from, d.to, tc.from, tc.to)
			}
			var notes []string
			for p, n := range rep.Notes {
				notes = append(notes, fmt.Sprintf("%d: %s", p, n))
			}
			if strings.Join(notes, "|") != tc.notes {
				t.Fatalf("notes %q, want %q", notes, tc.notes)
			}
			if rep.Complete != tc.complete {
				t.Fatalf("read-back complete %v, want %v", rep.Complete, tc.complete)
			}
		})
	}
}

// A failed EndOffsets reads nothing and makes no complete read-back: it
// says why, and notes every partition as not read.
func TestReadBackEndOffsetsError(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &spyTopic{err: errors.New("no broker answered")}
	rep, err := ReadBack(context.Background(), d, l, ledger.RunInfo{StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}, time.Second)
	if err != nil || rep.Complete || rep.Error == "" || len(d.from) != 0 || rep.Notes[0] != "not read" {
		t.Fatalf("err %v, complete %v, error %q, read from %v, notes %v", err, rep.Complete, rep.Error, d.from, rep.Notes)
	}
}

// A copy of a run that died, never recorded sent: unrecorded only when
// its producer is one of the run's and its sequence is at or past that
// producer's last committed send; any other is a phantom.
func TestUnrecordedOrPhantom(t *testing.T) {
	valid := ledger.Event{Partition: 0, Offset: 1, Status: uint8(message.Valid)}
	tests := []struct {
		name       string
		clean      bool
		producer   uint32
		seq        uint64
		unrecorded int64
	}{
		{"at sent-through", false, 1, 4, 1},
		{"past sent-through", false, 1, 9, 1},
		{"below sent-through", false, 1, 3, 0},
		{"the first producer past the run's", false, 2, 4, 0},
		{"a clean run", true, 1, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Samples: map[string][]Sample{}}
			c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 2, Clean: tc.clean}, map[uint32]uint64{1: 4, 2: 0}, 10)
			c.add(&history{producer: tc.producer, seq: tc.seq, reads: []ledger.Event{valid}})
			if res.Unrecorded != tc.unrecorded || res.Phantom != 1-tc.unrecorded || res.Sent != 0 {
				t.Fatalf("unrecorded %d, phantom %d, sent %d", res.Unrecorded, res.Phantom, res.Sent)
			}
		})
	}
}

// An ID never recorded sent whose only copies are corrupt is counted
// corrupt, and neither phantom nor unrecorded: no intact copy says it was
// written.
func TestUnsentCorruptOnly(t *testing.T) {
	for _, clean := range []bool{true, false} {
		res := &Result{Samples: map[string][]Sample{}}
		c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 1, Clean: clean}, map[uint32]uint64{}, 10)
		sent, lost := c.add(&history{seq: 3, reads: []ledger.Event{{Partition: 0, Offset: 1, Status: uint8(message.Corrupt)}}})
		if sent || lost || res.Corrupt != 1 || res.Phantom != 0 || res.Unrecorded != 0 {
			t.Fatalf("clean %v: sent %v, lost %v, corrupt %d, phantom %d, unrecorded %d", clean, sent, lost, res.Corrupt, res.Phantom, res.Unrecorded)
		}
	}
}

// A ledger that cannot be proven whole: its phantoms are stated, not
// failed; with no phantoms there is nothing to state.
func TestPhantomsOfAnUnprovenLedger(t *testing.T) {
	for _, tc := range []struct {
		phantom int64
		reasons int
	}{{0, 0}, {2, 1}} {
		r := &Result{Sent: 10, Acked: 10, Read: 10, ReadBackComplete: true, Phantom: tc.phantom, Ledger: &ledger.Proof{Whole: false}}
		applyVerdict(r, Options{})
		phantomReasons := 0
		for _, reason := range r.Reasons {
			if strings.Contains(reason, "whose sends the ledger does not hold") {
				phantomReasons++
			}
		}
		for _, f := range r.Failures {
			if f.Check == CheckPhantom {
				t.Fatalf("%d phantoms of an unproven ledger failed the phantom check", tc.phantom)
			}
		}
		if phantomReasons != tc.reasons {
			t.Fatalf("%d phantoms: reasons %q, want %d about them", tc.phantom, r.Reasons, tc.reasons)
		}
	}
}
