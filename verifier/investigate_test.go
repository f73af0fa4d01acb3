package verifier

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
)

// A fault that fired more than a second after it was due is a warning in
// the verdict, and both times are printed from 100 ms of slip on; a fault
// on time, or one applied outside the schedule, says neither.
func TestSlipWarningsAndDueTimes(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name     string
		at       float64
		due      *float64
		when     string
		warnings int
	}{
		{"on time", 10.03, f(10), "10.0 s", 0},
		{"late, under a second", 28.4, f(28), "28.4 s (due 28.0 s, 0.40 s late)", 0},
		{"late over a second", 30.0, f(28), "30.0 s (due 28.0 s, 2.00 s late)", 1},
		{"outside the schedule", 0.5, nil, "0.5 s", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fr := FaultReport{Record: faults.Record{Action: faults.Kill, Target: "node:3", Node: 3, Result: faults.Applied}, AtS: tc.at, DueS: tc.due}
			if got := fr.FaultWhen(); got != tc.when {
				t.Errorf("when %q, want %q", got, tc.when)
			}
			res := &Result{Sent: 10, Acked: 10, ReadBackComplete: true, Faults: []FaultReport{fr}}
			applyVerdict(res, Options{})
			if len(res.Warnings) != tc.warnings || res.Verdict != Pass {
				t.Fatalf("warnings %v, verdict %s", res.Warnings, res.Verdict)
			}
			var sum strings.Builder
			res.WriteSummary(&sum)
			if !strings.Contains(sum.String(), "fault at "+tc.when+":") || strings.Contains(sum.String(), "warning:") != (tc.warnings > 0) {
				t.Fatalf("summary:\n%s", sum.String())
			}
		})
	}
}

// Each fault is in force from its action until its undo, and a fault
// never undone until the end.
func TestFaultSpells(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	recs := []faults.Record{
		{Action: faults.Pause, Node: 1, At: at(10), Result: faults.Applied},
		{Action: faults.Kill, Node: 3, At: at(28), Result: faults.Applied},
		{Action: faults.Resume, Node: 1, At: at(29), Result: faults.Applied},
		{Action: faults.Kill, Node: 2, At: at(30), Result: faults.Skipped},
		{Action: faults.FsyncOff, Target: "topic:t", Node: -1, At: at(31), Result: faults.Applied},
		{Action: faults.Restart, Node: 3, At: at(45), Result: faults.Applied},
		{Action: faults.Partition, Target: "most-leaders:t", Node: 2, At: at(60), Result: faults.Applied},
		{Action: faults.Loss, Target: "node:3", Node: 3, At: at(62), Result: faults.Applied},
		{Action: faults.HealNetwork, At: at(70), Result: faults.Applied},
		{Action: faults.PartitionClient, Target: "node:1", Node: 1, At: at(80), Result: faults.Applied},
	}
	spells := faultSpells(recs, start)
	tests := []struct {
		s    float64
		want string
	}{
		{5, ""},
		{12, "node 1 paused (since 10.0 s)"},
		{28.5, "node 1 paused (since 10.0 s); node 3 killed (since 28.0 s)"},
		{29.5, "node 3 killed (since 28.0 s)"},
		{40, "node 3 killed (since 28.0 s); fsync off for topic:t (since 31.0 s)"},
		{50, "fsync off for topic:t (since 31.0 s)"},
		// A network fault is in force until the heal-network removes them
		// all; one left at the end, until the end. (Losses in a partition
		// once read "acked while no fault in force".)
		{61, "fsync off for topic:t (since 31.0 s); partition most-leaders:t (since 60.0 s)"},
		{65, "fsync off for topic:t (since 31.0 s); partition most-leaders:t (since 60.0 s); loss node:3 (since 62.0 s)"},
		{75, "fsync off for topic:t (since 31.0 s)"},
		{90, "fsync off for topic:t (since 31.0 s); partition-client node:1 (since 80.0 s)"},
	}
	for _, tc := range tests {
		if got := strings.Join(inForce(spells, at(tc.s).UnixNano()), "; "); got != tc.want {
			t.Errorf("at %.1f s: in force %q, want %q", tc.s, got, tc.want)
		}
	}
}
