package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/message"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shardLoad is the load every sharded test runs, as its total: the
// shards share it.
func shardLoad() load.Config {
	return load.Config{Rate: 600, Duration: 2 * time.Second, MessageSize: 100, Producers: 2, LiveRead: true}
}

// runShards runs n shards of shardLoad on topic in one process, each
// with its own driver (as its own process would have), from one start
// instant, and returns their run directories.
func runShards(t *testing.T, addrs []string, topic string, n int, mod func(*runner.Config)) []string {
	t.Helper()
	start := time.Now().Add(time.Second)
	return runShardsAt(t, addrs, topic, n, start, runner.RunIDFor(topic, start, n), mod)
}

// runShardsAt is runShards from a given start and run ID.
func runShardsAt(t *testing.T, addrs []string, topic string, n int, start time.Time, runID uint64, mod func(*runner.Config)) []string {
	t.Helper()
	base := t.TempDir()
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = filepath.Join(base, fmt.Sprintf("shard-%d", i))
		d, err := kafka.New(kafka.Config{Brokers: addrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		cfg := runner.Config{
			Out: dirs[i], Driver: d, Topic: drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 3},
			Load: shardLoad(), Verify: true,
			Shard: &runner.Shard{Index: i, Count: n, RunID: runID, Start: start},
		}
		if mod != nil {
			mod(&cfg)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runner.Run(context.Background(), cfg)
			if err == nil && res != nil {
				err = fmt.Errorf("a shard judged the run alone: verdict %s", res.Verdict)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	return dirs
}

// fakeKafka is a 3-broker kfake cluster and a driver on it, both closed
// when the test ends.
func fakeKafka(t *testing.T) (*kfake.Cluster, *kafka.Driver) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return c, d
}

func verifyShards(t *testing.T, d drivers.Driver, dirs []string) *verifier.Result {
	t.Helper()
	res, err := runner.VerifyShards(context.Background(), filepath.Join(t.TempDir(), "merged"), dirs, d, verifier.Options{}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Issue 27, points 1, 3 and 5: three shards of one load, judged by one
// merged verify, give the verdict and counts one process of the same
// total rate gives; each shard's messages carry its own producers, and
// every shard's ledger is proven whole into the verdict.
func TestShardsMergedEqualsSingle(t *testing.T) {
	c, d := fakeKafka(t)

	dirs := runShards(t, c.ListenAddrs(), "sharded", 3, nil)
	merged := verifyShards(t, d, dirs)

	single, err := runner.Run(context.Background(), runner.Config{
		Out: filepath.Join(t.TempDir(), "single"), Driver: d, Topic: drivers.TopicSpec{Name: "single", Partitions: 4, ReplicationFactor: 3},
		Load: shardLoad(), Verify: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(shardLoad().Rate * shardLoad().Duration.Seconds())
	if merged.Verdict != verifier.Pass || single.Verdict != verifier.Pass {
		t.Fatalf("verdicts: merged %s %v, single %s %v", merged.Verdict, merged.Reasons, single.Verdict, single.Reasons)
	}
	for _, r := range []*verifier.Result{merged, single} {
		if r.Sent != want || r.Acked != want || r.Lost != 0 || r.Phantom != 0 || r.Duplicates != 0 || r.Publish.Count != want {
			t.Fatalf("sent %d acked %d lost %d phantom %d dup %d publish latencies %d, want %d sent and acked, each with a latency",
				r.Sent, r.Acked, r.Lost, r.Phantom, r.Duplicates, r.Publish.Count, want)
		}
	}
	if merged.Ledger == nil || !merged.Ledger.Whole || len(merged.Shards) != 3 {
		t.Fatalf("merged proof %+v, shards %+v", merged.Ledger, merged.Shards)
	}
	var events uint64
	for i, s := range merged.Shards {
		if s.Index != i || s.Status != verifier.ShardWhole || s.Proof == nil || !s.Proof.Whole || !s.Clean ||
			s.Producers != [2]uint32{uint32(2 * i), uint32(2*i + 2)} || s.Sent != want/3 || s.Acked != want/3 {
			t.Fatalf("shard %d: %+v", i, s)
		}
		events += s.Proof.Events
	}
	if merged.Ledger.Events != events {
		t.Fatalf("merged proof holds %d events, the shards' %d", merged.Ledger.Events, events)
	}

	// The read-back tells which shard wrote what: every record's producer
	// lies in the range of the shard whose ledger sent it.
	perShard := map[int]int{}
	readTopic(t, c.ListenAddrs(), "sharded", func(id message.ID) {
		perShard[int(id.Producer)/2]++
	})
	for i := range 3 {
		if perShard[i] != int(want/3) {
			t.Fatalf("read back %v messages per shard (producer/2), want %d each", perShard, want/3)
		}
	}
}

// readTopic calls f with the ID of every valid ackcheck record of topic.
func readTopic(t *testing.T, addrs []string, topic string, f func(message.ID)) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if dm := message.Decode(r.Value, 0); dm.Status == message.Valid {
				f(dm.ID)
			}
		})
		ctx2, c2 := context.WithTimeout(ctx, 500*time.Millisecond)
		fs = cl.PollFetches(ctx2)
		c2()
		fs.EachRecord(func(r *kgo.Record) {
			if dm := message.Decode(r.Value, 0); dm.Status == message.Valid {
				f(dm.ID)
			}
		})
		if fs.NumRecords() == 0 {
			break
		}
	}
}

// Issue 27, point 3: a shard missing from the merge, or whose ledger is
// damaged, means no PASS: unproven, with the shard named; the copies its
// producers wrote are not blamed on the broker as phantoms. Records
// deleted from the topic are found lost, counted against the shard that
// acked them.
func TestShardsMissingDamagedDeleted(t *testing.T) {
	c, d := fakeKafka(t)
	dirs := runShards(t, c.ListenAddrs(), "shards", 3, nil)
	want := int64(shardLoad().Rate * shardLoad().Duration.Seconds())

	t.Run("missing", func(t *testing.T) {
		res := verifyShards(t, d, dirs[:2])
		if res.Verdict != verifier.Unproven || res.Ledger == nil || res.Ledger.Whole ||
			!strings.Contains(res.Ledger.Reason, "shard 2 of 3 is missing") || res.Shards[2].Status != verifier.ShardMissing {
			t.Fatalf("verdict %s, proof %+v, shards %+v", res.Verdict, res.Ledger, res.Shards)
		}
		if res.Phantom != want/3 || res.Acked != 2*want/3 || res.Lost != 0 {
			t.Fatalf("phantom %d acked %d lost %d: want shard 2's %d copies read without a ledger", res.Phantom, res.Acked, res.Lost, want/3)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		hurt := filepath.Join(t.TempDir(), "shard-1")
		if err := os.CopyFS(hurt, os.DirFS(dirs[1])); err != nil {
			t.Fatal(err)
		}
		logs, _ := filepath.Glob(filepath.Join(hurt, "ledger", "*.log"))
		if len(logs) == 0 {
			t.Fatal("no write-ahead log to damage")
		}
		for _, w := range logs {
			st, _ := os.Stat(w)
			os.Truncate(w, st.Size()/10)
		}
		res := verifyShards(t, d, []string{dirs[0], hurt, dirs[2]})
		if res.Verdict != verifier.Unproven || res.Shards[1].Status != verifier.ShardDamaged || !strings.Contains(res.Shards[1].Error, "damaged") {
			t.Fatalf("verdict %s, shards %+v", res.Verdict, res.Shards)
		}
	})
	t.Run("all whole", func(t *testing.T) {
		if res := verifyShards(t, d, dirs); res.Verdict != verifier.Pass {
			t.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
		}
	})
	t.Run("deleted records", func(t *testing.T) {
		// Delete partition 0 up to offset 40; expected losses per shard
		// are counted from the shards' own ledgers, not the verdict's.
		const cut = 40
		adm := kadm.NewClient(mustClient(t, c.ListenAddrs()))
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "shards", Partition: 0, At: cut})
		if rs, err := adm.DeleteRecords(context.Background(), offs); err != nil || rs.Error() != nil {
			t.Fatalf("delete records: %v %v", err, rs.Error())
		}
		expect := make([]int64, 3)
		for i, dir := range dirs {
			l, err := ledger.OpenReadOnly(runner.LedgerDir(dir), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := l.Count(context.Background(), ledger.Outcome, func(e ledger.Event) bool {
				return e.Status == ledger.OutcomeAcked && e.Partition == 0 && e.Offset < cut
			})
			l.Close()
			if err != nil {
				t.Fatal(err)
			}
			expect[i] = n
		}
		if expect[0]+expect[1]+expect[2] != cut {
			t.Fatalf("the ledgers hold %v acks below offset %d of partition 0, want %d in all", expect, cut, cut)
		}
		res := verifyShards(t, d, dirs)
		if res.Verdict != verifier.Fail || res.Lost != cut {
			t.Fatalf("verdict %s lost %d, want FAIL with %d lost", res.Verdict, res.Lost, cut)
		}
		for i, s := range res.Shards {
			if s.Lost != expect[i] {
				t.Fatalf("shard %d: %d lost, its ledger acked %d of the deleted records", i, s.Lost, expect[i])
			}
		}
	})
}

func mustClient(t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Issue 27, point 2: every shard is given the same faults (the manifests
// give every pod one command), and exactly one applies them, shard 0; the
// merged verdict reports them once, from shard 0's timeline.
func TestShardsOneFaultSchedule(t *testing.T) {
	c, d := fakeKafka(t)
	on := true
	dirs := runShards(t, c.ListenAddrs(), "faulted", 3, func(cfg *runner.Config) {
		cfg.Faults = &runner.FaultPlan{Fsync: &on}
	})
	for i, dir := range dirs {
		l, err := ledger.OpenReadOnly(runner.LedgerDir(dir), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var recs []faults.Record
		err = l.GetMeta(faults.MetaKey, &recs)
		l.Close()
		if applied := err == nil && len(recs) > 0; applied != (i == 0) {
			t.Fatalf("shard %d: fault records %v (%v); want them in shard 0's ledger only", i, recs, err)
		}
	}
	res := verifyShards(t, d, dirs)
	if res.Verdict != verifier.Pass || len(res.Faults) != 1 || res.Faults[0].Action != faults.FsyncOn {
		t.Fatalf("verdict %s, faults %+v: want the one fsync-on shard 0 applied", res.Verdict, res.Faults)
	}
}
