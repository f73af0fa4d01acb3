package verifier

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
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

// A coordinator kill's stall carries the brokers' account of the group's
// takeover (the fault's Oracle.Group) beside it, and says when the group
// seems to have moved on before the log says it had a coordinator.
func TestGroupStallBesideTheCoordinatorsLog(t *testing.T) {
	start := time.Unix(1000, 0)
	kill := start.Add(3 * time.Second)
	for _, tc := range []struct {
		name     string
		loadedAt time.Duration // after the kill; 0: the logs do not say
		wantMs   float64
		disagree bool
	}{
		{"logs silent", 0, 0, false},
		{"loaded before the first progress", 2500 * time.Millisecond, 2500, false},
		{"loaded within the tolerance after it", 6400 * time.Millisecond, 6400, false},
		{"progress long before the load", 7 * time.Second, 7000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &groupJudge{res: &GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}}, loadStart: start.UnixNano(), commits: map[int32][]commitRec{
				0: {{at: start.Add(time.Second).UnixNano(), offset: 10}, {at: kill.Add(6 * time.Second).UnixNano(), offset: 20}},
			}}
			rec := faults.Record{Action: faults.Kill, Target: "coordinator:g", Result: faults.Applied, At: kill, Node: 1,
				Oracle: &drivers.LogAccount{Source: "Kafka's logs (nodes [1 2 3])"}}
			if tc.loadedAt > 0 {
				rec.Oracle.Group = &drivers.LogEvent{At: kill.Add(tc.loadedAt), What: "node 3 loaded group g from __consumer_offsets"}
			}
			g.recs = []faults.Record{rec}
			g.stalls(&Result{}, ledger.RunInfo{LoadStart: start, LoadEnd: start.Add(12 * time.Second)})
			if len(g.res.Stalls) != 1 {
				t.Fatalf("stalls %+v", g.res.Stalls)
			}
			s := g.res.Stalls[0]
			if s.UntilProgressMs != 6000 {
				t.Fatalf("first progress %.0f ms after the kill, want 6000", s.UntilProgressMs)
			}
			res := &Result{Group: g.res}
			said := ""
			for _, f := range ruleGroupProgress(res, Options{}) {
				said += f.message
			}
			if tc.loadedAt == 0 {
				if s.CoordinatorMs != nil || s.Coordinator != "" || strings.Contains(said, "loaded") {
					t.Fatalf("an account from silent logs: %+v; %q", s, said)
				}
				return
			}
			if s.CoordinatorMs == nil || *s.CoordinatorMs != tc.wantMs || !strings.Contains(said, "Kafka's logs (nodes [1 2 3]): node 3 loaded group g from __consumer_offsets at ") {
				t.Fatalf("stall %+v; said %q", s, said)
			}
			if got := strings.Contains(said, "disagrees"); got != tc.disagree {
				t.Fatalf("disagreement said: %v, want %v: %q", got, tc.disagree, said)
			}
		})
	}
}
