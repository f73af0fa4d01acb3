package nats_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
)

// Issue 39's truth on NATS, through run --group: the Raft leader of the
// group's durable consumer (coordinator:GROUP, the consumer on the first
// stream) SIGKILLed while 2 members pull and ack R3 consumers beside a
// 200/s load, started again 3 s later, then ackcheck's members restarted
// without acking. Nothing acked is lost or skipped, no acknowledged ack
// is lost, and the consumers' ack floors (NATS's account) equal the
// ledger's last acknowledged commits at the streams' ends.
func TestRealNATSGroupRunConsumerLeaderKill(t *testing.T) {
	n := plainNATS.Get(t)
	d, err := nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	steps, err := faults.ParseSchedule("at=3s kill coordinator:" + group + "; at=6s restart; at=9s restart-consumers")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 3},
		Load:   load.Config{Rate: 200, Duration: 12 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Group:    &load.GroupConfig{Name: group, Members: 2, CatchUp: 30 * time.Second},
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: n}, Steps: steps, RecoveryTimeout: time.Minute},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not whole after the run: %v", err)
	}
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("verdict %s; %d acked, %d delivered in %d deliveries, %d commits; skipped %d, acks lost %d, redelivered %d (%d after a commit), while %v; stalls %+v; %s; %s",
		res.Verdict, res.Acked, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.RedeliveredWhile, g.Stalls, g.Promise, g.Err)
	if !g.Durable {
		t.Errorf("R3 consumers not seen as durable acks: %q", g.Promise)
	}
	if res.Verdict != verifier.Pass || res.Lost != 0 || g.Skipped != 0 || g.CommitsLost != 0 || g.Commits == 0 || g.Restarts != 1 {
		t.Fatalf("verdict %s, lost %d, skipped %d, acks lost %d, commits %d, restarts %d: %v", res.Verdict, res.Lost, g.Skipped, g.CommitsLost, g.Commits, g.Restarts, res.Reasons)
	}
	var killed bool
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Fatalf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
		killed = killed || (f.Action == faults.Kill && f.Target == "coordinator:"+group)
	}
	if !killed {
		t.Fatalf("the coordinator was not killed: %+v", res.Faults)
	}
	held, err := d.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range end.Map() {
		if held[p] != g.Committed[p] || held[p] != e {
			t.Errorf("stream %d: the consumer's ack floor says %d, the ledger's last acknowledged commit is %d, the stream ends at %d", p, held[p], g.Committed[p], e)
		}
	}
}
