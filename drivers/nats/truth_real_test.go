package nats_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	natsdriver "github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
)

// These tests need a real 3-node NATS JetStream cluster started by
// `ackcheck cluster nats up --dir D`; .ci/run starts one and sets
// ACKCHECK_NATS_DIR=D.

func natsDriver(t *testing.T, n *natsdriver.Cluster) drivers.Driver {
	t.Helper()
	d, err := natsdriver.New(natsdriver.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRealNATSLeaderKill SIGKILLs the server that leads the most streams
// of the topic mid-load and starts it again on the same store. An R3
// stream acks once a majority stored the message, so a single kill may
// lose nothing acked.
func TestRealNATSLeaderKill(t *testing.T) {
	n := plainNATS.Get(t)
	d := natsDriver(t, n)
	defer d.Close()
	topic := fmt.Sprintf("nats-leader-kill-%d", time.Now().Unix())
	sc := scenarios.LeaderKill{Topic: topic, KillAt: 10 * time.Second, RestartAfter: 8 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic: drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 3},
		Load: load.Config{Rate: 500, Duration: 40 * time.Second, Producers: 2, MessageSize: 1024, LiveRead: true,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: n}, RecoveryTimeout: 2 * time.Minute, Steps: sc.Steps()},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "nats-leader-kill", res)
	if err := n.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not healthy after the test: %v", err)
	}
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass || res.Acked < 15000 {
		t.Fatalf("acked %d, lost %d, corrupt %d, phantom %d, verdict %s %v", res.Acked, res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
	if len(res.AckMeanings) == 0 || !strings.Contains(res.AckMeanings[0].Meaning, "sync_interval") {
		t.Fatalf("what an ack meant does not name sync_interval read from the servers: %+v", res.AckMeanings)
	}
	kill := res.Faults[0]
	if kill.Action != "kill" || kill.Result != "applied" || kill.KillProof == nil || kill.KillProof.NewPID == 0 ||
		kill.KillProof.NewPID == kill.KillProof.OldPID || !kill.KillProof.SameDataDir || !kill.KillProof.SurvivorsUnchanged {
		t.Fatalf("kill: %+v, proof %+v", kill.Record, kill.KillProof)
	}
	// The killed server led at least one stream: its streams stalled until
	// a new leader was elected. It was down until its restart (scheduled
	// 8 s later), so neither its readiness nor every replica being in sync
	// can come before that. (In sync is the stream leaders' view, which can
	// come before the server's own /healthz says all of its assets are
	// current.)
	if down := scenariotest.DownMs(t, res); kill.SlowestFirstAckMs < 500 || kill.ReadyMs < down || kill.InSyncMs < down {
		t.Fatalf("implausible recovery: first ack on every stream %.0f ms, ready %.0f ms, in sync %.0f ms after the kill, the restart %.0f ms after it",
			kill.SlowestFirstAckMs, kill.ReadyMs, kill.InSyncMs, down)
	}
	checkAgainstNATSLog(t, n, scenariotest.Figures(res, false), kill.KillProof.NewPID)
	checkNATSProductOracle(t, n, res, kill.KillProof.NewPID)
	t.Logf("nats leader kill: acked %d, lost %d, reordered %d, longest without acks %.0f ms, slowest stream's first ack %.0f ms after the kill, ready %.0f ms, in sync %.0f ms",
		res.Acked, res.Lost, res.Reordered, res.LongestNoAckMs, kill.SlowestFirstAckMs, kill.ReadyMs, kill.InSyncMs)
}
