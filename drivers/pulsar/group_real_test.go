package pulsar_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestRealPulsarGroup runs the group suite (drivertest.RunGroup) on the
// real standalone of ACKCHECK_PULSAR_DIR: a member of a Shared
// subscription consumes a small produced topic to its end and acks as it
// goes, at the positions the read-back gives; the subscription's
// mark-delete positions (admin internal stats) are the acknowledged
// commits; a member that leaves without acking has its messages given to
// another at once. The producer does not batch here: the suite commits
// half way through its first poll, which may fall inside a batch, and
// Pulsar takes an entry only once every message of its batch is acked
// (the run's members poll whole entries; TestRealPulsarGroupRestartConsumers
// batches). Then: the commit promise is not durable, and the group's
// coordinator is the standalone, node 1.
func TestRealPulsarGroup(t *testing.T) {
	p := plainPulsar.Get(t)
	var d *pulsar.Driver
	topic := drivertest.RunGroup(t, drivertest.GroupHarness{
		NewDriver: func(t *testing.T) drivers.Driver {
			var err error
			d, err = pulsar.New(pulsar.Config{ServiceURL: p.ServiceURL(), AdminURL: p.AdminURL(), BookieHTTPURL: p.BookieHTTPURL(), DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 3, ReplicationFactor: 1,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, err := d.CommitPromise(ctx, topic+"-a")
	if err != nil || pr.Durable || !strings.Contains(pr.Meaning, "managedLedgerDefaultMarkDeleteRateLimit") {
		t.Errorf("commit promise %+v, %v; want not durable, naming the mark-delete rate limit", pr, err)
	}
	t.Logf("an ack means: %s", pr.Meaning)
	if id, err := d.GroupCoordinator(ctx, topic+"-a"); err != nil || id != 1 {
		t.Errorf("group %s-a: coordinator %d, %v; want the standalone, 1", topic, id, err)
	}
	if id, err := d.GroupCoordinator(ctx, "never-joined"); err == nil {
		t.Errorf("a group never joined has coordinator %d; want an error", id)
	}
	// The read-back subscription holds the topic: it exists on every
	// partition and has acked nothing.
	held, err := d.CommittedOffsets(ctx, pulsar.ReadbackSubscription(topic+"-a"), topic)
	if err != nil || len(held) != 3 {
		t.Fatalf("read-back subscription of %s-a: %v, %v; want one on each of 3 partitions", topic, held, err)
	}
	acked, err := d.CommittedOffsets(ctx, topic+"-a", topic)
	if err != nil {
		t.Fatal(err)
	}
	for part, o := range held {
		if o >= acked[part] {
			t.Errorf("partition %d: the read-back subscription is at %d, not before the group's %d", part, o, acked[part])
		}
	}
}

// Issue 39's truth on Pulsar, through run --group: 2 members of a Shared
// subscription consume beside a 200/s load on 3 partitions (producer
// batching on, Pulsar's default) and ackcheck's members are restarted
// twice without acking (restart-consumers at 4 s and 8 s). Nothing acked
// is lost or skipped, no acknowledged ack is lost, only what was not yet
// acked is delivered again, and the subscription's mark-delete positions
// (Pulsar's account) equal the ledger's last acknowledged commits at the
// partitions' ends.
func TestRealPulsarGroupRestartConsumers(t *testing.T) {
	p := plainPulsar.Get(t)
	d := pulsarDriver(t, p, true).(*pulsar.Driver)
	defer d.Close()
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	steps, err := faults.ParseSchedule("at=4s restart-consumers; at=8s restart-consumers")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 1},
		Load:   load.Config{Rate: 200, Duration: 12 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Group:    &load.GroupConfig{Name: group, Members: 2, CatchUp: 30 * time.Second},
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: p}, Steps: steps, RecoveryTimeout: time.Minute},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("%s: verdict %s; %d acked, %d delivered in %d deliveries, %d commits; skipped %d, commits lost %d, redelivered %d (%d after a commit), while %v; stalls %+v; %s; %s",
		time.Since(began).Round(time.Millisecond), res.Verdict, res.Acked, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.RedeliveredWhile, g.Stalls, g.Promise, g.Err)
	if g.Durable || g.Promise == "" {
		t.Errorf("promise %q durable %v: want read from the broker and not durable", g.Promise, g.Durable)
	}
	if res.Verdict != verifier.Pass || res.Lost != 0 || g.Skipped != 0 || g.CommitsLost != 0 || g.RedeliveredAfterCommit != 0 || g.Commits == 0 || g.Restarts != 2 {
		t.Fatalf("verdict %s, lost %d, skipped %d, commits lost %d, redelivered after a commit %d, commits %d, restarts %d: %v",
			res.Verdict, res.Lost, g.Skipped, g.CommitsLost, g.RedeliveredAfterCommit, g.Commits, g.Restarts, res.Reasons)
	}
	if g.Delivered != res.Acked {
		t.Errorf("the group was delivered %d distinct messages, %d were acked", g.Delivered, res.Acked)
	}
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Fatalf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
	}
	held, err := d.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for part, e := range end.Map() {
		if held[part] != g.Committed[part] || held[part] != e {
			t.Errorf("partition %d: the subscription's mark-delete says %d, the ledger's last acknowledged commit is %d, the partition ends at %d", part, held[part], g.Committed[part], e)
		}
	}
}

// The coordinator of a Pulsar group killed (issue 39's kill
// coordinator:GROUP, here the standalone itself: broker, bookie and
// metadata store in one JVM), through run --group: 2 members consume
// beside a 200/s load on 3 partitions for 20 s; 8 s in the standalone
// gets SIGKILL, 10 s in it is started again on the same data, and the
// group has 4 minutes after the load to catch up (the standalone took 23 s
// to serve again on a quiet machine, 2 min 5 s on one with a load average
// of 19; the members' consumers reconnect by themselves). Nothing acked is lost (the read-back
// subscription kept the ledgers the group had acked) and nothing is
// skipped. The broker may have answered acks whose mark-delete position
// it had not written yet (at most one write a second per subscription):
// the group is then given messages again below commits it was told were
// taken, commits lost, counted and not failing the run, because a Pulsar
// ack is not durable (0, 0 and 5 commits lost in three runs here).
func TestRealPulsarGroupCoordinatorKill(t *testing.T) {
	p := plainPulsar.Get(t)
	d := pulsarDriver(t, p, true).(*pulsar.Driver)
	defer d.Close()
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	steps, err := faults.ParseSchedule("at=8s kill coordinator:" + group + "; at=10s restart")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 1},
		Load:   load.Config{Rate: 200, Duration: 20 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: time.Minute,
		Group:    &load.GroupConfig{Name: group, Members: 2, CatchUp: 4 * time.Minute},
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: p}, Steps: steps, RecoveryTimeout: 4 * time.Minute},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatalf("standalone not back after the run: %v", err)
	}
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("%s: verdict %s; %d acked, lost %d; %d delivered in %d deliveries, %d commits; skipped %d, commits lost %d, redelivered %d (%d after a commit), while %v; stalls %+v; %s",
		time.Since(began).Round(time.Millisecond), res.Verdict, res.Acked, res.Lost, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.RedeliveredWhile, g.Stalls, g.Err)
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
	if res.Verdict != verifier.Pass || res.Lost != 0 || g.Skipped != 0 || g.Commits == 0 || g.Durable {
		t.Fatalf("verdict %s, lost %d, skipped %d, commits %d, durable %v: %v", res.Verdict, res.Lost, g.Skipped, g.Commits, g.Durable, res.Reasons)
	}
	// Sends whose outcome the kill cut off may be in the log too: the group
	// is given those as well (indeterminate to the producer).
	if g.Undelivered != 0 || g.Delivered < res.Acked {
		t.Errorf("the group was delivered %d distinct messages, %d were acked, %d read back were never delivered", g.Delivered, res.Acked, g.Undelivered)
	}
}

