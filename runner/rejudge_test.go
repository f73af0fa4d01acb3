package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// given is a command line that gave exactly these check flags.
func given(flags ...string) func(string) bool {
	return func(f string) bool { return slices.Contains(flags, f) }
}

// resultJSON reads a run directory's result.json.
func resultJSON(t *testing.T, out string) verifier.Result {
	t.Helper()
	r, err := runner.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each check that failed a run keeps failing it on verify and on report,
// which judge by the checks saved in run.json; a check given explicitly
// replaces the run's, and result.json records the change.
func TestRereadKeepsTheRunsChecks(t *testing.T) {
	tests := []struct {
		name   string
		mode   drivertest.Misbehavior
		opts   verifier.Options
		check  string // the check that fails the run
		flag   string // the flag that turns it off on the re-read
		change string
	}{
		{"ordered", drivertest.Reorder, verifier.Options{Ordered: true}, verifier.CheckReordered, "ordered",
			"--ordered: on at the run, off at this verify"},
		{"no-duplicates", drivertest.Duplicate, verifier.Options{NoDuplicates: true}, verifier.CheckDuplicates, "no-duplicates",
			"--no-duplicates: on at the run, off at this verify"},
		{"max-no-ack", drivertest.Honest, verifier.Options{MaxNoAck: time.Millisecond}, verifier.CheckMaxNoAck, "max-no-ack",
			"--max-no-ack: 1ms at the run, none at this verify"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &drivertest.Faulty{Driver: kfakeDriver(t), Mode: tc.mode, Every: 50}
			out := filepath.Join(t.TempDir(), "run")
			res, err := runner.Run(context.Background(), runner.Config{
				Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
				Load:   load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
				Verify: true, Check: tc.opts, ReadIdleTimeout: 5 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			failsOn := func(r *verifier.Result) bool {
				return r.Verdict == verifier.Fail && slices.ContainsFunc(r.Failures, func(f verifier.Failure) bool { return f.Check == tc.check })
			}
			if !failsOn(res) {
				t.Fatalf("the run did not fail on %s: %s %v", tc.check, res.Verdict, res.Reasons)
			}
			s, err := runner.ReadSettings(out)
			if err != nil {
				t.Fatal(err)
			}
			if s.Checks == nil || *s.Checks != verifier.ChecksOf(tc.opts) {
				t.Fatalf("run.json checks %+v, want %+v", s.Checks, verifier.ChecksOf(tc.opts))
			}
			// No flag given: verify and report judge as the run did.
			none := verifier.Rejudge(s.Checks, verifier.Options{}, given(), "verify")
			v, err := runner.Verify(context.Background(), out, d.Driver, none, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := resultJSON(t, out); !failsOn(v) || !failsOn(&r) || len(r.CheckChanges) != 0 {
				t.Fatalf("verify without flags: %s %v, result.json %s %v", v.Verdict, v.Reasons, r.Verdict, r.CheckChanges)
			}
			rp, err := runner.Report(context.Background(), out, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "report"))
			if err != nil {
				t.Fatal(err)
			}
			if r := resultJSON(t, out); !failsOn(rp) || !failsOn(&r) {
				t.Fatalf("report without flags: %s %v", rp.Verdict, rp.Reasons)
			}
			// The check switched off explicitly: the change is stated.
			off := verifier.Rejudge(s.Checks, verifier.Options{}, given(tc.flag), "verify")
			v, err = runner.Verify(context.Background(), out, d.Driver, off, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := resultJSON(t, out)
			if failsOn(v) || !slices.Equal(r.CheckChanges, []string{tc.change}) || !slices.Contains(r.Notes, tc.change) {
				t.Fatalf("verify --%s=off: %s %v; result.json changes %q notes %q", tc.flag, v.Verdict, v.Reasons, r.CheckChanges, r.Notes)
			}
		})
	}
}

// The recovery deadlines, which need a fault that took a node away: a
// run directory recorded by hand (a kill at 10 min, the node ready 2 s
// later, its replicas never seen in sync) fails on report exactly as
// its run.json's checks say, until a flag changes them.
func TestReportKeepsRecoveryDeadlines(t *testing.T) {
	tests := []struct {
		name   string
		saved  verifier.Checks
		check  string
		flag   string
		change string
	}{
		{"max-ready", verifier.Checks{MaxReady: verifier.Duration(time.Second)}, verifier.CheckMaxReady, "max-ready",
			"--max-ready: 1s at the run, none at this report"},
		{"max-in-sync", verifier.Checks{MaxInSync: verifier.Duration(time.Minute)}, verifier.CheckMaxInSync, "max-in-sync",
			"--max-in-sync: 1m0s at the run, none at this report"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := recordedRun(t, &tc.saved)
			s, err := runner.ReadSettings(out)
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.Report(context.Background(), out, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "report"))
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != verifier.Fail || len(r.Failures) != 1 || r.Failures[0].Check != tc.check {
				t.Fatalf("report: %s %+v, want a failure of %s", r.Verdict, r.Failures, tc.check)
			}
			r, err = runner.Report(context.Background(), out, verifier.Rejudge(s.Checks, verifier.Options{}, given(tc.flag), "report"))
			if err != nil {
				t.Fatal(err)
			}
			if j := resultJSON(t, out); r.Verdict != verifier.Pass || !slices.Equal(j.CheckChanges, []string{tc.change}) {
				t.Fatalf("report --%s 0: %s %v, changes %q", tc.flag, r.Verdict, r.Reasons, j.CheckChanges)
			}
		})
	}
	// A run.json from before checks were saved: said plainly, never a
	// silent judgement with none.
	out := recordedRun(t, nil)
	s, _ := runner.ReadSettings(out)
	r, err := runner.Report(context.Background(), out, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "report"))
	if err != nil {
		t.Fatal(err)
	}
	if j := resultJSON(t, out); !j.ChecksUnknown || len(j.CheckChanges) != 1 || r.Verdict != verifier.Pass {
		t.Fatalf("unknown checks: %s, result.json unknown=%v changes %q", r.Verdict, j.ChecksUnknown, j.CheckChanges)
	}
}

// recordedRun writes a run directory by hand: 1,000 messages over an
// hour, all acked and read back, and a kill at 10 min whose node was
// ready 2 s later; run.json saves checks (nil: a run.json from before
// checks were saved).
func recordedRun(t *testing.T, checks *verifier.Checks) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	l, err := ledger.Open(runner.LedgerDir(out), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.SyntheticRun(l, 1000, 1, 1); err != nil {
		t.Fatal(err)
	}
	var run ledger.RunInfo
	if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
		t.Fatal(err)
	}
	kill := run.LoadStart.Add(10 * time.Minute)
	if err := l.PutMeta(faults.MetaKey, []faults.Record{{Action: faults.Kill, Result: faults.Applied, Node: 2, At: kill, ReadyAt: kill.Add(2 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(runner.Settings{RunID: "0000000000000001", Driver: "kafka", Duration: "1h0m0s", Checks: checks})
	if err := os.WriteFile(filepath.Join(out, "run.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
