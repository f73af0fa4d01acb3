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
)

// The per-second and per-window figures: a send counts in the second and
// window of its intended time, an ack in the second it came; a failed send
// counts as failed where it was sent, a lost one as lost in its window.
func TestTimelineCounts(t *testing.T) {
	ms := time.Millisecond
	r := judge(t, true, true, Options{Window: time.Second},
		send(0, 0, 200*ms), ack(0, 0, 0, 0, 100*ms), read(0, 0, 0, 0), // acked at 0.3 s
		send(0, 1, 500*ms), ack(0, 1, 0, 1, 700*ms), read(0, 1, 0, 1), // acked at 1.2 s
		send(0, 2, 1500*ms), fail(0, 2, ledger.OutcomeRejected),
		send(0, 3, 2500*ms), ack(0, 3, 0, 3, 10*ms), // acked at 2.51 s, lost
	)
	var secs []string
	for _, s := range r.Timeline {
		secs = append(secs, fmt.Sprintf("%d:%d/%d/%d", s.T, s.Sent, s.Acked, s.Failed))
	}
	if got, want := fmt.Sprint(secs), "[0:2/1/0 1:1/1/1 2:1/1/0]"; got != want {
		t.Errorf("per second (t:sent/acked/failed) %s, want %s", got, want)
	}
	var wins []string
	for _, w := range r.Windows {
		wins = append(wins, fmt.Sprintf("%.0f:%d/%d/%d/%d/%d", w.StartS, w.Sent, w.Acked, w.Failed, w.Lost, w.Publish.Count))
	}
	if got, want := fmt.Sprint(wins), "[0:2/2/0/0/2 1:1/0/1/0/0 2:1/1/0/1/1]"; got != want {
		t.Errorf("windows (start:sent/acked/failed/lost/latencies) %s, want %s", got, want)
	}
	if w := r.Windows[0].Publish; w.Max < 699 || w.Max > 701 || w.P50 < 99 || w.P50 > 101 {
		t.Errorf("window 0 publish latency %+v, want 100 and 700 ms", w)
	}
	if r.Publish.Count != 3 || r.Publish.Max < 699 || r.Publish.Max > 701 {
		t.Errorf("publish latency %+v", r.Publish)
	}
	if len(r.Hist.Publish) != 3 || r.Hist.Window != time.Second || r.Hist.PublishAll.TotalCount() != 3 {
		t.Errorf("histograms: %d windows of %s, %d in all", len(r.Hist.Publish), r.Hist.Window, r.Hist.PublishAll.TotalCount())
	}
	// Acks at 0.3, 1.2 and 2.51 s of a 10 s load: the longest stretch
	// without one runs from 2.511 s to the end.
	if r.LongestNoAckMs != 7489 || r.LongestNoAckAt != 2.511 {
		t.Errorf("longest no-ack %.0f ms at %.3f s, want 7489 at 2.511", r.LongestNoAckMs, r.LongestNoAckAt)
	}
}

// A run that died has no load end: the longest stretch without acks is
// judged up to its last ack (not to the end of time, which would fail
// every such run on --max-no-ack), and the latency window defaults to
// 10 s. A clean 10 s run gets WindowFor's 200 ms.
func TestTimelineOfARunThatDied(t *testing.T) {
	ms := time.Millisecond
	evs := []ev{
		send(0, 0, 200*ms), ack(0, 0, 0, 0, 100*ms), read(0, 0, 0, 0),
		send(0, 1, 500*ms), ack(0, 1, 0, 1, 700*ms), read(0, 1, 0, 1),
		send(0, 2, 2500*ms), ack(0, 2, 0, 2, 10*ms), read(0, 2, 0, 2),
	}
	died := judge(t, false, true, Options{}, evs...)
	if died.LongestNoAckMs != 1309 || died.LongestNoAckAt != 1.201 {
		t.Errorf("died: longest no-ack %.0f ms at %.3f s, want 1309 at 1.201", died.LongestNoAckMs, died.LongestNoAckAt)
	}
	if died.Hist.Window != 10*time.Second || len(died.Windows) != 1 {
		t.Errorf("died: window %s, %d windows; want 10s, 1", died.Hist.Window, len(died.Windows))
	}
	clean := judge(t, true, true, Options{}, evs...)
	if clean.Hist.Window != 200*time.Millisecond || len(clean.Windows) != 13 {
		t.Errorf("clean: window %s, %d windows; want 200ms, 13", clean.Hist.Window, len(clean.Windows))
	}
	// Nothing acked in a run that died: no stretch to judge.
	none := judge(t, false, true, Options{}, send(0, 0, 0), fail(0, 0, ledger.OutcomeUnknown))
	if none.LongestNoAckMs != 0 {
		t.Errorf("died, nothing acked: longest no-ack %.0f ms, want 0", none.LongestNoAckMs)
	}
}

