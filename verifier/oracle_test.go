package verifier

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
)

// Each recovery figure is printed beside the brokers' own account of it,
// and a disagreement beyond the tolerances (500 ms early, 2 s late) is a
// warning, never a failure: quiet within them, firing outside, on each
// side and for each figure.
func TestOracleBesideTheFigures(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	account := func(readyMs, inSyncMs int) *drivers.LogAccount {
		return &drivers.LogAccount{Source: "Kafka's logs (nodes [1 2 3])",
			Ready:  &drivers.LogEvent{At: at.Add(time.Duration(readyMs) * time.Millisecond), What: "the controller unfenced broker 2"},
			InSync: &drivers.LogEvent{At: at.Add(time.Duration(inSyncMs) * time.Millisecond), What: "broker 2 back in the ISR"}}
	}
	// bounded is an account whose lines only bound the events (NATS logs
	// failed health checks, never the one that passes).
	bounded := func(b drivers.Bound, readyMs, inSyncMs int) *drivers.LogAccount {
		return &drivers.LogAccount{Source: "nats-server's logs (nodes [3])",
			Ready:  &drivers.LogEvent{At: at.Add(time.Duration(readyMs) * time.Millisecond), What: "node 3 (PID 9) last failed /healthz", Bound: b},
			InSync: &drivers.LogEvent{At: at.Add(time.Duration(inSyncMs) * time.Millisecond), What: "node 3 (PID 9) started", Bound: b}}
	}
	for _, tc := range []struct {
		name            string
		ready, inSync   float64 // ackcheck's
		oracle          *drivers.LogAccount
		warnings        int
		warnsOf, prints string
	}{
		{"agree", 26800, 27100, account(26214, 27000), 0, "", "node ready again: 26800 ms (Kafka's logs (nodes [1 2 3]): the controller unfenced broker 2 at 26214 ms)"},
		{"at the late edge", 28214, 29000, account(26214, 27000), 0, "", "broker 2 back in the ISR at 27000 ms"},
		{"ready too late", 28300, 27100, account(26214, 27000), 1, "the node ready 28300 ms after it", ""},
		{"ready too early", 25600, 27100, account(26214, 27000), 1, "ackcheck's figure is 614ms before the log's line, which says when it came", ""},
		{"at the early edge", 25714, 27100, account(26214, 27000), 0, "", "the controller unfenced broker 2 at 26214 ms"},
		{"ready at 0 ms, a figure like any", 0, 27100, account(26214, 27000), 1, "ackcheck's figure is 26.214s before the log's line", ""},
		{"in sync too late", 26800, 29500, account(26214, 27000), 1, "every replica in sync 29500 ms", ""},
		{"never ready by ackcheck", -1, -1, account(26214, 27000), 0, "", "node ready again: not observed (Kafka's logs (nodes [1 2 3]): the controller unfenced broker 2 at 26214 ms)"},
		{"after a lower bound, however late", 60000, 90000, bounded(drivers.NotBefore, 9618, 8000), 0, "",
			"node ready again: 60000 ms (nats-server's logs (nodes [3]): no earlier than node 3 (PID 9) last failed /healthz at 9618 ms)"},
		{"before a lower bound", 8900, 9000, bounded(drivers.NotBefore, 9618, 8000), 1,
			"ackcheck's figure is 718ms before the log's line, which says it came no earlier", ""},
		{"before an upper bound, however early", 100, 200, bounded(drivers.NotAfter, 9618, 8000), 0, "", "no later than node 3 (PID 9) started at 8000 ms"},
		{"after an upper bound", 9700, 10100, bounded(drivers.NotAfter, 9618, 8000), 1,
			"every replica in sync 10100 ms after it, nats-server's logs (nodes [3]) say no later than node 3 (PID 9) started at 8000 ms: they disagree, ackcheck's figure is 2.1s after the log's line, which says it came no later", ""},
		{"no in-sync notion, said", 2100, 2100, &drivers.LogAccount{Source: "Queen's logs (queen.log)",
			Ready: &drivers.LogEvent{At: at.Add(2000 * time.Millisecond), What: "the Queen server listens again"}, NoInSync: "Queen has no replicas"}, 0, "",
			"all replicas in sync: 2100 ms (Queen's logs (queen.log): Queen has no replicas)"},
		{"no logs", 26800, 27100, nil, 0, "", "node ready again: 26800 ms   all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := faults.Record{Action: faults.Kill, Target: "most-leaders", Node: 2, At: at, Result: faults.Applied, Oracle: tc.oracle}
			rep := FaultReport{Record: rec, AtS: 10, ReadyMs: tc.ready, InSyncMs: tc.inSync, FirstAckMs: map[int32]float64{0: 1}}
			rep.oracleMs()
			res := &Result{Faults: []FaultReport{rep}, Sent: 10, Acked: 10, ReadBackComplete: true}
			applyVerdict(res, Options{})
			if len(res.Warnings) != tc.warnings || (tc.warnsOf != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.warnsOf)) {
				t.Fatalf("warnings %q, want %d saying %q", res.Warnings, tc.warnings, tc.warnsOf)
			}
			if res.Verdict != Pass {
				t.Fatalf("verdict %s %v: a disagreement with the logs is a warning, not a failure", res.Verdict, res.Reasons)
			}
			var b bytes.Buffer
			res.WriteSummary(&b)
			if !strings.Contains(b.String(), tc.prints) {
				t.Fatalf("summary lacks %q:\n%s", tc.prints, b.String())
			}
		})
	}
}