// The check for acknowledged acks forgotten fires on Pulsar: 3 s into the
// load, the group's subscription on the first partition is reset to the
// partition's first message behind its members' backs (admin reset-cursor:
// the broker disconnects the members' consumers, which reconnect). The
// group is given again what the broker had answered acks for: acks lost.
// Only that reset is run: a reset 30 entries past the partition's last
// entry, tried by hand, did not make "skipped" fire (the broker clamped
// it to the end: 0 skipped, 0 redelivered), so no record lay between;
// the runner's tests make skipped fire with drivertest.FaultyGroup.
func TestRealPulsarGroupChecksFire(t *testing.T) {
	p := plainPulsar.Get(t)
	res := drivertest.RunGroupFault(t, drivertest.GroupFaultHarness{
		NewDriver:  func(t *testing.T) drivers.Driver { return pulsarDriver(t, p, true) },
		Partitions: 2, ReplicationFactor: 1, Duration: 6 * time.Second, CatchUp: 30 * time.Second,
		Fault: func(ctx context.Context, _ drivers.Driver, topic, group string) (string, error) {
			a, err := admin.New(&config.Config{WebServiceURL: p.AdminURL()})
			if err != nil {
				return "", err
			}
			pt, err := utils.GetTopicName("persistent://public/default/" + topic + "-partition-0")
			if err != nil {
				return "", err
			}
			if err := a.Subscriptions().ResetCursorToMessageIDWithContext(ctx, *pt, group, utils.Earliest); err != nil {
				return "", err
			}
			return fmt.Sprintf("subscription %s of %s reset to its first message", group, pt), nil
		},
	})
	if res.AcksLost == 0 {
		t.Errorf("the check did not fire: %+v", res)
	}
	if res.Skipped != 0 {
		t.Errorf("a reset to the start skipped %d records", res.Skipped)
	}
}
