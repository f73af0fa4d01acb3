package runner_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// Found in review (false PASS 1): a sharded load whose faults `ackcheck
// faults` applies, its one step skipped (no such partition), was PASS: the
// shards' plans hold no faults. The timeline now carries the applier's
// planned steps, and the merged verdict is aborted naming the step.
func TestExternalFaultThatDidNotFireAborts(t *testing.T) {
	c, d := fakeKafka(t)
	startDir := t.TempDir()
	const topic = "faultskip"
	runID, start, err := runner.JoinStart(startDir, 2, topic, 1500*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := faults.ParseSchedule("at=500ms pause leader:faultskip/99")
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, ferr = runner.ApplyFaults(context.Background(), runner.FaultsConfig{
			Out: filepath.Join(t.TempDir(), "faults"), StartDir: startDir, Driver: d, Topic: topic, Shards: 2,
			RunID: runID, Start: start, Duration: shardLoad().Duration,
			Faults: &runner.FaultPlan{Nodes: gateNodes{&gate{}}, Steps: steps, RecoveryTimeout: 3 * time.Second},
		})
	}()
	dirs := runShardsAt(t, c.ListenAddrs(), topic, 2, start, runID, func(cfg *runner.Config) {
		cfg.Shard.Dir, cfg.Shard.ExternalFaults = startDir, true
	})
	wg.Wait()
	if ferr != nil {
		t.Fatal(ferr)
	}
	res := verifyShards(t, d, dirs)
	e := res.Experiment
	if res.Verdict != verifier.Aborted || e == nil || e.FaultsPlanned != 1 || len(e.FaultsNotFired) != 1 || !strings.Contains(e.FaultsNotFired[0], "pause leader:faultskip/99") {
		t.Fatalf("verdict %s, experiment %+v: want aborted, the skipped pause named", res.Verdict, e)
	}
}

// Found in review (3): a merged verdict's directory reused for another
// load whose read-back did not end kept the first load's PASS beside the
// second load's run.json. The verdict of another run goes stale first.
func TestMergedOutReusedLeavesNoOtherRunsPass(t *testing.T) {
	c, d := fakeKafka(t)
	merged := filepath.Join(t.TempDir(), "merged")
	x := runShards(t, c.ListenAddrs(), "rx", 2, nil)
	if res, err := runner.VerifyShards(context.Background(), merged, x, d, verifier.Options{}, 10*time.Second, nil); err != nil || res.Verdict != verifier.Pass {
		t.Fatalf("%v %v", res, err)
	}
	y := runShards(t, c.ListenAddrs(), "ry", 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runner.VerifyShards(ctx, merged, y, d, verifier.Options{}, 10*time.Second, nil); err == nil {
		t.Fatal("a cancelled merged verify gave a verdict")
	}
	s, _ := runner.ReadSettings(merged)
	if r, err := runner.ReadResult(merged); err == nil && r.RunID != s.RunID {
		t.Fatalf("the directory holds run %s's verdict (%s) beside run.json of run %s", r.RunID, r.Verdict, s.RunID)
	}
}
