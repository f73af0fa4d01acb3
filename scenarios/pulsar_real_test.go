package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/drivers/pulsar/pulsartest"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
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
	p := pulsartest.Cluster(t)
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
		Progress: testWriter{t}, ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	saveSummary(t, "pulsar-kill", res)
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
	if kill.ReadyMs < 5000 || res.LongestNoAckMs < 5000 || res.LongestNoAckMs > 40000 {
		t.Fatalf("implausible recovery: serves again %.0f ms after the kill, longest without acks %.0f ms", kill.ReadyMs, res.LongestNoAckMs)
	}
	t.Logf("pulsar kill: acked %d, lost %d, longest without acks %.0f ms, serves again %.0f ms after the kill (restart at +5 s), first ack on every partition %.0f ms after it",
		res.Acked, res.Lost, res.LongestNoAckMs, kill.ReadyMs, kill.SlowestFirstAckMs)
}
