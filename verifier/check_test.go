package verifier

import (
	"context"
	"github.com/ackcheck/ackcheck/faults"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

type ev struct {
	kind ledger.Kind
	e    ledger.Event
}

func send(p uint32, seq uint64, at time.Duration) ev {
	return ev{ledger.Send, ledger.Event{Producer: p, Seq: seq, Time: t0.Add(at).UnixNano()}}
}
func ack(p uint32, seq uint64, part int32, off int64, lat time.Duration) ev {
	return ev{ledger.Outcome, ledger.Event{Producer: p, Seq: seq, Status: ledger.OutcomeAcked, Partition: part, Offset: off, Time: int64(lat)}}
}
func fail(p uint32, seq uint64, status uint8) ev {
	return ev{ledger.Outcome, ledger.Event{Producer: p, Seq: seq, Status: status, Partition: -1, Offset: -1}}
}
func read(p uint32, seq uint64, part int32, off int64) ev {
	return ev{ledger.Read, ledger.Event{Producer: p, Seq: seq, Partition: part, Offset: off, Status: uint8(message.Valid)}}
}
func corrupt(p uint32, seq uint64, part int32, off int64) ev {
	return ev{ledger.Read, ledger.Event{Producer: p, Seq: seq, Partition: part, Offset: off, Status: uint8(message.Corrupt)}}
}

var t0 = time.Unix(1_800_000_000, 0)

// judge builds a ledger from evs and runs Check on it.
func judge(t *testing.T, clean bool, complete bool, opts Options, evs ...ev) *Result {
	t.Helper()
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range evs {
		l.Record(e.kind, e.e)
	}
	run := ledger.RunInfo{RunID: 7, Topic: "t", Producers: 2, LoadStart: t0, Clean: clean}
	if clean {
		run.LoadEnd = t0.Add(10 * time.Second)
	}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		t.Fatal(err)
	}
	if err := l.PutMeta(MetaReadBack, ReadBackReport{Complete: complete}); err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Each class in isolation, the verdict it leads to, and a clean history.
func TestClasses(t *testing.T) {
	ms := time.Millisecond
	okPair := []ev{send(0, 0, 0), ack(0, 0, 0, 0, 2*ms), read(0, 0, 0, 0)}
	// with adds an acked message of producer 1 (partition 1), so that a
	// class about failed sends is judged in a run that acked something.
	with := func(evs ...ev) []ev {
		return append([]ev{send(1, 0, 0), ack(1, 0, 1, 0, 2*ms), read(1, 0, 1, 0)}, evs...)
	}
	tests := []struct {
		name     string
		clean    bool
		complete bool
		opts     Options
		evs      []ev
		want     map[string]int64
		verdict  string
	}{
		{"clean", true, true, Options{NoDuplicates: true, Ordered: true}, okPair,
			map[string]int64{"acked": 1, "read": 1}, Pass},
		{"lost", true, true, Options{}, []ev{send(0, 0, 0), ack(0, 0, 0, 0, ms)},
			map[string]int64{"acked": 1, "lost": 1}, Fail},
		{"lost when only copy is corrupt", true, true, Options{}, []ev{send(0, 0, 0), ack(0, 0, 0, 0, ms), corrupt(0, 0, 0, 0)},
			map[string]int64{"acked": 1, "lost": 1, "corrupt": 1}, Fail},
		{"corrupt extra copy", true, true, Options{}, append(append([]ev{}, okPair...), corrupt(0, 0, 0, 1)),
			map[string]int64{"acked": 1, "read": 1, "corrupt": 1}, Fail},
		{"phantom", true, true, Options{}, append(append([]ev{}, okPair...), read(0, 5, 0, 1)),
			map[string]int64{"acked": 1, "read": 1, "phantom": 1}, Fail},
		{"phantom of unknown producer, run died", false, true, Options{}, append(append([]ev{}, okPair...), read(9, 0, 0, 1)),
			map[string]int64{"acked": 1, "read": 1, "phantom": 1}, Fail},
		{"phantom below sent-through, run died", false, true, Options{}, []ev{send(0, 0, 0), ack(0, 0, 0, 0, ms), read(0, 0, 0, 0), send(0, 2, 0), read(0, 1, 0, 1)},
			map[string]int64{"acked": 1, "failed": 1, "read": 1, "phantom": 1, "not_written": 1}, Fail},
		{"unrecorded send after a crash", false, true, Options{}, append(append([]ev{}, okPair...), read(0, 1, 0, 1)),
			map[string]int64{"acked": 1, "read": 1, "unrecorded": 1}, Pass},
		{"duplicate allowed", true, true, Options{}, append(append([]ev{}, okPair...), read(0, 0, 1, 0)),
			map[string]int64{"acked": 1, "read": 1, "duplicates": 1}, Pass},
		{"duplicate refused", true, true, Options{NoDuplicates: true}, append(append([]ev{}, okPair...), read(0, 0, 0, 3)),
			map[string]int64{"acked": 1, "read": 1, "duplicates": 1}, Fail},
		{"same copy read twice is no duplicate", true, true, Options{NoDuplicates: true}, append(append([]ev{}, okPair...), read(0, 0, 0, 0)),
			map[string]int64{"acked": 1, "read": 1}, Pass},
		{"reordered", true, true, Options{Ordered: true}, []ev{
			send(0, 0, 0), ack(0, 0, 0, 5, ms), read(0, 0, 0, 5),
			send(0, 1, 0), ack(0, 1, 0, 4, ms), read(0, 1, 0, 4),
			send(0, 2, 0), ack(0, 2, 0, 6, ms), read(0, 2, 0, 6)},
			map[string]int64{"acked": 3, "read": 3, "reordered": 1}, Fail},
		{"other partitions do not reorder", true, true, Options{Ordered: true}, []ev{
			send(0, 0, 0), ack(0, 0, 0, 5, ms), read(0, 0, 0, 5),
			send(0, 1, 0), ack(0, 1, 1, 0, ms), read(0, 1, 1, 0),
			send(1, 0, 0), ack(1, 0, 0, 1, ms), read(1, 0, 0, 1)},
			map[string]int64{"acked": 3, "read": 3}, Pass},
		{"indeterminate", true, true, Options{}, with(send(0, 0, 0), fail(0, 0, ledger.OutcomeUnknown), read(0, 0, 0, 0)),
			map[string]int64{"acked": 1, "failed": 1, "read": 2, "indeterminate": 1}, Pass},
		{"not written", true, true, Options{}, with(send(0, 0, 0), fail(0, 0, ledger.OutcomeRejected)),
			map[string]int64{"acked": 1, "failed": 1, "read": 1, "not_written": 1}, Pass},
		{"no outcome recorded", false, true, Options{}, with(send(0, 0, 0), read(0, 0, 0, 0)),
			map[string]int64{"acked": 1, "failed": 1, "read": 2, "indeterminate": 1}, Pass},
		// A run whose every write was refused passes no check by luck:
		// "nothing acked was lost" is vacuous.
		{"nothing acked", true, true, Options{}, []ev{send(0, 0, 0), fail(0, 0, ledger.OutcomeRejected), send(0, 1, 0), fail(0, 1, ledger.OutcomeRejected)},
			map[string]int64{"failed": 2, "not_written": 2}, Fail},
		{"incomplete read-back", true, false, Options{}, okPair,
			map[string]int64{"acked": 1, "read": 1}, Incomplete},
		{"incomplete read-back, loss not proven", true, false, Options{}, []ev{send(0, 0, 0), ack(0, 0, 0, 0, ms)},
			map[string]int64{"acked": 1, "unread": 1}, Incomplete},
		{"nothing sent", true, true, Options{}, nil, map[string]int64{}, Fail},
		{"ack position mismatch is counted, not failed", true, true, Options{}, []ev{send(0, 0, 0), ack(0, 0, 0, 7, ms), read(0, 0, 0, 8)},
			map[string]int64{"acked": 1, "read": 1, "mismatch": 1}, Pass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := judge(t, tc.clean, tc.complete, tc.opts, tc.evs...)
			got := map[string]int64{
				"acked": r.Acked, "failed": r.Failed, "read": r.Read, "lost": r.Lost, "corrupt": r.Corrupt,
				"phantom": r.Phantom, "duplicates": r.Duplicates, "reordered": r.Reordered,
				"indeterminate": r.Indeterminate, "not_written": r.NotWritten, "unrecorded": r.Unrecorded,
				"mismatch": r.AckPositionMismatch, "unread": r.Unread,
			}
			for k, v := range got {
				if v != tc.want[k] {
					t.Errorf("%s = %d, want %d", k, v, tc.want[k])
				}
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (%v)", r.Verdict, tc.verdict, r.Reasons)
			}
			if tc.verdict == Fail && len(r.Reasons) == 0 {
				t.Error("a failing verdict without a reason")
			}
			if len(r.Failures) != len(r.Reasons) {
				t.Errorf("%d failures for %d reasons", len(r.Failures), len(r.Reasons))
			}
			for i, f := range r.Failures {
				if f.Check == "" || f.Message != r.Reasons[i] {
					t.Errorf("failure %d: %+v for reason %q", i, f, r.Reasons[i])
				}
			}
		})
	}
}

