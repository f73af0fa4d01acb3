package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// memDriver is a broker in memory for BenchmarkPartitionScale: every
// publish is stored and acked at once, from the caller's goroutine. Its
// records are one log for all partitions (the messages' own memory), and
// per partition it keeps only the next offset (8 bytes), so what grows
// with the partition count is ackcheck's, not the fake broker's. The log
// holds no pointer (values in one arena, times as nanoseconds): a million
// records the garbage collector had to scan, and their slice's growth
// under its write barrier, weighed on the figures as the fake broker's
// cost, more at a million partitions where the collector runs longer.
type memDriver struct {
	mu     sync.Mutex
	next   []int64 // per partition: the next offset
	log    []memRecord
	values []byte // every record's value, one after the other
	parts  []int32
	expect int // messages the run will publish: the log's room, made once
}

type memRecord struct {
	pos  drivers.Position
	end  int   // the value is values[end-size:end]
	size int32 // of the value
	at   int64 // Unix nanoseconds
}

func (d *memDriver) Name() string { return "mem" }

func (d *memDriver) EnsureTopic(_ context.Context, spec drivers.TopicSpec) (drivers.TopicInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		d.log = make([]memRecord, 0, d.expect)
		d.next = make([]int64, spec.Partitions)
		d.parts = make([]int32, spec.Partitions)
		for i := range d.parts {
			d.parts[i] = int32(i)
		}
	}
	return drivers.TopicInfo{Name: spec.Name, Partitions: d.parts, ReplicationFactor: 1, Created: true}, nil
}

func (d *memDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return memProducer{d}, nil
}

func (d *memDriver) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := drivers.MakeOffsets(len(d.next))
	for p, n := range d.next {
		out.Set(int32(p), n)
	}
	return out, nil
}

func (d *memDriver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	d.mu.Lock()
	log, values := d.log, d.values
	d.mu.Unlock()
	// The spec turned into slices by partition once, so that the fake
	// broker's own lookups do not weigh on the figures.
	n := len(d.next)
	from, to := make([]int64, n), make([]int64, n)
	reading := make([]bool, n)
	spec.From.All(func(p int32, f int64) bool {
		from[p], reading[p], to[p] = f, true, 1<<62
		if t, ok := spec.To.Get(p); ok {
			to[p] = t
		}
		return true
	})
	counts := make([]int64, n)
	for i, r := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return drivers.ReadReport{}, ctx.Err()
		}
		p := r.pos.Partition
		if !reading[p] || r.pos.Offset < from[p] || r.pos.Offset >= to[p] {
			continue
		}
		if err := fn(drivers.Record{Pos: r.pos, Value: values[r.end-int(r.size) : r.end : r.end], Timestamp: time.Unix(0, r.at)}); err != nil {
			return drivers.ReadReport{}, err
		}
		counts[p]++
		from[p] = r.pos.Offset + 1
	}
	rep := drivers.NewReadReport(spec)
	for p := range rep.Partitions {
		if pr := &rep.Partitions[p]; pr.Asked {
			pr.Records, pr.Next, pr.Complete = counts[p], from[p], true
		}
	}
	return rep, nil
}

func (d *memDriver) Topology(context.Context, string) (drivers.Topology, error) {
	return drivers.Topology{At: time.Now(), Controller: -1}, nil
}

func (d *memDriver) Close() error { return nil }

type memProducer struct{ d *memDriver }

func (p memProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	d := p.d
	d.mu.Lock()
	pos := drivers.Position{Partition: m.Partition, Offset: d.next[m.Partition]}
	d.next[m.Partition]++
	d.values = append(d.values, m.Value...)
	d.log = append(d.log, memRecord{pos: pos, end: len(d.values), size: int32(len(m.Value)), at: m.SentAt.UnixNano()})
	d.mu.Unlock()
	done(drivers.Outcome{Status: drivers.Acked, Pos: pos})
}

func (memProducer) Close(context.Context) error { return nil }

// scaleChild is one run of BenchmarkPartitionScale, in a process of its
// own so that its peak RSS is its own.
type scaleChild struct {
	Partitions int
	Messages   int
	Out        string
	Result     string // where the child writes its scaleFigures
}

type scaleFigures struct {
	CPU         time.Duration
	Acked       int64
	Touched     int64
	ResultBytes int64
	ReportBytes int64
	SummaryLen  int
	ReadBackS   float64 // the run's read-back, as result.json gives it
}

