package verifier

import (
	"github.com/ackcheck/ackcheck/drivers"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// Issue 41, point 4: each rule of the verdict, tested alone. For every
// rule, a result that makes it fire (the outcome and check it must ask
// for) and one that keeps it quiet; and every rule of verdictRules has
// its row, so a new rule cannot come without its test.
func TestEachVerdictRuleAlone(t *testing.T) {
	clean := func() *Result {
		return &Result{Sent: 100, Acked: 100, Read: 100, ReadBackComplete: true}
	}
	with := func(f func(r *Result)) *Result { r := clean(); f(r); return r }
	deadlines := Options{MaxNoAck: time.Second, MaxReady: time.Second, MaxInSync: time.Second}
	recovered := FaultReport{Record: faults.Record{Action: faults.Kill, Result: faults.Applied, Node: 2}, FirstAckMs: map[int32]float64{0: 10}, ReadyMs: 500, InSyncMs: 700}
	tests := []struct {
		rule    string
		opts    Options
		fires   *Result
		outcome outcome
		check   string
		quiet   *Result
	}{
		{"lost", Options{}, with(func(r *Result) { r.Lost = 3 }), outcomeFail, CheckLost, clean()},
		{"corrupt", Options{}, with(func(r *Result) { r.Corrupt = 1 }), outcomeFail, CheckCorrupt, clean()},
		{"phantom", Options{}, with(func(r *Result) { r.Phantom = 1 }), outcomeFail, CheckPhantom,
			with(func(r *Result) { r.Phantom = 1; r.Ledger = &ledger.Proof{Reason: "cut"} })}, // a note, no failure
		{"duplicates", Options{NoDuplicates: true}, with(func(r *Result) { r.Duplicates = 2 }), outcomeFail, CheckDuplicates,
			with(func(r *Result) { r.Duplicates = 0 })},
		{"reordered", Options{Ordered: true}, with(func(r *Result) { r.Reordered = 2 }), outcomeFail, CheckReordered, clean()},
		{"read-back", Options{}, with(func(r *Result) { r.ReadBackComplete = false }), outcomeIncomplete, CheckReadBack, clean()},
		{"sent", Options{}, &Result{ReadBackComplete: true}, outcomeFail, CheckSent, clean()},
		{"acked", Options{}, with(func(r *Result) { r.Acked = 0 }), outcomeFail, CheckAcked,
			with(func(r *Result) {
				// Under 1% acked, with a fault applied that can explain it.
				r.Sent, r.Acked = 1000, 5
				r.Faults = []FaultReport{{Record: faults.Record{Result: faults.Applied}}}
			})},
		{"max-no-ack", deadlines, with(func(r *Result) { r.LongestNoAckMs = 1500 }), outcomeFail, CheckMaxNoAck,
			with(func(r *Result) { r.LongestNoAckMs = 900 })},
		{"recovery deadlines", deadlines, with(func(r *Result) {
			f := recovered
			f.ReadyMs = -1
			r.Faults = []FaultReport{f}
		}), outcomeFail, CheckMaxReady, with(func(r *Result) { r.Faults = []FaultReport{recovered} })},
		{"unexpected death", Options{}, with(func(r *Result) {
			r.Faults = []FaultReport{{Record: faults.Record{Action: faults.UnexpectedDeath, Node: 3}}}
		}), outcomeFail, CheckUnexpectedDeath, with(func(r *Result) { r.Faults = []FaultReport{recovered} })},
		{"skipped", Options{}, with(func(r *Result) { r.Group = &GroupResult{Skipped: 2, Delivered: 98} }), outcomeFail, CheckSkipped,
			with(func(r *Result) { r.Group = &GroupResult{Delivered: 100, Redelivered: 5} })},
		{"commit lost", Options{}, with(func(r *Result) {
			r.Group = &GroupResult{GroupInfo: ledger.GroupInfo{Durable: true}, CommitsLost: 1, RedeliveredAfterCommit: 40}
		}), outcomeFail, CheckCommitLost,
			// The same loss where commits are not promised durable: counted.
			with(func(r *Result) {
				r.Group = &GroupResult{GroupInfo: ledger.GroupInfo{Promise: "replicated to 1 broker"}, CommitsLost: 1, RedeliveredAfterCommit: 40}
			})},
		{"redelivered", Options{}, with(func(r *Result) {
			r.Group = &GroupResult{Redelivered: 3, RedeliveredWhile: map[string]int64{"after restart-consumers at 1.0 s": 3}}
		}), outcomePass, "", with(func(r *Result) { r.Group = &GroupResult{Delivered: 100} })},
		{"group progress", Options{}, with(func(r *Result) {
			r.Group = &GroupResult{Stalls: []GroupStall{{Fault: "kill coordinator:g", AtS: 5, LongestMs: 3200, FromS: 5}}}
		}), outcomePass, "", clean()},
		// A group that delivered none of the run's acked messages judged
		// nothing: its 0 skipped and 0 commits lost are no PASS.
		{"group delivered", Options{}, with(func(r *Result) {
			r.Group = &GroupResult{GroupInfo: ledger.GroupInfo{Name: "g", Err: "member 0: poll: refused"}}
		}), outcomeAborted, CheckExperiment, with(func(r *Result) { r.Group = &GroupResult{Delivered: 100} })},
		{"group undelivered", Options{}, with(func(r *Result) {
			r.Group = &GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}, Delivered: 90, Undelivered: 10}
		}), outcomePass, "", with(func(r *Result) { r.Group = &GroupResult{Delivered: 100} })},
		{"experiment", Options{}, with(func(r *Result) { r.Experiment = &Experiment{Scheduled: 1000, LoadEnded: false} }), outcomeAborted, CheckExperiment,
			with(func(r *Result) { r.Experiment = &Experiment{Scheduled: 1000, LoadEnded: true, FaultsPlanned: 1} })},
		{"ledger whole", Options{}, with(func(r *Result) { r.Ledger = &ledger.Proof{Reason: "flush 3 missing"} }), outcomeUnproven, CheckLedgerWhole,
			with(func(r *Result) { r.Ledger = &ledger.Proof{Whole: true} })},
	}
	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.rule] = true
		var r rule
		for _, vr := range verdictRules {
			if vr.name == tc.rule {
				r = vr
			}
		}
		if r.judge == nil {
			t.Errorf("no rule %q in verdictRules", tc.rule)
			continue
		}
		t.Run(tc.rule, func(t *testing.T) {
			got := r.judge(tc.fires, tc.opts)
			if len(got) != 1 || got[0].outcome != tc.outcome || got[0].check != tc.check || got[0].message == "" {
				t.Fatalf("fires: %+v, want one finding asking %d of check %q", got, tc.outcome, tc.check)
			}
			for _, f := range r.judge(tc.quiet, tc.opts) {
				if f.outcome != outcomePass || f.check != "" {
					t.Fatalf("quiet: %+v, want no failure", f)
				}
			}
		})
	}
	for _, vr := range verdictRules {
		if !covered[vr.name] {
			t.Errorf("rule %q has no row here", vr.name)
		}
	}
}