func TestLongestNoAck(t *testing.T) {
	ms := time.Millisecond
	// Acks at 0-1 s every 10 ms, none from 1 s to 4.5 s, then again.
	var evs []ev
	seq := uint64(0)
	for at := time.Duration(0); at < 10*time.Second; at += 10 * ms {
		if at > time.Second && at < 4500*ms {
			continue
		}
		evs = append(evs, send(0, seq, at), ack(0, seq, 0, int64(seq), ms), read(0, seq, 0, int64(seq)))
		seq++
	}
	r := judge(t, true, true, Options{Window: 10 * time.Second}, evs...)
	// Last ack before the gap in the 1001 ms bucket (sent at 1000 ms, 1 ms
	// latency), the next in the 4501 ms bucket: 3499 empty buckets.
	if r.LongestNoAckMs != 3499 {
		t.Fatalf("longest no-ack %.0f ms, want 3499", r.LongestNoAckMs)
	}
	if r.LongestNoAckAt != 1.002 {
		t.Fatalf("gap starts at %.3f s, want 1.002", r.LongestNoAckAt)
	}
	if len(r.Windows) != 1 || r.Windows[0].Acked != int64(len(evs)/3) {
		t.Fatalf("windows %+v", r.Windows)
	}
}

func TestLongestGapBits(t *testing.T) {
	tests := []struct {
		name        string
		bits        []int64
		n           int64
		wantLen, at int64
	}{
		{"empty", nil, 100, 100, 0},
		{"start", []int64{50}, 100, 50, 0},
		{"end", []int64{0}, 200, 199, 1},
		{"middle across words", []int64{0, 10, 150, 199}, 200, 139, 11},
		{"dense", []int64{0, 1, 2, 3}, 4, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl []uint64
			for _, b := range tc.bits {
				for int64(len(tl))*64 <= b {
					tl = append(tl, 0)
				}
				tl[b/64] |= 1 << (b % 64)
			}
			l, at := longestGap(tl, tc.n)
			if l != tc.wantLen || (l > 0 && at != tc.at) {
				t.Fatalf("longestGap = %d at %d, want %d at %d", l, at, tc.wantLen, tc.at)
			}
		})
	}
}

