package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// Issue 35, point 1: a run interrupted during its load (Ctrl-C) recorded
// its end, so its shed is known, but it reached only part of its
// schedule: verify judges it aborted, saying how far it got, never PASS
// (it was PASS before the plan was recorded).
func TestInterruptedLoadIsAborted(t *testing.T) {
	d := kfakeDriver(t)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	_, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
		Load:   load.Config{Rate: 500, Duration: 10 * time.Second, MessageSize: 100},
		Verify: true,
	})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("run interrupted after 1 s of 10 s: %v", err)
	}
	res, err := runner.Verify(context.Background(), out, d, verifier.Options{}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := res.Experiment
	if res.Verdict != verifier.Aborted || e == nil || e.LoadEnded || e.Reached == nil || e.Scheduled != 5000 {
		t.Fatalf("verdict %s, experiment %+v: want aborted, the load's end recorded short of 5000 scheduled", res.Verdict, e)
	}
	if *e.Reached >= 5000 || *e.Reached < res.Sent || res.Shed == nil {
		t.Fatalf("reached %d of 5000 with %d sent, shed %v: want part of the schedule, shed measured", *e.Reached, res.Sent, res.Shed)
	}
	if why := strings.Join(res.Reasons, "; "); !strings.Contains(why, "the load stopped at") || !strings.Contains(why, "of the 5000 scheduled sends") {
		t.Fatalf("reasons do not say how far the load got: %v", res.Reasons)
	}
	if res.Lost != 0 || res.Phantom != 0 {
		t.Fatalf("lost %d phantom %d on kfake, which keeps everything", res.Lost, res.Phantom)
	}
}

// fakeNodes are three nodes that do nothing; a signal to a node in fail
// fails.
type fakeNodes struct{ fail map[int32]bool }

func (n fakeNodes) IDs() []int32                                        { return []int32{1, 2, 3} }
func (n fakeNodes) PID(context.Context, int32) (int, error)             { return 4242, nil }
func (n fakeNodes) Stop(context.Context, int32, time.Duration) error    { return nil }
func (n fakeNodes) Start(context.Context, int32) error                  { return nil }
func (n fakeNodes) DataDirInode(context.Context, int32) (uint64, error) { return 7, nil }
func (n fakeNodes) Where() string                                       { return "fake nodes" }
func (n fakeNodes) Signal(_ context.Context, id int32, _ syscall.Signal) (int, error) {
	if n.fail[id] {
		return 0, errors.New("signal refused on purpose")
	}
	return 4242, nil
}

// Issue 35, point 1: a run whose scheduled faults did not all fire (one
// failed, one skipped for a node the run does not control) is aborted,
// naming each; the same schedule with every fault applied passes.
func TestFaultsThatDidNotFireAbort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule string
		fail     map[int32]bool
		verdict  string
		notFired []string
	}{
		{"every fault fired", "at=500ms pause node:1; at=1s resume node:1", nil, verifier.Pass, nil},
		{"a fault failed", "at=500ms pause node:1; at=1s resume node:1", map[int32]bool{1: true},
			verifier.Aborted, []string{"at=500ms pause node:1: failed", "at=1s resume node:1: "}},
		{"a fault skipped", "at=500ms pause node:9", nil, verifier.Aborted, []string{"at=500ms pause node:9: skipped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := kfakeDriver(t)
			steps, err := faults.ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Run(context.Background(), runner.Config{
				Out: filepath.Join(t.TempDir(), "run"), Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
				Load:   load.Config{Rate: 500, Duration: 2 * time.Second, MessageSize: 100},
				Verify: true, Faults: &runner.FaultPlan{Nodes: fakeNodes{tc.fail}, Steps: steps, RecoveryTimeout: 2 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			e := res.Experiment
			if res.Verdict != tc.verdict || e == nil || !e.LoadEnded || e.FaultsPlanned != len(steps) || len(e.FaultsNotFired) != len(tc.notFired) {
				t.Fatalf("verdict %s, experiment %+v, faults %+v: want %s with %d not fired", res.Verdict, e, res.Faults, tc.verdict, len(tc.notFired))
			}
			for i, want := range tc.notFired {
				if !strings.HasPrefix(e.FaultsNotFired[i], want) {
					t.Errorf("not fired %d: %q, want it to start %q", i, e.FaultsNotFired[i], want)
				}
			}
			failed := false
			for _, f := range res.Failures {
				failed = failed || f.Check == verifier.CheckExperiment
			}
			if failed != (tc.verdict == verifier.Aborted) {
				t.Fatalf("the experiment check recorded a failure: %v, want %v (%+v)", failed, tc.verdict == verifier.Aborted, res.Failures)
			}
		})
	}
}

// copyLedgerAsCrashed copies a ledger being written as a crash of its
// process would leave it: COMMITTED first, then every other file.
func copyLedgerAsCrashed(dir, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := []string{"COMMITTED"}
	for _, e := range es {
		if e.Name() != "COMMITTED" && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Issue 35, point 1 (the audit's shard killed mid-load, whose merged
// verify passed with 615 of 1,200 sent): shard 1's ledger as its crash at
// 1.2 s of its 2 s load would have left it. The merged verdict is
// aborted, saying its load never recorded its end, never PASS.
func TestKilledShardIsAborted(t *testing.T) {
	c, d := fakeKafka(t)
	var shard1 string
	snap := filepath.Join(t.TempDir(), "shard1-ledger")
	done := make(chan error, 1)
	start := time.Now().Add(time.Second)
	time.AfterFunc(time.Until(start.Add(1200*time.Millisecond)), func() {
		done <- copyLedgerAsCrashed(runner.LedgerDir(shard1), snap)
	})
	dirs := runShardsAt(t, c.ListenAddrs(), "killedshard", 2, start, runner.RunIDFor("killedshard", start, 2), func(cfg *runner.Config) {
		if cfg.Shard.Index == 1 {
			shard1 = cfg.Out
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(runner.LedgerDir(dirs[1])); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(snap, runner.LedgerDir(dirs[1])); err != nil {
		t.Fatal(err)
	}
	res := verifyShards(t, d, dirs)
	e := res.Experiment
	if res.Verdict != verifier.Aborted || e == nil || e.LoadEnded || e.Reached != nil || res.Shed != nil {
		t.Fatalf("merged verdict %s, experiment %+v, shed %v: want aborted, the killed shard's end never recorded, shed unknown (%v)", res.Verdict, e, res.Shed, res.Reasons)
	}
	if res.Sent >= e.Scheduled || !strings.Contains(strings.Join(res.Reasons, "; "), "never recorded its end") {
		t.Fatalf("sent %d of %d scheduled; reasons %v", res.Sent, e.Scheduled, res.Reasons)
	}
}
