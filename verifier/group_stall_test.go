package verifier

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// The group's time without progress after each fault: the longest
// stretch without a commit moving a partition on, until the next fault;
// and the time to its first progress, across the next fault when none
// came before it. A commit that moves nothing on is no progress.
func TestGroupStalls(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) int64 { return start.Add(time.Duration(s * float64(time.Second))).UnixNano() }
	g := &groupJudge{res: &GroupResult{}, loadStart: start.UnixNano(), commits: map[int32][]commitRec{
		0: {{at: at(1), offset: 10}, {at: at(2), offset: 20}, {at: at(7), offset: 20} /* no progress */, {at: at(9), offset: 30}, {at: at(9.5), offset: 40}},
	}}
	g.recs = []faults.Record{
		{Action: faults.Kill, Target: "coordinator:g", Result: faults.Applied, At: start.Add(3 * time.Second)},
		{Action: faults.Restart, Result: faults.Applied, At: start.Add(6 * time.Second)},
		{Action: faults.RestartConsumers, Result: faults.Skipped, At: start.Add(8 * time.Second)}, // not applied: no row
	}
	g.stalls(&Result{}, ledger.RunInfo{LoadStart: start, LoadEnd: start.Add(10 * time.Second)})
	want := []GroupStall{
		{Fault: "kill coordinator:g", AtS: 3, LongestMs: 3000, FromS: 3, UntilProgressMs: 6000},
		{Fault: "restart", AtS: 6, LongestMs: 3000, FromS: 6, UntilProgressMs: 3000},
	}
	if len(g.res.Stalls) != len(want) {
		t.Fatalf("stalls %+v, want %+v", g.res.Stalls, want)
	}
	for i, w := range want {
		if got := g.res.Stalls[i]; got != w {
			t.Errorf("stall %d: %+v, want %+v", i, got, w)
		}
	}
}
