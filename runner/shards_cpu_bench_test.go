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
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
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
		Shard: &runner.Shard{Index: c.Index, Count: c.Count, RunID: c.RunID, Start: c.Start, Late: 3 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkShardCPU runs 1, 2 and 4 shards of one paced load (total
// ACKCHECK_SHARD_CPU_RATE msg/s of 1 KiB, default 20000, for
// ACKCHECK_SHARD_CPU_DURATION, default 10s, 4 producers in all) as
// separate processes against kfake in this process, and reports each
// shard process's own CPU (its rusage: user+system) per million acked
// messages, and the ratios to one shard, measured in one run:
//
//	go test -run '^$' -bench BenchmarkShardCPU -benchtime 1x ./runner/
//
// ACKCHECK_SHARD_CPU_PROFILE=DIR writes each shard's CPU profile there.
func BenchmarkShardCPU(b *testing.B) {
	rate, dur := 20000.0, 10*time.Second
	if v, err := strconv.ParseFloat(os.Getenv("ACKCHECK_SHARD_CPU_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	if v, err := time.ParseDuration(os.Getenv("ACKCHECK_SHARD_CPU_DURATION")); err == nil && v > 0 {
		dur = v
	}
	profDir := os.Getenv("ACKCHECK_SHARD_CPU_PROFILE")
	const producers = 4
	perM := map[int]float64{}
	for range b.N {
		for _, n := range []int{1, 2, 4} {
			c, err := kfake.NewCluster(kfake.NumBrokers(3))
			if err != nil {
				b.Fatal(err)
			}
			topic := fmt.Sprintf("cpu-%d", n)
			start := time.Now().Add(4 * time.Second)
			base := b.TempDir()
			cmds := make([]*exec.Cmd, n)
			var dirs []string
			for i := range n {
				ch := shardChild{Brokers: c.ListenAddrs(), Topic: topic, Out: filepath.Join(base, fmt.Sprint(i)), Index: i, Count: n,
					RunID: runner.RunIDFor(topic, start, n), Start: start, Rate: rate, Duration: dur, Producers: producers / n}
				if profDir != "" {
					ch.Profile = filepath.Join(profDir, fmt.Sprintf("shards%d-%d.pprof", n, i))
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
			var cpu []float64
			total := 0.0
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					b.Fatalf("shard %d of %d: %v", i, n, err)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				s := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
				cpu = append(cpu, s)
				total += s
			}
			d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
			if err != nil {
				b.Fatal(err)
			}
			res, err := runner.VerifyShards(context.Background(), filepath.Join(base, "merged"), dirs, d, verifier.Options{}, 30*time.Second, nil)
			d.Close()
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
			if res.Verdict != verifier.Pass {
				b.Fatalf("%d shards: verdict %s %v", n, res.Verdict, res.Reasons)
			}
			perM[n] = total / float64(res.Acked) * 1e6
			b.Logf("%d shard process(es): %d acked, CPU-s each %.2f, %.2f CPU-s per 1M acked (shard processes only, not kfake)", n, res.Acked, cpu, perM[n])
		}
	}
	b.ReportMetric(perM[1], "cpu-s/1M-1shard")
	b.ReportMetric(perM[2], "cpu-s/1M-2shards")
	b.ReportMetric(perM[4], "cpu-s/1M-4shards")
	b.ReportMetric(perM[2]/perM[1], "ratio-2/1")
	b.ReportMetric(perM[4]/perM[1], "ratio-4/1")
}