// The verdict is the strongest outcome any rule asks for, whatever the
// order of the rules: fail > aborted > incomplete > unproven > pass.
func TestVerdictPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Result
		want string
	}{
		{"nothing wrong", &Result{Sent: 1, Acked: 1, ReadBackComplete: true}, Pass},
		{"unproven", &Result{Sent: 1, Acked: 1, ReadBackComplete: true, Ledger: &ledger.Proof{Reason: "x"}}, Unproven},
		{"incomplete and unproven", &Result{Sent: 1, Acked: 1, Ledger: &ledger.Proof{Reason: "x"}}, Incomplete},
		{"aborted, incomplete and unproven", &Result{Sent: 1, Acked: 1, Ledger: &ledger.Proof{Reason: "x"}, Experiment: &Experiment{}}, Aborted},
		{"a loss beside all of them", &Result{Sent: 1, Acked: 1, Lost: 1, Ledger: &ledger.Proof{Reason: "x"}, Experiment: &Experiment{}}, Fail},
	} {
		applyVerdict(tc.r, Options{})
		if tc.r.Verdict != tc.want {
			t.Errorf("%s: verdict %s, want %s (%v)", tc.name, tc.r.Verdict, tc.want, tc.r.Reasons)
		}
	}
}

// A batch the broker served whose checksum failed fails the run even when
// none of its records is counted corrupt (they did not parse, or were
// not this run's messages).
func TestRuleCorruptFiresOnDamagedSpans(t *testing.T) {
	r := &Result{ReadBackDamaged: map[int32][]drivers.DamagedSpan{0: {{First: 20, Last: 24, Why: "stored CRC 00000001, computed 00000002"}}}}
	got := ruleCorrupt(r, Options{})
	if len(got) != 1 || got[0].outcome != outcomeFail || got[0].check != CheckCorrupt || !strings.Contains(got[0].message, "1 record batches") {
		t.Fatalf("damaged span: %+v", got)
	}
	if got := ruleCorrupt(&Result{ReadBackDamaged: map[int32][]drivers.DamagedSpan{}}, Options{}); len(got) != 0 {
		t.Fatalf("no span: %+v", got)
	}
}