func TestUnexpectedDeathFailsVerdict(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(ledger.Send, ledger.Event{Seq: 0, Time: t0.UnixNano()})
	l.Record(ledger.Outcome, ledger.Event{Seq: 0, Status: ledger.OutcomeAcked, Time: int64(time.Millisecond)})
	l.Record(ledger.Read, ledger.Event{Seq: 0, Status: uint8(message.Valid)})
	l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(time.Second), Clean: true})
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	check := func() *Result {
		res, err := Check(context.Background(), l, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := check(); r.Verdict != Pass {
		t.Fatalf("before: %s %v", r.Verdict, r.Reasons)
	}
	l.PutMeta(faults.MetaKey, []faults.Record{{Action: "kill", Result: "applied", Node: 1, At: t0},
		{Action: "unexpected-death", Result: "observed", Node: 3, At: t0.Add(500 * time.Millisecond)}})
	r := check()
	if r.Verdict != Fail || len(r.Reasons) != 1 || r.Reasons[0] != "node 3 died at 0.5s and no fault killed it" {
		t.Fatalf("after: %s %v", r.Verdict, r.Reasons)
	}
	if r.Faults[0].KillProof == nil || r.Faults[0].KillProof.Restarts != 0 {
		t.Fatalf("kill without restart: proof %+v", r.Faults[0].KillProof)
	}
}

// Deadlines fire when missed, stay quiet when met, and a recovery that was
// never observed counts as missed.
func TestDeadlines(t *testing.T) {
	ms := time.Millisecond
	var evs []ev
	seq := uint64(0)
	for at := time.Duration(0); at < 10*time.Second; at += 10 * ms {
		if at > time.Second && at < 4500*ms { // a 3.5 s stall
			continue
		}
		evs = append(evs, send(0, seq, at), ack(0, seq, 0, int64(seq), ms), read(0, seq, 0, int64(seq)))
		seq++
	}
	kill := faults.Record{Action: "kill", Result: "applied", Node: 2, At: t0.Add(time.Second),
		ReadyAt: t0.Add(3 * time.Second)} // ready after 2 s; in sync never observed
	tests := []struct {
		name    string
		opts    Options
		reasons []string
	}{
		{"none set", Options{}, nil},
		{"all met", Options{MaxNoAck: 5 * time.Second, MaxReady: 3 * time.Second}, nil},
		{"no-ack missed", Options{MaxNoAck: 2 * time.Second}, []string{"deadline: 3499 ms without acks exceeds --max-no-ack 2s"}},
		{"ready missed", Options{MaxReady: time.Second}, []string{"deadline: node 2 ready 2000 ms after the kill at 1.0s, over --max-ready 1s"}},
		{"in sync never observed", Options{MaxInSync: time.Minute}, []string{"deadline: replicas in sync never after the kill at 1.0s, over --max-in-sync 1m0s"}},
	}
	l := ledgerWith(t, evs, []faults.Record{kill})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(context.Background(), l, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(r.Reasons, "|") != strings.Join(tc.reasons, "|") {
				t.Fatalf("reasons %q, want %q", r.Reasons, tc.reasons)
			}
			if (len(tc.reasons) > 0) != (r.Verdict == Fail) {
				t.Fatalf("verdict %s with reasons %q", r.Verdict, r.Reasons)
			}
		})
	}
}

