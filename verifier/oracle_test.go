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
		{"ready too early", 25600, 27100, account(26214, 27000), 1, "disagree by -614ms", ""},
		{"in sync too late", 26800, 29500, account(26214, 27000), 1, "every replica in sync 29500 ms", ""},
		{"never ready by ackcheck", -1, -1, account(26214, 27000), 0, "", "node ready again: not observed (Kafka's logs (nodes [1 2 3]): the controller unfenced broker 2 at 26214 ms)"},
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