// Sends intended before the load started (none should be) are counted
// in no second and no window, and do not make the timelines grow.
func TestTimelineIgnoresSendsBeforeTheLoad(t *testing.T) {
	ms := time.Millisecond
	r := judge(t, true, true, Options{Window: time.Second},
		send(0, 0, -1500*ms), ack(0, 0, 0, 0, 5*ms), read(0, 0, 0, 0),
		send(0, 1, 100*ms), ack(0, 1, 0, 1, 5*ms), read(0, 1, 0, 1))
	if len(r.Windows) != 1 || r.Windows[0].Sent != 1 || len(r.Timeline) != 1 || r.Timeline[0].Sent != 1 {
		t.Fatalf("windows %+v, timeline %+v: a send before the load was placed in them", r.Windows, r.Timeline)
	}
	if r.Publish.Count != 2 {
		t.Fatalf("publish latency count %d, want 2: every ack has a latency", r.Publish.Count)
	}
}

// Per fault, per partition: the first ack of a message intended at or
// after the fault is the earliest such ack, whatever order the ledger
// holds them in; a partition that never acked again reads -1 and makes
// the slowest -1; faults that take no node away, or did not apply, get
// no figures.
func TestFirstAckPerPartition(t *testing.T) {
	ms := time.Millisecond
	fault := 2 * time.Second
	var evs []ev
	seq := uint64(0)
	add := func(part int32, at, lat time.Duration) {
		evs = append(evs, send(0, seq, at), ack(0, seq, part, int64(seq), lat), read(0, seq, part, int64(seq)))
		seq++
	}
	for at := time.Duration(0); at < fault; at += 100 * ms {
		add(0, at, ms)
		add(1, at, ms)
	}
	add(0, fault+100*ms, 300*ms) // acked at 2.4 s
	add(0, fault, 120*ms)        // intended at the fault itself: counts; acked at 2.12 s, the earliest
	add(0, fault+200*ms, ms)     // acked at 2.201 s
	// Partition 1 never acks again. A message in flight at the fault,
	// acked after it, does not count.
	add(1, fault-ms, 300*ms)
	l := ledgerWith(t, evs, []faults.Record{
		{Action: faults.Kill, Result: faults.Applied, Node: 1, At: t0.Add(fault)},
		{Action: faults.FsyncOff, Result: faults.Applied, At: t0.Add(fault)},
		{Action: faults.Kill, Result: faults.Skipped, Node: 2, At: t0.Add(fault)},
	})
	run := ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * time.Second), Clean: true,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0, 1: 0})}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Faults[0]
	if f.FirstAckMs[0] != 120 || f.FirstAckMs[1] != -1 || f.SlowestFirstAckMs != -1 {
		t.Fatalf("first ack %v, slowest %.0f; want 120 on 0, -1 on 1 and slowest -1", f.FirstAckMs, f.SlowestFirstAckMs)
	}
	// Partition 1's last ack is at 2.299 s: from there to the end of the
	// load, 7.70 s in 10 ms buckets.
	if f.StallMs[1] < 7690 || f.StallMs[1] > 7710 || f.LongestStallMs != f.StallMs[1] {
		t.Fatalf("stall %v, longest %.0f; want about 7700 on partition 1", f.StallMs, f.LongestStallMs)
	}
	if f.AtS != 2 || f.ReadyMs != -1 || f.InSyncMs != -1 {
		t.Fatalf("at %.1f s, ready %.0f, in sync %.0f; want 2, -1, -1", f.AtS, f.ReadyMs, f.InSyncMs)
	}
	if f.KillProof == nil {
		t.Fatal("an applied kill without a kill proof")
	}
	for _, other := range r.Faults[1:] {
		if other.KillProof != nil {
			t.Fatalf("%s (%s) got a kill proof", other.Action, other.Result)
		}
		if other.FirstAckMs != nil || other.StallMs != nil || other.SlowestFirstAckMs != -1 {
			t.Fatalf("%s (%s) got first-ack figures %v %v %.0f", other.Action, other.Result, other.FirstAckMs, other.StallMs, other.SlowestFirstAckMs)
		}
	}
	if len(r.AckMeanings) != 0 {
		t.Fatalf("ack meanings %+v without any AckMeaning set", r.AckMeanings)
	}
}

