package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 39's truths: a consumer group beside the load on a real Kafka,
// its commits judged by ackcheck and checked against what Kafka itself
// holds (kadm's committed offsets, the __consumer_offsets log), which
// ackcheck did not compute.

// groupRun runs a load of rate msg/s for dur with a group of members
// beside it and the faults of schedule on k.
func groupRun(t *testing.T, k *kafka.Cluster, d drivers.Driver, group string, spec drivers.TopicSpec, members int, rate float64, dur, recovery time.Duration, schedule string) (*verifier.Result, string) {
	t.Helper()
	steps, err := faults.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+2*recovery+time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: spec,
		Load:   load.Config{Rate: rate, Duration: dur, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Group:    &load.GroupConfig{Name: group, Members: members, CatchUp: recovery},
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, Steps: steps, RecoveryTimeout: recovery},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not whole after the run: %v", err)
	}
	return res, out
}

// redeliveredLines reads redelivered.jsonl.
func redeliveredLines(t *testing.T, out string) []verifier.RedeliveredLine {
	t.Helper()
	return readLines[verifier.RedeliveredLine](t, filepath.Join(out, verifier.RedeliveredFile))
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// Truth (a): offsets topic RF 3. The group's coordinator SIGKILLed under
// load, started again, and then ackcheck's own members restarted without
// committing: nothing acked is skipped, no acknowledged commit is lost,
// and what is delivered again was not yet committed. kadm's committed
// offsets (the coordinator's account) equal the ledger's last
// acknowledged commits, at the partitions' ends.
//
// In the CI rehearsal of 2026-12-03 it failed: restart-consumers' joins
// were cut short by the end of the load ("find the coordinator ...:
// context canceled") and the run was ABORTED (honest, not PASS). The
// joins are now bounded on their own (load/group.go restartJoinTimeout).
// Still open: the group makes no progress from the kill until the
// members restart, though producer acks resume before (until_progress_ms).
func TestRealGroupCoordinatorKillAndRestart(t *testing.T) {
	k := realCluster(t)
	d := realDriver(t, k, kafka.Config{Acks: "all"})
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	ctx := context.Background()
	res, out := groupRun(t, k, d, group, drivers.TopicSpec{Name: topic, Partitions: 6, ReplicationFactor: 3}, 3, 500, 20*time.Second, 30*time.Second,
		"at=5s kill coordinator:"+group+"; at=10s restart; at=15s restart-consumers")
	scenariotest.SaveSummary(t, "group-coordinator-kill", res)
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("verdict %s; %d acked, %d delivered in %d deliveries, %d commits; skipped %d, commits lost %d, redelivered %d (%d after a commit), while %v; stalls %+v; %s",
		res.Verdict, res.Acked, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.RedeliveredWhile, g.Stalls, g.Promise)
	if !g.Durable {
		t.Fatalf("offsets topic RF 3 not seen as durable commits: %q", g.Promise)
	}
	if res.Verdict != verifier.Pass || g.Skipped != 0 || g.CommitsLost != 0 || g.RedeliveredAfterCommit != 0 || res.Lost != 0 {
		t.Fatalf("verdict %s, lost %d, skipped %d, commits lost %d, redelivered after a commit %d: %v", res.Verdict, res.Lost, g.Skipped, g.CommitsLost, g.RedeliveredAfterCommit, res.Reasons)
	}
	for _, l := range redeliveredLines(t, out) {
		if l.AfterCommit {
			t.Fatalf("delivered again after its commit: %+v", l)
		}
	}
	// The faults fired as scheduled, on the node Kafka named coordinator.
	var killed bool
	for _, f := range res.Faults {
		if f.Action == faults.Kill && f.Result == faults.Applied && f.Target == "coordinator:"+group {
			killed = true
		}
		if f.Result != faults.Applied {
			t.Fatalf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
	}
	if !killed || g.Restarts != 1 || len(g.Stalls) != 3 {
		t.Fatalf("coordinator killed %v, restarts %d, stalls %+v", killed, g.Restarts, g.Stalls)
	}
	// kadm's account: the coordinator holds exactly the ledger's last
	// acknowledged commit of each partition, at the partition's end.
	held, err := d.(drivers.GroupOffsetReader).CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range end.Map() {
		if held[p] != g.Committed[p] || held[p] != e {
			t.Errorf("partition %d: kadm says committed %d, the ledger's last acknowledged commit is %d, the partition ends at %d", p, held[p], g.Committed[p], e)
		}
	}
}

// offsetsLogCommits reads group's commits on topic from the
// __consumer_offsets log as the broker keeps it now: per partition, each
// commit's offset and timestamp, in log order.
func offsetsLogCommits(t *testing.T, brokers []string, group, topic string) map[int32][][2]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	listed, err := kadm.NewClient(adm).ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			ends[o.Partition] = o.Offset
			from[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	out := map[int32][][2]int64{}
	if len(from) == 0 {
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": from}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := func() bool {
		for p, e := range ends {
			if from[p].EpochOffset().Offset < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading __consumer_offsets: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			from[r.Partition] = kgo.NewOffset().At(r.Offset + 1)
			var key kmsg.OffsetCommitKey
			if r.Value == nil || key.ReadFrom(r.Key) != nil || key.Version > 1 || key.Group != group || key.Topic != topic {
				return
			}
			var v kmsg.OffsetCommitValue
			if v.ReadFrom(r.Value) != nil {
				return
			}
			out[key.Partition] = append(out[key.Partition], [2]int64{v.Offset, r.Timestamp.UnixNano()})
		})
	}
	return out
}

// Truth (b): offsets topic RF 1, on a one-node lazyfs cluster. A power
// loss of its only replica loses the commits it had not fsynced: the
// group resumes before commits the broker had acknowledged (commits lost
// > 0, counted, not failed: RF 1 promises no durable commit), and it
// resumes exactly where the __consumer_offsets log the broker recovered
// says (the last commit in it from before the power loss; with none, the
// partition's start). The topic's own data is fsynced (flush.messages=1)
// so that only commits are lost.
func TestRealGroupCommitsLostOnPowerLoss(t *testing.T) {
	k := lazyOneKafka.Get(t)
	d := realDriver(t, k, kafka.Config{Acks: "all"})
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	// Everything on the node is made durable a few seconds into the load
	// (lazyfs sync): the commits before it survive the power loss, those
	// after it are lost, so that the group resumes at a commit of its own.
	synced := make(chan time.Time, 1)
	sync := time.AfterFunc(10*time.Second, func() {
		if err := k.Mount(1).Sync(context.Background()); err != nil {
			t.Errorf("sync node 1: %v", err)
		}
		synced <- time.Now()
	})
	defer sync.Stop()
	res, out := groupRun(t, k, d, group, drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"flush.messages": "1"}},
		2, 300, 20*time.Second, 100*time.Second, "at=14s power-loss coordinator:"+group)
	t.Cleanup(func() { deleteGroupTopic(t, d, topic) })
	syncAt := <-synced
	scenariotest.SaveSummary(t, "group-power-loss-rf1", res)
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("verdict %s; %d acked, %d delivered in %d deliveries, %d commits; skipped %d, commits lost %d, redelivered %d (%d after a commit); stalls %+v; %s",
		res.Verdict, res.Acked, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.Stalls, g.Promise)
	if g.Durable {
		t.Fatalf("offsets topic RF 1 seen as durable commits: %q", g.Promise)
	}
	if g.CommitsLost == 0 || g.Skipped != 0 || res.Lost != 0 {
		t.Fatalf("commits lost %d (want > 0), skipped %d, lost %d: %v", g.CommitsLost, g.Skipped, res.Lost, res.Reasons)
	}
	var lossAt time.Time
	for _, f := range res.Faults {
		if f.Action == faults.PowerLoss && f.Result == faults.Applied {
			lossAt = f.At
		}
	}
	if lossAt.IsZero() {
		t.Fatalf("the power loss did not apply: %+v", res.Faults)
	}
	// Where the group resumed, per partition: the lowest offset delivered
	// again below a lost commit.
	resumed := map[int32]int64{}
	for _, l := range readLines[verifier.CommitLostLine](t, filepath.Join(out, verifier.CommitsLostFile)) {
		if r, ok := resumed[l.Partition]; !ok || l.ResumedAt < r {
			resumed[l.Partition] = l.ResumedAt
		}
	}
	// What the broker's recovered log says it resumed from.
	logged := offsetsLogCommits(t, k.Brokers(), group, topic)
	if len(resumed) == 0 {
		t.Fatal("commits lost, and no partition resumed before one")
	}
	for p, r := range resumed {
		want := int64(0) // no commit survived: the group starts at the log's start
		for _, c := range logged[p] {
			if c[1] < lossAt.UnixNano() {
				want = c[0]
			}
		}
		t.Logf("partition %d: resumed at %d; the recovered log's last commit before the power loss: %d (synced at %.1f s before it)", p, r, want, lossAt.Sub(syncAt).Seconds())
		if r != want {
			t.Errorf("partition %d: the group resumed at %d, the broker's recovered __consumer_offsets log says %d", p, r, want)
		}
		if want == 0 {
			t.Errorf("partition %d: no commit from before the sync survived in the log: the sync did not make them durable", p)
		}
	}
}