// TestPartitionScaleChild is the body of one run of
// BenchmarkPartitionScale; it does nothing unless started as one.
func TestPartitionScaleChild(t *testing.T) {
	spec := os.Getenv("ACKCHECK_PARTITION_SCALE_CHILD")
	if spec == "" {
		t.Skip("only run as a child of BenchmarkPartitionScale")
	}
	var c scaleChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	cpu0 := selfCPU()
	res, err := runner.Run(context.Background(), runner.Config{
		Out: c.Out, Driver: &memDriver{expect: c.Messages}, Topic: drivers.TopicSpec{Name: "scale", Partitions: c.Partitions, ReplicationFactor: 1},
		Load:   load.Config{Unpaced: true, Rate: float64(c.Messages), Duration: time.Second, MessageSize: 64, Producers: 4, MaxInFlight: 10_000},
		Verify: true, Check: verifier.Options{},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := scaleFigures{CPU: selfCPU() - cpu0, Acked: res.Acked, Touched: touched(res), ReadBackS: res.ReadBackS}
	if st, err := os.Stat(filepath.Join(c.Out, "result.json")); err == nil {
		f.ResultBytes = st.Size()
	}
	if st, err := os.Stat(filepath.Join(c.Out, "report.html")); err == nil {
		f.ReportBytes = st.Size()
	}
	var sum bytes.Buffer
	res.WriteSummary(&sum)
	f.SummaryLen = countLines(sum.Bytes())
	raw, _ := json.Marshal(f)
	if err := os.WriteFile(c.Result, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPartitionScale is ackcheck's own cost as the partition count
// grows and the messages stay the same (issue 37, point 3): a whole run
// (runner.Run: load, ledger, read-back, verdict, reports) of 1,000,000
// messages of 64 bytes, unpaced, from 4 producers, through memDriver, with
// 16, 1e3, 1e4, 1e5 and 1e6 partitions, each in a process of its own. It
// reports per count the CPU per message (the run's own rusage) and the
// peak RSS beyond the 16-partition run's, per partition.
//
//	go test -run '^$' -bench BenchmarkPartitionScale -benchtime 1x -timeout 30m ./runner/
//
// ACKCHECK_PARTITION_SCALE_MESSAGES changes the message count;
// ACKCHECK_PARTITION_SCALE_COUNTS (e.g. "16,100000") the counts.
func BenchmarkPartitionScale(b *testing.B) {
	messages := 1_000_000
	if v := os.Getenv("ACKCHECK_PARTITION_SCALE_MESSAGES"); v != "" {
		fmt.Sscan(v, &messages)
	}
	counts := []int{16, 1_000, 10_000, 100_000, 1_000_000}
	if v := os.Getenv("ACKCHECK_PARTITION_SCALE_COUNTS"); v != "" {
		counts = nil
		for _, f := range splitComma(v) {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
				b.Fatalf("ACKCHECK_PARTITION_SCALE_COUNTS=%q: want counts separated by commas", v)
			}
			counts = append(counts, n)
		}
	}
	for range b.N {
		var base scaleFigures
		var baseRSS int64
		for i, n := range counts {
			dir := b.TempDir()
			c := scaleChild{Partitions: n, Messages: messages, Out: filepath.Join(dir, "run"), Result: filepath.Join(dir, "figures.json")}
			spec, _ := json.Marshal(c)
			cmd := exec.Command(os.Args[0], "-test.run", "^TestPartitionScaleChild$", "-test.count", "1", "-test.timeout", "20m")
			cmd.Env = append(os.Environ(), "ACKCHECK_PARTITION_SCALE_CHILD="+string(spec))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%d partitions: %v\n%s", n, err, out)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			raw, err := os.ReadFile(c.Result)
			if err != nil {
				b.Fatal(err)
			}
			var f scaleFigures
			if err := json.Unmarshal(raw, &f); err != nil {
				b.Fatal(err)
			}
			if f.Acked != int64(messages) {
				b.Fatalf("%d partitions: %d acked, want %d", n, f.Acked, messages)
			}
			if i == 0 {
				base, baseRSS = f, rss
			}
			perMsg := f.CPU.Seconds() / float64(f.Acked) * 1e6
			perPart := 0.0
			if n > counts[0] {
				perPart = float64(rss-baseRSS) / float64(n-counts[0])
			}
			// Printed, not logged: a benchmark's log is cut after a few lines.
			fmt.Printf("%d partitions: %.2f CPU-s per 1M messages (%.2fx of %d), peak RSS %.0f MiB (%+.0f bytes per partition beyond %d's), read-back %.2f s (%.2fx of %d), %d touched, result.json %s, report.html %s, summary %d lines\n",
				n, perMsg, perMsg/(base.CPU.Seconds()/float64(base.Acked)*1e6), counts[0], float64(rss)/(1<<20), perPart, counts[0],
				f.ReadBackS, f.ReadBackS/base.ReadBackS, counts[0],
				f.Touched, drivers.ApproxBytes(uint64(f.ResultBytes)), drivers.ApproxBytes(uint64(f.ReportBytes)), f.SummaryLen)
			b.ReportMetric(perMsg, fmt.Sprintf("cpu-s/1M-%d", n))
			b.ReportMetric(perPart, fmt.Sprintf("rss-bytes/partition-%d", n))
			b.ReportMetric(f.ReadBackS, fmt.Sprintf("read-back-s-%d", n))
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// touched is the result's count of partitions with an acked message
// (verifier.Result.PartitionsTouched).
func touched(res *verifier.Result) int64 { return res.PartitionsTouched }