// The slowest first ack is the largest over partitions that all acked.
func TestSlowestFirstAck(t *testing.T) {
	ms := time.Millisecond
	fault := time.Second
	var evs []ev
	seq := uint64(0)
	add := func(part int32, at, lat time.Duration) {
		evs = append(evs, send(0, seq, at), ack(0, seq, part, int64(seq), lat), read(0, seq, part, int64(seq)))
		seq++
	}
	add(0, fault, 40*ms)
	add(1, fault, 90*ms)
	add(2, fault+10*ms, 20*ms)
	l := ledgerWith(t, evs, []faults.Record{{Action: faults.Pause, Result: faults.Applied, Node: 1, At: t0.Add(fault),
		ReadyAt: t0.Add(fault + 250*ms), InSyncAt: t0.Add(fault + 2*time.Second)}})
	run := ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * time.Second), Clean: true,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0, 1: 0, 2: 0})}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Faults[0]
	if f.SlowestFirstAckMs != 90 || f.FirstAckMs[2] != 30 || f.ReadyMs != 250 || f.InSyncMs != 2000 {
		t.Fatalf("first acks %v, slowest %.0f, ready %.0f, in sync %.0f; want slowest 90, 30 on 2, 250, 2000",
			f.FirstAckMs, f.SlowestFirstAckMs, f.ReadyMs, f.InSyncMs)
	}
}

// A kill's proof: the first applied restart of the same node after it
// gives the new PID and inode; restarts of other nodes and failed ones do
// not count; survivors are unchanged only when every survivor's PID is
// the same and known.
func TestKillProofFromRecords(t *testing.T) {
	kill := faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 2, PID: 100, Inode: 7,
		Survivors: map[int32]int{1: 10, 3: 30}}
	restart := func(node int32, res faults.Result, pid int, inode uint64, surv map[int32]int) faults.Record {
		return faults.Record{Action: faults.Restart, Result: res, Node: node, PID: pid, Inode: inode, Survivors: surv}
	}
	same := map[int32]int{1: 10, 3: 30}
	tests := []struct {
		name string
		recs []faults.Record
		want string
	}{
		{"restarted on the same data",
			[]faults.Record{kill, restart(3, faults.Applied, 300, 9, same), restart(2, faults.Failed, 0, 0, nil),
				restart(2, faults.Applied, 200, 7, same), restart(2, faults.Applied, 400, 7, same)},
			"{OldPID:100 NewPID:200 InodeBefore:7 InodeAfter:7 SameDataDir:true SurvivorsUnchanged:true Restarts:2}"},
		{"a survivor restarted", []faults.Record{kill, restart(2, faults.Applied, 200, 7, map[int32]int{1: 11, 3: 30})},
			"{OldPID:100 NewPID:200 InodeBefore:7 InodeAfter:7 SameDataDir:true SurvivorsUnchanged:false Restarts:1}"},
		{"another data dir", []faults.Record{kill, restart(2, faults.Applied, 200, 8, same)},
			"{OldPID:100 NewPID:200 InodeBefore:7 InodeAfter:8 SameDataDir:false SurvivorsUnchanged:true Restarts:1}"},
		{"no restart", []faults.Record{kill},
			"{OldPID:100 NewPID:0 InodeBefore:7 InodeAfter:0 SameDataDir:false SurvivorsUnchanged:false Restarts:0}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// plainProof drops KillProof's String, to print every field.
			type plainProof KillProof
			if got := fmt.Sprintf("%+v", plainProof(*killProof(tc.recs, 0))); got != tc.want {
				t.Fatalf("proof %s\nwant  %s", got, tc.want)
			}
		})
	}
	// Unknown inodes (0) are not the same data dir; a survivor PID of 0
	// (unknown) proves nothing; no survivors at all prove nothing.
	for _, tc := range []struct {
		name string
		kill faults.Record
		rs   faults.Record
	}{
		{"inodes unknown", faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 2, Survivors: same}, restart(2, faults.Applied, 5, 0, same)},
		{"survivor PID unknown", faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 2, Inode: 1, Survivors: map[int32]int{1: 0}}, restart(2, faults.Applied, 5, 1, map[int32]int{1: 0})},
		{"no survivors", faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 2, Inode: 1}, restart(2, faults.Applied, 5, 1, nil)},
	} {
		kp := killProof([]faults.Record{tc.kill, tc.rs}, 0)
		wantSame := tc.name != "inodes unknown"
		if kp.SameDataDir != wantSame || (tc.name != "inodes unknown" && kp.SurvivorsUnchanged) {
			t.Errorf("%s: %+v", tc.name, *kp)
		}
	}
}

// Check keeps up to MaxSamples samples per failing class, 100 when not
// set, and at least the one of a single loss.
func TestCheckSamples(t *testing.T) {
	ms := time.Millisecond
	var evs []ev
	for i := uint64(0); i < 3; i++ {
		evs = append(evs, send(0, i, 0), ack(0, i, 0, int64(i), ms))
	}
	for _, tc := range []struct {
		max, want int
	}{{0, 3}, {-1, 3}, {1, 1}, {2, 2}} {
		r := judge(t, true, true, Options{MaxSamples: tc.max}, evs...)
		if len(r.Samples["lost"]) != tc.want || r.Lost != 3 {
			t.Errorf("MaxSamples %d: %d samples of %d lost, want %d", tc.max, len(r.Samples["lost"]), r.Lost, tc.want)
		}
	}
}