// deleteGroupTopic removes a truth's topic, so that the next power loss
// of a one-node cluster has fewer logs to recover.
func deleteGroupTopic(t *testing.T, d drivers.Driver, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.(*kafka.Driver).Config().Brokers...))
	if err != nil {
		t.Log(err)
		return
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopics(ctx, topic); err != nil {
		t.Logf("delete topic %s: %v", topic, err)
	}
}

// TestRealGroupCommitFsyncPowerLoss is the consumer side of fsync-audit
// on the one-node lazyfs cluster (offsets RF 1): with the offsets topic's
// flush.messages=1 (drivers.CommitFsyncSetter) the commit promise says
// fsynced, and a power loss of the node loses no acknowledged commit.
// The setting is read back from the broker before and after, and put
// back to the broker's default at the end, so that a later test of the
// shared cluster sees commits from memory again.
//
// Measured on a one-node lazyfs cluster (2026-12-04, two runs, 49 s and
// 54 s each): 396 and 312 acknowledged commits, 0 lost, 0 skipped; the
// node came back 28 s and 34 s after the power loss. Run just after
// TestRealGroupCommitsLostOnPowerLoss, which lost 231 of 545 commits on
// the same cluster without the setting.
func TestRealGroupCommitFsyncPowerLoss(t *testing.T) {
	k := lazyOneKafka.Get(t)
	d := realDriver(t, k, kafka.Config{Acks: "all"})
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	ctx := context.Background()
	// The offsets topic exists once a coordinator has been named.
	if _, err := d.(*kafka.Driver).CommitPromise(ctx, group); err != nil {
		t.Fatal(err)
	}
	cs := d.(drivers.CommitFsyncSetter)
	if err := cs.SetCommitFsync(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.SetCommitFsync(context.Background(), false); err != nil {
			t.Errorf("put %s back: %v", cs.CommitFsyncSetting(), err)
		}
		if on, err := cs.CommitFsync(context.Background()); err != nil || on {
			t.Errorf("%s after the restore: fsync %v (%v), want the default (off)", cs.CommitFsyncSetting(), on, err)
		}
	})
	if on, err := cs.CommitFsync(ctx); err != nil || !on {
		t.Fatalf("%s after setting it: fsync %v (%v), want on", cs.CommitFsyncSetting(), on, err)
	}
	res, _ := groupRun(t, k, d, group, drivers.TopicSpec{Name: topic, Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"flush.messages": "1"}},
		2, 300, 20*time.Second, 100*time.Second, "at=14s power-loss coordinator:"+group)
	t.Cleanup(func() { deleteGroupTopic(t, d, topic) })
	scenariotest.SaveSummary(t, "group-power-loss-commit-fsync", res)
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("verdict %s; %d acked, %d delivered, %d commits; skipped %d, commits lost %d, redelivered %d (%d after a commit); stalls %+v; %s",
		res.Verdict, res.Acked, g.Delivered, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.Stalls, g.Promise)
	if !strings.Contains(g.Promise, "fsynced") {
		t.Errorf("commit promise %q does not say fsynced", g.Promise)
	}
	applied := false
	for _, f := range res.Faults {
		applied = applied || (f.Action == faults.PowerLoss && f.Result == faults.Applied)
	}
	if !applied {
		t.Fatalf("the power loss did not apply: %+v", res.Faults)
	}
	if g.Commits == 0 || g.CommitsLost != 0 || g.Skipped != 0 || res.Lost != 0 {
		t.Fatalf("%d commits, commits lost %d (want 0 with each commit fsynced), skipped %d, lost %d: %v", g.Commits, g.CommitsLost, g.Skipped, res.Lost, res.Reasons)
	}
}

