package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shardChild is one shard process of BenchmarkShardCPU, passed to the
// child (this test binary again) in ACKCHECK_SHARD_CPU_CHILD.
type shardChild struct {
	Brokers   []string
	Topic     string
	Out       string
	Index     int
	Count     int
	RunID     uint64
	Start     time.Time
	Rate      float64
	Duration  time.Duration
	Producers int
	Profile   string // CPU profile path, "" for none
	// All: every shard writes every partition (runner.Shard.AllPartitions).
	All bool
}

// TestShardCPUChild is the body of a shard process of BenchmarkShardCPU;
// it does nothing unless started as one.
func TestShardCPUChild(t *testing.T) {
	spec := os.Getenv("ACKCHECK_SHARD_CPU_CHILD")
	if spec == "" {
		t.Skip("only run as a child of BenchmarkShardCPU")
	}
	var c shardChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	d, err := kafka.New(kafka.Config{Brokers: c.Brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if c.Profile != "" {
		f, err := os.Create(c.Profile)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	_, err = runner.Run(context.Background(), runner.Config{
		Out: c.Out, Driver: d, Topic: drivers.TopicSpec{Name: c.Topic, Partitions: 16, ReplicationFactor: 3},
		Load:  load.Config{Rate: c.Rate, Duration: c.Duration, MessageSize: 1024, Producers: c.Producers, LiveRead: true},
		Shard: &runner.Shard{Index: c.Index, Count: c.Count, RunID: c.RunID, Start: c.Start, Late: 3 * time.Second, AllPartitions: c.All},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkShardCPU runs 1, 2 and 4 shards of one paced load (total
// ACKCHECK_SHARD_CPU_RATE msg/s of 1 KiB, default 20000, 4 producers in
// all) as separate processes against kfake in this process, each for
// ACKCHECK_SHARD_CPU_DURATION (default 5s) and for three times that, and
// reports, in one run:
//
//   - cpu-s/1M-N: the shard processes' own CPU (each one's rusage,
//     user+system; kfake's is not in it) per million acked messages, over
//     the longer run;
//
//   - marginal-cpu-s/1M-N: the extra CPU of the longer run per extra
//     million acked: what a message costs once a process's fixed costs
//     (connecting, preparing, its .hlog files, closing) are paid;
//
//   - the ratios of both to one shard; and the same with every shard
//     writing every partition (runner.Shard.AllPartitions, the layout
//     before each shard wrote its own partitions), for comparison.
//
//     go test -run '^$' -bench BenchmarkShardCPU -benchtime 1x ./runner/
//
// ACKCHECK_SHARD_CPU_PROFILE=DIR writes each shard's CPU profile there.
func BenchmarkShardCPU(b *testing.B) {
	rate, dur := 20000.0, 5*time.Second
	if v, err := strconv.ParseFloat(os.Getenv("ACKCHECK_SHARD_CPU_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	if v, err := time.ParseDuration(os.Getenv("ACKCHECK_SHARD_CPU_DURATION")); err == nil && v > 0 {
		dur = v
	}
	type key struct {
		n   int
		all bool
	}
	perM, marginal := map[key]float64{}, map[key]float64{}
	for range b.N {
		for _, n := range []int{1, 2, 4} {
			for _, all := range []bool{false, true} {
				if n == 1 && all {
					continue // one shard writes every partition either way
				}
				k := key{n, all}
				cpuS, ackedS, _ := shardProcesses(b, n, rate, dur, all)
				cpuL, ackedL, reqs := shardProcesses(b, n, rate, 3*dur, all)
				perM[k] = cpuL / float64(ackedL) * 1e6
				marginal[k] = (cpuL - cpuS) / float64(ackedL-ackedS) * 1e6
				layout := "own partitions"
				if all {
					layout = "every partition"
				}
				b.Logf("%d shard process(es), %s: %.2f CPU-s per 1M acked over %d; marginal %.2f CPU-s per 1M (%.2f CPU-s for %d, %.2f for %d); "+
					"%.1f records per produce request, %.1f fetch requests per 1000 records",
					n, layout, perM[k], ackedL, marginal[k], cpuS, ackedS, cpuL, ackedL, float64(ackedL)/float64(reqs.produce), float64(reqs.fetch)/float64(ackedL)*1000)
			}
		}
	}
	perM[key{1, true}], marginal[key{1, true}] = perM[key{1, false}], marginal[key{1, false}]
	for _, n := range []int{1, 2, 4} {
		b.ReportMetric(perM[key{n, false}], fmt.Sprintf("cpu-s/1M-%d", n))
		b.ReportMetric(marginal[key{n, false}], fmt.Sprintf("marginal-cpu-s/1M-%d", n))
	}
	for _, n := range []int{2, 4} {
		for _, all := range []bool{false, true} {
			suffix := ""
			if all {
				suffix = "-every-partition"
			}
			b.ReportMetric(perM[key{n, all}]/perM[key{1, false}], fmt.Sprintf("ratio-%d/1%s", n, suffix))
			b.ReportMetric(marginal[key{n, all}]/marginal[key{1, false}], fmt.Sprintf("marginal-ratio-%d/1%s", n, suffix))
		}
	}
}

// requests counts the requests kfake answered while the shards ran.
type requests struct{ produce, fetch int64 }

// shardProcesses runs n shard processes of one load of rate msg/s for
// dur, judges them (PASS required), and returns their CPU seconds in
// all, the messages acked, and the produce and fetch requests kfake
// answered during the load (the read-back's are not counted).
func shardProcesses(b *testing.B, n int, rate float64, dur time.Duration, all bool) (float64, int64, requests) {
	b.Helper()
	const producers = 4
	profDir := os.Getenv("ACKCHECK_SHARD_CPU_PROFILE")
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var produce, fetch atomic.Int64
	counting := atomic.Bool{}
	counting.Store(true)
	count := func(n *atomic.Int64) func(kmsg.Request) (kmsg.Response, error, bool) {
		return func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if counting.Load() {
				n.Add(1)
			}
			return nil, nil, false
		}
	}
	c.ControlKey(int16(kmsg.Produce), count(&produce))
	c.ControlKey(int16(kmsg.Fetch), count(&fetch))
	topic := fmt.Sprintf("cpu-%d-%s-%v", n, dur, all)
	start := time.Now().Add(4 * time.Second)
	base := b.TempDir()
	cmds := make([]*exec.Cmd, n)
	var dirs []string
	for i := range n {
		ch := shardChild{Brokers: c.ListenAddrs(), Topic: topic, Out: filepath.Join(base, fmt.Sprint(i)), Index: i, Count: n,
			RunID: runner.RunIDFor(topic, start, n), Start: start, Rate: rate, Duration: dur, Producers: producers / n, All: all}
		if profDir != "" {
			ch.Profile = filepath.Join(profDir, fmt.Sprintf("shards%d-%s-all%v-%d.pprof", n, dur, all, i))
		}
		dirs = append(dirs, ch.Out)
		spec, _ := json.Marshal(ch)
		cmd := exec.Command(os.Args[0], "-test.run=^TestShardCPUChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACKCHECK_SHARD_CPU_CHILD="+string(spec))
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds[i] = cmd
	}
	total := 0.0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			b.Fatalf("shard %d of %d: %v", i, n, err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	counting.Store(false)
	reqs := requests{produce: produce.Load(), fetch: fetch.Load()}
	d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	res, err := runner.VerifyShards(context.Background(), filepath.Join(base, "merged"), dirs, d, verifier.Options{}, 30*time.Second, nil)
	if err != nil {
		b.Fatal(err)
	}
	if res.Verdict != verifier.Pass {
		b.Fatalf("%d shards: verdict %s %v", n, res.Verdict, res.Reasons)
	}
	return total, res.Acked, reqs
}
