package pulsar_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
)

// These tests need a real Apache Pulsar standalone started by `ackcheck
// cluster pulsar up --dir D`; .ci/run starts one and sets
// ACKCHECK_PULSAR_DIR=D.

func pulsarDriver(t *testing.T, p *pulsar.Cluster, batching bool) drivers.Driver {
	t.Helper()
	d, err := pulsar.New(pulsar.Config{ServiceURL: p.ServiceURL(), AdminURL: p.AdminURL(), BookieHTTPURL: p.BookieHTTPURL(),
		DisableBatching: !batching})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRealPulsarKill SIGKILLs the standalone (broker, bookie and metadata
// store at once) mid-load and starts it again on the same data dir. The
// bookie fsyncs its journal before acking (journalSyncData=true, read
// from the running bookie), so nothing acked may be lost.
func TestRealPulsarKill(t *testing.T) {
	p := plainPulsar.Get(t)
	d := pulsarDriver(t, p, true)
	defer d.Close()
	topic := fmt.Sprintf("pulsar-kill-%d", time.Now().Unix())
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d,
		Topic: drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 1},
		Load: load.Config{Rate: 500, Duration: 40 * time.Second, Producers: 2, MessageSize: 1024, LiveRead: true,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: time.Minute,
		Faults: &runner.FaultPlan{Nodes: faults.Local{Cluster: p}, RecoveryTimeout: 3 * time.Minute,
			Steps: []faults.Step{
				{At: 10 * time.Second, Action: faults.Kill, Target: faults.Target{Kind: faults.Node, Node: 1}},
				{At: 15 * time.Second, Action: faults.Restart, Target: faults.Target{Kind: faults.Previous}},
			}},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "pulsar-kill", res)
	if err := p.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatalf("standalone not back after the test: %v", err)
	}
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass {
		t.Fatalf("lost %d, corrupt %d, phantom %d, verdict %s %v", res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
	if len(res.AckMeanings) == 0 || !strings.Contains(res.AckMeanings[0].Meaning, "journalSyncData=true") {
		t.Fatalf("what an ack meant does not name journalSyncData read from the bookie: %+v", res.AckMeanings)
	}
	kill := res.Faults[0]
	if kill.Action != "kill" || kill.Result != "applied" || kill.KillProof == nil || kill.KillProof.NewPID == 0 ||
		kill.KillProof.NewPID == kill.KillProof.OldPID || !kill.KillProof.SameDataDir {
		t.Fatalf("kill: %+v, proof %+v", kill.Record, kill.KillProof)
	}
	served := checkPulsarProductOracle(t, p.LogFile(1), kill)
	// No ack can come between the kill and the moment the restarted
	// standalone's log says it serves, so the longest gap is at least that
	// long, less the moments between the last ack and the kill (at 500
	// messages/s, well under a second). How long the restart takes is the
	// machine's business (48 s on a loaded CI machine, 10 s on a quiet
	// one), so the only upper bound is the run's recovery timeout.
	if kill.ReadyMs < 5000 || res.LongestNoAckMs < served-1000 || res.LongestNoAckMs > float64(3*time.Minute/time.Millisecond) {
		t.Fatalf("implausible recovery: serves again %.0f ms after the kill (%.0f ms by its log), longest without acks %.0f ms", kill.ReadyMs, served, res.LongestNoAckMs)
	}
	t.Logf("pulsar kill: acked %d, lost %d, longest without acks %.0f ms, serves again %.0f ms after the kill (restart at +5 s), first ack on every partition %.0f ms after it",
		res.Acked, res.Lost, res.LongestNoAckMs, kill.ReadyMs, kill.SlowestFirstAckMs)
}

// checkPulsarProductOracle reads the standalone's log itself: its first
// "messaging service is ready" after the fault must be the run's oracle
// to the millisecond, a lower bound, and ackcheck cannot have seen the
// broker serve more than the warning's 500 ms before it said it did. It
// returns the log's moment, in ms after the fault.
func checkPulsarProductOracle(t *testing.T, logFile string, f verifier.FaultReport) float64 {
	t.Helper()
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var back time.Time
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "messaging service is ready") || len(line) < 25 {
			continue
		}
		at, err := time.ParseInLocation("[2006-01-02 15:04:05,000]", line[:25], time.Local)
		if err == nil && !at.Before(f.At.Truncate(time.Millisecond)) {
			back = at
			break
		}
	}
	if back.IsZero() {
		t.Fatalf("%s has no 'messaging service is ready' after the %s at %s", logFile, f.Action, f.At.Format("15:04:05.000"))
	}
	want := float64(back.Sub(f.At)) / float64(time.Millisecond)
	if f.Oracle == nil || f.Oracle.Ready == nil || f.OracleReadyMs == nil || f.Oracle.NoInSync == "" || f.Oracle.Ready.Bound != drivers.NotBefore {
		t.Fatalf("result.json has no oracle from pulsar.log (ready %.0f ms by the log): %+v", want, f.Oracle)
	}
	if d := *f.OracleReadyMs - want; d < -1 || d > 1 {
		t.Errorf("oracle ready %.0f ms, but pulsar.log says %.0f ms", *f.OracleReadyMs, want)
	}
	if f.ReadyMs < want-500 {
		t.Errorf("ackcheck saw the broker ready %.0f ms after the %s, %.0f ms before its log says it served", f.ReadyMs, f.Action, want-f.ReadyMs)
	}
	t.Logf("oracle: ready %.0f ms by ackcheck, %.0f ms by pulsar.log (%s)", f.ReadyMs, want, f.Oracle.Source)
	return want
}