// The timelines' caps: a second exactly 24 h after the load start is
// still counted; an ack exactly 24 h in is past the no-ack timeline's cap
// (maxTimeline) and marks neither it nor the partition's, so in a 25 h
// load the stretch without acks runs from the first ack to the end.
func TestTimelineCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("walks 90 million 1 ms buckets (about a second)")
	}
	ms := time.Millisecond
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range []ev{
		send(0, 0, 0), ack(0, 0, 0, 0, 0), read(0, 0, 0, 0),
		send(0, 1, maxTimeline), ack(0, 1, 0, 1, 0), read(0, 1, 0, 1),
	} {
		l.Record(e.kind, e.e)
	}
	run := ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(maxTimeline + time.Hour), Clean: true,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}
	l.PutMeta(ledger.MetaRun, run)
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	last := len(r.Timeline) - 1
	if last != int(maxTimeline/time.Second) || r.Timeline[last].Sent != 1 || r.Timeline[last].Acked != 1 {
		t.Fatalf("timeline of %d seconds, last %+v; want second 86400 with the send and its ack", len(r.Timeline), r.Timeline[last])
	}
	if want := float64((maxTimeline+time.Hour)/ms - 1); r.LongestNoAckMs != want || r.LongestNoAckAt != 0.001 {
		t.Fatalf("longest no-ack %.0f ms at %.3f s, want %.0f at 0.001", r.LongestNoAckMs, r.LongestNoAckAt, want)
	}
	if g := r.PartitionGaps[0]; len(g) != 1 || g[0].FromS != 0.01 || g[0].ToS != (maxTimeline+time.Hour).Seconds() {
		t.Fatalf("partition gaps %+v, want one from 0.01 s to the end", g)
	}
}

// A live read with a latency of 0 is a latency (-1 is none).
func TestE2EZero(t *testing.T) {
	r := judge(t, true, true, Options{}, send(0, 0, 0), ack(0, 0, 0, 0, time.Millisecond), read(0, 0, 0, 0),
		ev{ledger.LiveRead, ledger.Event{Producer: 0, Seq: 0, Time: 0}})
	if r.E2E.Count != 1 {
		t.Fatalf("e2e %+v, want one value", r.E2E)
	}
}

// longestGap: of two equally long stretches, the first is reported,
// whether the second ends inside the timeline or at its end.
func TestLongestGapTies(t *testing.T) {
	for _, tc := range []struct {
		name string
		bits uint64
		n    int64
	}{
		{"second at the end", 1 << 5, 11},
		{"second inside", 1<<5 | 1<<11, 12},
	} {
		if l, at := longestGap([]uint64{tc.bits}, tc.n); l != 5 || at != 0 {
			t.Errorf("%s: longestGap = %d at %d, want 5 at 0", tc.name, l, at)
		}
	}
}

// Check refuses a ledger it cannot judge, with what to do, and stops on
// a cancelled context.
func TestCheckRefuses(t *testing.T) {
	open := func() *ledger.Ledger {
		l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	l := open()
	if _, err := Check(context.Background(), l, Options{}); err == nil || !strings.Contains(err.Error(), "ackcheck run directory") {
		t.Fatalf("no run description: %v", err)
	}
	l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, Clean: true})
	if _, err := Check(context.Background(), l, Options{}); err == nil || !strings.Contains(err.Error(), "run `ackcheck verify`") {
		t.Fatalf("not read back: %v", err)
	}
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	l.Record(ledger.Send, ledger.Event{Time: t0.UnixNano()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, l, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if r, err := Check(context.Background(), l, Options{}); err != nil || r.Sent != 1 {
		t.Fatalf("after: %v, %+v", err, r)
	}
}

// msText: a negative figure was never observed; zero is a figure.
func TestMsText(t *testing.T) {
	for v, want := range map[float64]string{-1: "never", 0: "0 ms", 1500.4: "1500 ms"} {
		if got := msText(v); got != want {
			t.Errorf("msText(%v) = %q, want %q", v, got, want)
		}
	}
}

// longestGap's fast path skips whole empty words only from a word's first
// bit: a set bit at the start of the next word must still end the
// stretch.
func TestLongestGapWordAligned(t *testing.T) {
	if l, at := longestGap([]uint64{0, 1}, 200); l != 135 || at != 65 {
		t.Fatalf("longestGap = %d at %d, want 135 at 65", l, at)
	}
}
