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
	"strings"
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
	// NoKick: the load without its timer kick (load.Config.TimerKick).
	NoKick bool
	// Counters: where the child writes its childCounters at its end.
	Counters string
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
	// The kick at load's timerKickPeriod, which a paced load no longer
	// runs by default (its pacing window wakes it once per millisecond).
	kick := 800 * time.Microsecond
	if c.NoKick {
		kick = -1
	}
	_, err = runner.Run(context.Background(), runner.Config{
		Out: c.Out, Driver: d, Topic: drivers.TopicSpec{Name: c.Topic, Partitions: 16, ReplicationFactor: 3},
		Load:  load.Config{Rate: c.Rate, Duration: c.Duration, MessageSize: 1024, Producers: c.Producers, LiveRead: true, TimerKick: kick},
		Shard: &runner.Shard{Index: c.Index, Count: c.Count, RunID: c.RunID, Start: c.Start, Late: 3 * time.Second, AllPartitions: c.All},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Counters != "" {
		cc, err := readSelfIO()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(cc)
		if err := os.WriteFile(c.Counters, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkShardCPU separates what a shard process costs by the second
// from what a message costs, for 1, 2 and 4 shard processes of one paced
// load (4 producers in all, 1 KiB, own partitions) against kfake in this
// process. Each N runs at two total rates (ACKCHECK_SHARD_CPU_RATES,
// default "10000,40000") for the same ACKCHECK_SHARD_CPU_DURATION
// (default 10s), ACKCHECK_SHARD_CPU_ROUNDS times (default 1), the runs
// interleaved (every N at one rate, then every N at the next, the order
// of N turned round each time) so that the machine's other load falls on
// every N alike. Per N, the two rates give a line
//
//	CPU = a*N*seconds + b*messages
//
// b (marginal-cpu-s/1M-N, CPU-s per extra million acked) is what a
// message costs with the processes' costs by the second held equal; a
// (cpu-ms/proc-s-N) is what one process costs per second of load beside
// its messages (timers, polling, connecting, its files at the end). CPU
// is each shard process's own rusage (user+system; kfake's is not in
// it). Each shard process also reports its own counters per message:
// read and write system calls (/proc/self/io syscr, syscw) and context
// switches (rusage nvcsw+nivcsw), which do not depend on how busy the
// machine is as CPU time does. Each run's figures and the load average
// before it are printed as it ends.
//
//	go test -run '^$' -bench BenchmarkShardCPU -benchtime 1x -timeout 30m ./runner/
//
// ACKCHECK_SHARD_CPU_PROFILE=DIR writes each shard's CPU profile there;
// ACKCHECK_SHARD_CPU_NO_KICK=1 runs the loads without their timer kick
// (load.Config.TimerKick), to measure what it costs;
// ACKCHECK_SHARD_CPU_EVERY_PARTITION=1 has every shard write every
// partition (runner.Shard.AllPartitions, the layout before each shard
// wrote its own), for comparison.
func BenchmarkShardCPU(b *testing.B) {
	rates := []float64{10000, 40000}
	if v := os.Getenv("ACKCHECK_SHARD_CPU_RATES"); v != "" {
		rates = nil
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || r <= 0 {
				b.Fatalf("ACKCHECK_SHARD_CPU_RATES=%q: want rates in msg/s separated by commas", v)
			}
			rates = append(rates, r)
		}
	}
	if len(rates) != 2 || rates[0] == rates[1] {
		b.Fatalf("ACKCHECK_SHARD_CPU_RATES: want two different rates, have %v", rates)
	}
	dur, rounds := 10*time.Second, 1
	if v, err := time.ParseDuration(os.Getenv("ACKCHECK_SHARD_CPU_DURATION")); err == nil && v > 0 {
		dur = v
	}
	if v, err := strconv.Atoi(os.Getenv("ACKCHECK_SHARD_CPU_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	all := os.Getenv("ACKCHECK_SHARD_CPU_EVERY_PARTITION") == "1"
	ns := []int{1, 2, 4}
	// sums[n][r]: the runs of n processes at rates[r], added up.
	sums := map[int]*[2]shardCost{}
	for _, n := range ns {
		sums[n] = &[2]shardCost{}
	}
	for range b.N {
		for round := range rounds {
			for r, rate := range rates {
				order := ns
				if (round*len(rates)+r)%2 == 1 {
					order = []int{4, 2, 1}
				}
				for _, n := range order {
					load := loadAverage()
					c := shardProcesses(b, n, rate, dur, all)
					// Printed, not logged: a benchmark's log is cut after a few lines.
					fmt.Printf("round %d, %d shard process(es), %.0f msg/s: %.2f CPU-s for %d acked (%.2f per 1M); per 1000 acked: %.1f read + %.1f write syscalls, %.1f context switches, %.1f fetch requests; %.1f records per produce request; load average %s\n",
						round, n, rate, c.cpu, c.acked, c.cpu/float64(c.acked)*1e6,
						float64(c.syscr)/float64(c.acked)*1000, float64(c.syscw)/float64(c.acked)*1000, float64(c.csw)/float64(c.acked)*1000,
						float64(c.fetch)/float64(c.acked)*1000, float64(c.acked)/float64(c.produce), load)
					sums[n][r].add(c)
				}
			}
		}
	}
	secs := dur.Seconds() * float64(rounds*b.N)
	var b1 float64
	for _, n := range ns {
		lo, hi := sums[n][0], sums[n][1]
		dm := float64(hi.acked - lo.acked)
		bn := (hi.cpu - lo.cpu) / dm                                // CPU-s per message
		an := (lo.cpu - bn*float64(lo.acked)) / (float64(n) * secs) // CPU-s per process-second
		if n == 1 {
			b1 = bn
		}
		per := func(f func(shardCost) int64) float64 { return float64(f(hi)-f(lo)) / dm * 1000 }
		b.Logf("%d shard process(es): b = %.2f CPU-s per extra 1M acked (%.2f of one's); a = %.1f CPU-ms per process-second; per extra 1000 acked: %.1f read + %.1f write syscalls, %.1f context switches",
			n, bn*1e6, bn/b1, an*1e3,
			per(func(c shardCost) int64 { return c.syscr }), per(func(c shardCost) int64 { return c.syscw }), per(func(c shardCost) int64 { return c.csw }))
		b.ReportMetric(bn*1e6, fmt.Sprintf("marginal-cpu-s/1M-%d", n))
		b.ReportMetric(bn/b1, fmt.Sprintf("marginal-ratio-%d/1", n))
		b.ReportMetric(an*1e3, fmt.Sprintf("cpu-ms/proc-s-%d", n))
		b.ReportMetric(hi.cpu/float64(hi.acked)*1e6, fmt.Sprintf("cpu-s/1M-%d@%.0f", n, rates[1]))
		b.ReportMetric(lo.cpu/float64(lo.acked)*1e6, fmt.Sprintf("cpu-s/1M-%d@%.0f", n, rates[0]))
	}
}

// loadAverage is /proc/loadavg's first three fields, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// shardCost is what the shard processes of one load (or several, added
// up) cost, each process by its own account, and what kfake answered.
type shardCost struct {
	cpu            float64 // CPU seconds, user+system
	acked          int64
	syscr, syscw   int64 // read and write system calls (/proc/self/io)
	csw            int64 // context switches, voluntary and not
	produce, fetch int64 // requests kfake answered during the load
}

func (c *shardCost) add(d shardCost) {
	c.cpu += d.cpu
	c.acked += d.acked
	c.syscr += d.syscr
	c.syscw += d.syscw
	c.csw += d.csw
	c.produce += d.produce
	c.fetch += d.fetch
}

// childCounters is what a shard process reports of itself at its end.
type childCounters struct{ Syscr, Syscw int64 }

// readSelfIO reads this process's read and write system call counts.
func readSelfIO() (childCounters, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return childCounters{}, err
	}
	var c childCounters
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "syscr":
			c.Syscr = n
		case "syscw":
			c.Syscw = n
		}
	}
	return c, nil
}

// shardProcesses runs n shard processes of one load of rate msg/s for
// dur, judges them (PASS required), and returns what they cost.
func shardProcesses(b *testing.B, n int, rate float64, dur time.Duration, all bool) shardCost {
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
	topic := fmt.Sprintf("cpu-%d-%.0f-%v", n, rate, all)
	start := time.Now().Add(4 * time.Second)
	base := b.TempDir()
	cmds := make([]*exec.Cmd, n)
	var dirs []string
	for i := range n {
		ch := shardChild{Brokers: c.ListenAddrs(), Topic: topic, Out: filepath.Join(base, fmt.Sprint(i)), Index: i, Count: n,
			RunID: runner.RunIDFor(topic, start, n), Start: start, Rate: rate, Duration: dur, Producers: producers / n, All: all, NoKick: os.Getenv("ACKCHECK_SHARD_CPU_NO_KICK") == "1",
			Counters: filepath.Join(base, fmt.Sprintf("counters-%d.json", i))}
		if profDir != "" {
			ch.Profile = filepath.Join(profDir, fmt.Sprintf("shards%d-%.0f-%s-all%v-%d-%d.pprof", n, rate, dur, all, i, time.Now().UnixNano()))
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
	var cost shardCost
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			b.Fatalf("shard %d of %d: %v", i, n, err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cost.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		cost.csw += ru.Nvcsw + ru.Nivcsw
		raw, err := os.ReadFile(filepath.Join(base, fmt.Sprintf("counters-%d.json", i)))
		if err != nil {
			b.Fatalf("shard %d of %d wrote no counters: %v", i, n, err)
		}
		var cc childCounters
		if err := json.Unmarshal(raw, &cc); err != nil {
			b.Fatal(err)
		}
		cost.syscr += cc.Syscr
		cost.syscw += cc.Syscw
	}
	counting.Store(false)
	cost.produce, cost.fetch = produce.Load(), fetch.Load()
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
	cost.acked = res.Acked
	return cost
}
