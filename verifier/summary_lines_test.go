package verifier

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
)

// The summary says each line a reader relies on when, and only when, its
// figure is there: the rows of what ackcheck could not account for, its
// own latencies, the errors (the five most frequent kinds, then how many
// more), each fault with what was measured around it, what an ack meant,
// the notes, an incomplete read-back, and the verdict with its reasons
// and warnings. A run with none of them says none of them.
func TestSummaryLines(t *testing.T) {
	steal := 3.5
	at := time.Unix(1000, 0)
	full := &Result{
		RunID: "r1", Driver: "kafka", Topic: "t",
		Sent: 100, Acked: 90, Unrecorded: 2, Foreign: 3, OtherRun: 4,
		PacingLag:        Latency{Count: 5, P50: 0.1, P99: 0.2, Max: 0.3},
		CallbackTime:     Latency{Count: 5, P50: 0.01, P99: 0.02, Max: 0.03},
		StealPct:         &steal,
		E2E:              Latency{Count: 5, P50: 1, P99: 2, P999: 3, Max: 4},
		Errors:           map[string]int64{"e1": 70, "e2": 60, "e3": 50, "e4": 40, "e5": 30, "e6": 20, "e7": 10},
		ReadBackComplete: false,
		ReadBackNotes:    map[int32]string{2: "ended at offset 10 of 20"},
		AckMeanings:      []Phase{{FromS: 0, Since: "start", Meaning: "fsynced on 2 of 3"}},
		Notes:            []string{"a note"},
		Verdict:          "fail",
		Reasons:          []string{"a reason"},
		Warnings:         []string{"a warning"},
		Faults: []FaultReport{
			{Record: faults.Record{Action: faults.Kill, Target: "leader:t/0", Node: 2, At: at, Result: faults.Applied,
				InSyncEvidence: "ISR of t-0 grew back to 3",
				Nodes:          []int32{2}, PIDs: map[int32]int{2: 41}, Restarted: map[int32]int{2: 42}, Lost: map[int32]string{2: "nothing"}},
				FirstAckMs: map[int32]float64{0: 700}, SlowestFirstAckMs: 700, LongestStallMs: -1, ReadyMs: 5000, InSyncMs: 9000,
				KillProof: &KillProof{OldPID: 41, NewPID: 42, Restarts: 1, SurvivorsUnchanged: true}},
			// Node 0 is a node (NATS numbers from 0), and 0 ms a figure.
			{Record: faults.Record{Action: faults.Pause, Target: "node:0", Node: 0, At: at, Result: faults.Applied},
				FirstAckMs: map[int32]float64{0: 0}, SlowestFirstAckMs: 0, LongestStallMs: 0, ReadyMs: -1, InSyncMs: -1},
			{Record: faults.Record{Action: faults.HealNetwork, Target: "cluster", Node: -1, At: at, Result: faults.Failed, Error: "a rule stayed",
				NetworkProof: &faults.NetworkProof{Net: "ackc-x", Port: 9092}}},
		},
	}
	var b strings.Builder
	full.WriteSummary(&b)
	got := b.String()
	for _, want := range []string{
		"ackcheck's own pacing lag ms (send time minus scheduled time): p50 0.100  p99 0.200  max 0.300\n",
		"ackcheck's own ack callback ms (later acks queue behind it): p50 0.010  p99 0.020  max 0.030\n",
		"the hypervisor took 3.5% of this machine's CPU time",
		"end-to-end ms:      p50 1.00  p99 2.00  p999 3.00  max 4.00\n",
		"  errors:\n          70  e1\n          60  e2\n          50  e3\n          40  e4\n          30  e5\n    ... and 2 more kinds\n",
		"fault at ", ": kill leader:t/0 -> node 2: applied\n",
		"    slowest partition's first ack of a message sent after it: 700 ms   longest partition stall over it: not observed\n",
		"    node ready again: 5000 ms", "all replicas in sync: 9000 ms",
		"    rejoin seen as: ISR of t-0 grew back to 3\n",
		"    node 2: PID 41 -> 42; lost: nothing\n",
		"    kill proof: PID 41 -> 42, data dir inode unknown, survivors unchanged: true, restarts: 1\n",
		": pause node:0 -> node 0: applied\n    slowest partition's first ack of a message sent after it: 0 ms   longest partition stall over it: 0 ms\n    node ready again: not observed",
		": heal-network cluster: failed (a rule stayed)\n",
		"    network proof: ",
		"  from 0.0s (start) an ack meant: fsynced on 2 of 3\n",
		"  note: a note\n",
		"  read-back incomplete:\n    partition 2: ended at offset 10 of 20\n",
		"verdict: FAIL\n  - a reason\n  warning: a warning\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	for _, row := range []string{`unrecorded\s+2\s+read; send not in the ledger`, `foreign\s+3\s+records in range`, `other run\s+4\s+records of another ackcheck run`} {
		if !regexp.MustCompile(`(?m)^\s+` + row).MatchString(got) {
			t.Errorf("the summary lacks a row %q:\n%s", row, got)
		}
	}
	if strings.Contains(got, "e6") || strings.Contains(got, "e7") {
		t.Errorf("the summary lists more than five kinds of error:\n%s", got)
	}
	// Exactly five kinds: all listed, no "more" line.
	five := &Result{Errors: map[string]int64{"e1": 5, "e2": 4, "e3": 3, "e4": 2, "e5": 1}, ReadBackComplete: true}
	b.Reset()
	five.WriteSummary(&b)
	if s := b.String(); !strings.Contains(s, "1  e5\n") || strings.Contains(s, "more kinds") {
		t.Errorf("five kinds of error:\n%s", s)
	}

	empty := &Result{RunID: "r2", ReadBackComplete: true, Verdict: "pass",
		Faults: []FaultReport{{Record: faults.Record{Action: faults.Pause, Target: "node:1", Node: 1, At: at, Result: faults.Applied}}}}
	b.Reset()
	empty.WriteSummary(&b)
	got = b.String()
	for _, not := range []string{"unrecorded", "foreign", "other run", "pacing lag", "callback", "hypervisor", "end-to-end", "errors:",
		"slowest partition", "node ready again", "rejoin seen as", "PID", "kill proof", "network proof", "an ack meant", "note:",
		"read-back incomplete", "  - ", "warning:"} {
		if strings.Contains(got, not) {
			t.Errorf("a run without it says %q:\n%s", not, got)
		}
	}
	if want := ": pause node:1 -> node 1: applied\nverdict: PASS\n"; !strings.Contains(got, want) {
		t.Errorf("the summary lacks %q:\n%s", want, got)
	}
}