// TestRealGroupCoordinatorKillStallInLogs holds the group stall ackcheck
// measures after a SIGKILL of the coordinator (no restart of the node or
// the members until the end) against the brokers' own account: the
// controller fences the dead node only when its session times out
// (broker.session.timeout.ms, 9 s), the new coordinator then loads the
// group from its __consumer_offsets partition, and the group's first
// progress after the kill must not come before that load. It also shows
// that the group resumes by itself, without restart-consumers.
func TestRealGroupCoordinatorKillStallInLogs(t *testing.T) {
	k := realCluster(t)
	d := realDriver(t, k, kafka.Config{Acks: "all"})
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	res, _ := groupRun(t, k, d, group, drivers.TopicSpec{Name: topic, Partitions: 6, ReplicationFactor: 3}, 3, 300, 25*time.Second, 30*time.Second,
		"at=4s kill coordinator:"+group+"; at=22s restart")
	scenariotest.SaveSummary(t, "group-coordinator-kill-logs", res)
	g := res.Group
	if g == nil || len(g.Stalls) == 0 {
		t.Fatalf("no group stalls in the result: %+v", g)
	}
	var kill *verifier.FaultReport
	for i, f := range res.Faults {
		if f.Action == faults.Kill && f.Result == faults.Applied {
			kill = &res.Faults[i]
		}
	}
	if kill == nil {
		t.Fatalf("the kill did not apply: %+v", res.Faults)
	}
	s := g.Stalls[0]
	t.Logf("verdict %s; %d acked, %d delivered, %d commits; stall after the kill of node %d: longest %.0f ms, first progress %.0f ms after it",
		res.Verdict, res.Acked, g.Delivered, g.Commits, kill.Node, s.LongestMs, s.UntilProgressMs)
	if res.Verdict != verifier.Pass || g.Skipped != 0 || g.CommitsLost != 0 {
		t.Fatalf("verdict %s, skipped %d, commits lost %d: %v", res.Verdict, g.Skipped, g.CommitsLost, res.Reasons)
	}
	if s.UntilProgressMs < 0 {
		t.Fatal("the group made no progress after the kill before the node's restart: it did not resume by itself")
	}
	a, err := k.GroupAccount(group, kill.Node, kill.At, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ok, msg := a.Explains(kill.At, s.UntilProgressMs)
	t.Log(msg)
	if !ok {
		t.Fatalf("the stall does not lie within the brokers' account: %s", msg)
	}
	if a.Fenced.IsZero() || a.Loaded.Before(a.Fenced) {
		t.Errorf("the logs show no fencing of node %d before the group's load: %+v", kill.Node, a)
	}
	// ackcheck's own report carries the same account beside the stall.
	want := float64(a.Loaded.Sub(kill.At)) / float64(time.Millisecond)
	if s.CoordinatorMs == nil || *s.CoordinatorMs != want || !strings.Contains(s.Coordinator, fmt.Sprintf("node %d loaded group %s", a.LoadedBy, group)) {
		t.Errorf("the stall's coordinator account %q at %v ms, want node %d's load at %.0f ms", s.Coordinator, s.CoordinatorMs, a.LoadedBy, want)
	}
	if !strings.Contains(strings.Join(res.Reasons, "\n"), "loaded group "+group) {
		t.Errorf("the verdict's reasons do not give the coordinator's account: %v", res.Reasons)
	}
}