// First ack after a fault counts only messages intended at or after it:
// messages in flight at the fault and acked just after it (as an acks=all
// leader answers what it had before it stalls) must not make a 3 s outage
// read as 1 ms. The stall overlapping the fault is measured from acks.
func TestFirstAckAfterFault(t *testing.T) {
	ms := time.Millisecond
	fault := 2 * time.Second
	var evs []ev
	seq := uint64(0)
	for at := time.Duration(0); at < 10*time.Second; at += 10 * ms {
		lat := ms
		switch {
		case at >= fault-50*ms && at < fault:
			lat = fault + ms - at // in flight at the fault: acked 1 ms after it
		case at >= fault && at < fault+3*time.Second:
			lat = fault + 3*time.Second - at // stalled until 5 s
		}
		evs = append(evs, send(0, seq, at), ack(0, seq, 0, int64(seq), lat), read(0, seq, 0, int64(seq)))
		seq++
	}
	l := ledgerWith(t, evs, []faults.Record{{Action: "kill", Result: "applied", Node: 2, At: t0.Add(fault)}})
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Faults[0]
	// The first message sent at the fault was acked at 5 s: 3000 ms.
	if f.SlowestFirstAckMs != 3000 || f.FirstAckMs[0] != 3000 {
		t.Fatalf("first ack %v, slowest %.0f ms; want 3000 (in-flight acks must not count)", f.FirstAckMs, f.SlowestFirstAckMs)
	}
	// Acks stopped after 2.001 s (the in-flight ones) until 5 s.
	if f.StallMs[0] < 2980 || f.StallMs[0] > 3000 || f.LongestStallMs != f.StallMs[0] {
		t.Fatalf("stall %v, longest %.0f ms; want about 2990", f.StallMs, f.LongestStallMs)
	}
	if f.SlowestFirstAckMs < 0.8*f.LongestStallMs {
		t.Fatalf("first ack %.0f ms is shorter than 0.8 of the stall %.0f ms", f.SlowestFirstAckMs, f.LongestStallMs)
	}
}

