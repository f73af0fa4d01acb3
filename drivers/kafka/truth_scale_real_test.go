package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// envScale gates the partition-scale truths (issue 37): they do not fit
// CI's time on a 2-core machine (creating 2,000 partitions at RF 3 alone
// takes the local cluster about a minute, 6,000 logs), so they run only
// when it is set.
const envScale = "ACKCHECK_SCALE"

// scalePartitions is the most partitions at RF 3 the local 3-node cluster
// was measured to hold on the 2-core machine with 768 MiB heaps while a
// paced load runs and a broker is killed: every partition acked, read
// back, and the controller's elections logged.
const scalePartitions = 2000

// A leader kill at 2,000 partitions, RF 3, acks=all, under a paced load:
// nothing acked is lost, every partition got acks and was read back to
// its end, and the kill's figures agree with the KRaft controller's log.
// The controller logs each partition whose leader moved away from the
// killed broker and each ISR that dropped it: the killed broker led the
// most partitions, so at least a third of them moved, to a replica in the
// ISR (no unclean election); every partition's ISR dropped it; and with
// acks=all no partition can ack a message sent after the kill before its
// ISR dropped the broker, so each partition's first ack is at or after
// its ISR line; the ready and in-sync figures agree with the logs.
func TestRealKafkaScaleLeaderKill(t *testing.T) {
	if os.Getenv(envScale) == "" {
		t.Skipf("set %s=1 to run the partition-scale truths (several minutes)", envScale)
	}
	k := realCluster(t)
	d := realDriver(t, k, kafka.Config{Acks: "all"})
	topic := scenariotest.TopicName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The topic is made and settled before the load: creating 6,000 logs
	// keeps the brokers busy for about a minute, in which few partitions
	// can take acks=all writes; the load then uses the topic as it is.
	start := time.Now()
	if _, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: scalePartitions, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	// Its 6,000 logs go with the test: left behind, each run's made the
	// next one's cluster slower (acked 789, 394, then 222 a second before
	// the kill in three runs one after the other on one cluster).
	defer deleteTopic(t, adminFor(t, k), topic)
	// Every ISR full in the metadata is not enough: the controller sets
	// the ISR to every replica at creation, and a follower still making
	// its logs has fetched nothing. Its leader drops it after
	// replica.lag.time.max.ms (30 s), and acks=all then fails with
	// NOT_ENOUGH_REPLICAS (seen: the first 10 s of the load got no ack).
	// The ISRs must stay full for longer than that.
	waitLogsMade(ctx, t, k, topic, scalePartitions, 8*time.Minute)
	waitFullISR(ctx, t, d, topic, scalePartitions, 35*time.Second, 8*time.Minute)
	t.Logf("%d partitions at RF 3 created and in sync in %s", scalePartitions, time.Since(start).Round(time.Second))

	sc := scenarios.LeaderKill{Topic: topic, KillAt: 10 * time.Second, RestartAfter: 12 * time.Second}
	const dur = 35 * time.Second
	if err := sc.Validate(dur); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d,
		Topic: drivers.TopicSpec{Name: topic, Partitions: scalePartitions, ReplicationFactor: 3},
		// 600 msg/s, under what the cluster acks at 2,000 partitions here
		// (789 a second at 2,000 offered, 2026-12-04): offered more, the
		// producers' backlog (37,711 in flight) held the first message
		// sent after the kill behind earlier ones for 54 s, which measured
		// the client's queue, not the election the first-ack bound is
		// held against.
		Load: load.Config{Rate: 600, Duration: dur, Producers: 4, MessageSize: 256,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: time.Minute,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, Steps: sc.Steps(), RecoveryTimeout: 3 * time.Minute},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "kafka-scale-leader-kill", res)
	if err := k.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatalf("cluster not whole after the run: %v", err)
	}
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass {
		t.Fatalf("acks=all at %d partitions: lost %d, corrupt %d, phantom %d, verdict %s %v",
			scalePartitions, res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
	if res.PartitionsTouched != scalePartitions || !res.ReadBackComplete || res.Unread != 0 {
		t.Errorf("%d of %d partitions acked, read back complete %v, unread %d (notes %v)",
			res.PartitionsTouched, scalePartitions, res.ReadBackComplete, res.Unread, res.ReadBackNotes)
	}

	// The controller moves leaders and shrinks ISRs when it fences the
	// killed broker, which can come after the restart was asked for (at
	// 13.6 s, the restart at 12 s, in one run here): the window runs on
	// from the kill. Only lines moving a leader away from the broker or
	// dropping it from an ISR count, and nothing kills it again.
	kill := res.Faults[0]
	el, err := k.Elections(topic, kill.Node, kill.At, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var lastShrink time.Time
	for _, at := range el.Shrunk {
		if at.After(lastShrink) {
			lastShrink = at
		}
	}
	var unclean, leaderless int
	for p, e := range el.Moved {
		if e.Unclean {
			unclean++
		}
		if e.NewLeader < 0 {
			leaderless++
		}
		if _, ok := el.Shrunk[p]; !ok {
			t.Errorf("partition %d moved away from broker %d but no ISR line dropped it", p, kill.Node)
		}
	}
	ms := func(at time.Time) float64 { return float64(at.Sub(kill.At)) / float64(time.Millisecond) }
	t.Logf("controller's log: %d partitions moved away from broker %d (unclean %d, no leader %d), %d ISRs dropped it, the last %.0f ms after the kill; ackcheck: slowest first ack %.0f ms, longest partition stall %.0f ms, ready %.0f ms, in sync %.0f ms",
		len(el.Moved), kill.Node, unclean, leaderless, len(el.Shrunk), ms(lastShrink), kill.SlowestFirstAckMs, kill.LongestStallMs, kill.ReadyMs, kill.InSyncMs)
	if len(el.Moved)*3 < scalePartitions {
		t.Errorf("the controller moved %d partitions away from broker %d, which led the most of %d: at least a third", len(el.Moved), kill.Node, scalePartitions)
	}
	if unclean > 0 || leaderless > 0 {
		t.Errorf("acks=all with min.insync.replicas 2: %d unclean elections, %d partitions left without a leader", unclean, leaderless)
	}
	if len(el.Shrunk) != scalePartitions {
		t.Errorf("the controller dropped broker %d from %d ISRs; every one of the %d partitions held it", kill.Node, len(el.Shrunk), scalePartitions)
	}
	// Every partition acked a message sent after the kill, and none before
	// the controller dropped the broker from its ISR (log times are to the
	// millisecond and the kill's stamp is taken just before the signal:
	// 200 ms of slack). The logs give no upper bound: how long after the
	// election the first ack comes is the cluster's serving, which at
	// 2,000 partitions on this machine took 29.7 s for the slowest (the
	// last ISR line at 8.9 s, acks at 8 and 86 a second in the 20 s after
	// the kill), so it is reported, not held to a bound.
	if kill.SlowestFirstAckMs < 0 {
		t.Errorf("some partitions never acked a message sent after the kill (first_ack_ms -1): no first ack to hold against the controller's log")
	}
	t.Logf("slowest first ack %.0f ms after the kill; the controller's last ISR change dropping broker %d came at %.0f ms", kill.SlowestFirstAckMs, kill.Node, ms(lastShrink))
	for p, v := range kill.FirstAckMs {
		if at, ok := el.Shrunk[p]; ok && v >= 0 && v < ms(at)-200 {
			t.Errorf("partition %d: first ack %.0f ms after the kill, before the controller dropped broker %d from its ISR at %.0f ms", p, v, kill.Node, ms(at))
		}
	}
	// Ready and in sync against the logs; the first acks were held above.
	checkAgainstKafkaLogs(t, k, topic, scenariotest.Figures(res, false))
}

// waitLogsMade waits until every broker of k holds a log for each of the
// n partitions of topic (RF 3 on 3 brokers): a full ISR in the metadata
// comes first, while the brokers still make the logs (on the loaded
// 2-core machine a restarted broker made about 15 a second, and its
// partitions' leaders dropped it from their ISRs meanwhile).
func waitLogsMade(ctx context.Context, t *testing.T, k *kafka.Cluster, topic string, n int, timeout time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(timeout)
	for {
		have := map[int32]int{}
		dirs, err := adm.DescribeAllLogDirs(ctx, nil)
		for broker, bd := range dirs {
			for _, d := range bd {
				have[broker] += len(d.Topics[topic])
			}
		}
		done := err == nil && len(have) == len(k.Nodes())
		for _, c := range have {
			done = done && c == n
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: logs per broker %v after %s, want %d each (last error: %v)", topic, have, timeout, n, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// waitFullISR waits until every one of n partitions of topic has had a
// leader and every replica in its ISR for at least stable.
func waitFullISR(ctx context.Context, t *testing.T, d drivers.Driver, topic string, n int, stable, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var fullSince time.Time
	for {
		topo, err := d.Topology(ctx, topic)
		short := n
		if err == nil {
			short = n - len(topo.Partitions)
			for _, p := range topo.Partitions {
				if p.Leader < 0 || len(p.ISR) < len(p.Replicas) || len(p.Replicas) == 0 {
					short++
				}
			}
		}
		switch {
		case err != nil || short > 0:
			fullSince = time.Time{}
		case fullSince.IsZero():
			fullSince = time.Now()
		case time.Since(fullSince) >= stable:
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d partitions without a leader or a full ISR after %s (last error: %v)", topic, short, n, timeout, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