// A partition that never stopped acking has no stall, and its first ack
// comes with the first message sent after the fault.
func TestFirstAckNoStall(t *testing.T) {
	ms := time.Millisecond
	var evs []ev
	for i := uint64(0); i < 1000; i++ {
		evs = append(evs, send(0, i, time.Duration(i)*10*ms), ack(0, i, 0, int64(i), 2*ms), read(0, i, 0, int64(i)))
	}
	l := ledgerWith(t, evs, []faults.Record{{Action: "pause", Result: "applied", Node: 2, At: t0.Add(2005 * ms)}})
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Faults[0]; f.FirstAckMs[0] != 7 || f.LongestStallMs != 0 {
		t.Fatalf("first ack %v (want 7 ms: sent at 2010, acked 2 ms later), stall %.0f ms (want 0)", f.FirstAckMs, f.LongestStallMs)
	}
}

func TestWindowFor(t *testing.T) {
	for _, c := range []struct{ load, want time.Duration }{
		{time.Second, 100 * time.Millisecond},
		{20 * time.Second, 500 * time.Millisecond},
		{60 * time.Second, 2 * time.Second},
		{5 * time.Minute, 10 * time.Second},
		{time.Hour, 2 * time.Minute},
		{24 * time.Hour, 5 * time.Minute},
	} {
		if got := WindowFor(c.load); got != c.want {
			t.Errorf("WindowFor(%s) = %s, want %s", c.load, got, c.want)
		}
	}
}

// ledgerWith is a ledger of a clean 10 s run on one partition holding evs
// and the fault records recs, read back completely.
func ledgerWith(t *testing.T, evs []ev, recs []faults.Record) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, e := range evs {
		l.Record(e.kind, e.e)
	}
	l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * time.Second), Clean: true,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})})
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	l.PutMeta(faults.MetaKey, recs)
	return l
}

// A read-back that stopped on partition 1 only: a message acked on
// partition 0 (read to its end) and never read is lost, one acked on
// partition 1 is only unread, never counted lost. A report from before
// Unread was kept cannot tell them apart: nothing is shown lost.
func TestLossInPartitionsReadToTheirEnd(t *testing.T) {
	ms := time.Millisecond
	evs := []ev{
		send(0, 0, 0), ack(0, 0, 0, 0, ms), read(0, 0, 0, 0),
		send(0, 1, 0), ack(0, 1, 0, 1, ms), // lost on partition 0
		send(0, 2, 0), ack(0, 2, 1, 0, ms), // not read on partition 1
	}
	tests := []struct {
		name          string
		unread        []int32
		verdict       string
		lost, notRead int64
	}{
		{"partition 1 unread", []int32{1}, Fail, 1, 1},
		{"every partition unread", []int32{0, 1}, Incomplete, 0, 2},
		{"report without Unread", nil, Incomplete, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ledgerWith(t, evs, nil)
			l.PutMeta(MetaReadBack, ReadBackReport{Complete: false, Unread: tc.unread, Error: "fetch refused"})
			r, err := Check(context.Background(), l, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.verdict || r.Lost != tc.lost || r.Unread != tc.notRead {
				t.Fatalf("verdict %s, lost %d, unread %d; want %s with %d lost, %d unread (%v)", r.Verdict, r.Lost, r.Unread, tc.verdict, tc.lost, tc.notRead, r.Reasons)
			}
		})
	}
}
