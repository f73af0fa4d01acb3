package runner_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/message"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Figures for issue 27, not timed tests: each runs only when its
// variable is set.
//
//	ACKCHECK_SHARD_BENCH_RATE=100000 go test -run TestShardThroughputFigures -v ./runner/
//	ACKCHECK_SHARD_BENCH_IDS=100000000 go test -run TestShardVerifyFigures -v -timeout 60m ./runner/

// TestShardThroughputFigures runs 1, 2 and 4 shards of one paced load in
// this process against kfake and prints the aggregate acked/s and the CPU
// seconds (this process: shards and kfake) per million acked messages.
func TestShardThroughputFigures(t *testing.T) {
	rate, _ := strconv.ParseFloat(os.Getenv("ACKCHECK_SHARD_BENCH_RATE"), 64)
	if rate <= 0 {
		t.Skip("ACKCHECK_SHARD_BENCH_RATE is not set (total msg/s)")
	}
	dur := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ACKCHECK_SHARD_BENCH_DURATION")); err == nil && d > 0 {
		dur = d
	}
	// The load's producers in all (ACKCHECK_SHARD_BENCH_PRODUCERS, default
	// 4) are split over the shards, so that every run has as many
	// clients, each batching as much: splitting is what is measured.
	producers := 4
	if p, err := strconv.Atoi(os.Getenv("ACKCHECK_SHARD_BENCH_PRODUCERS")); err == nil && p >= 4 {
		producers = p
	}
	for _, n := range []int{1, 2, 4} {
		c, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			t.Fatal(err)
		}
		cpu0 := cpuSeconds()
		start := time.Now().Add(3 * time.Second)
		topic := fmt.Sprintf("bench-%d", n)
		errs := make(chan error, n)
		base := t.TempDir()
		for i := range n {
			d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			cfg := runner.Config{
				Out: filepath.Join(base, fmt.Sprint(i)), Driver: d, Topic: drivers.TopicSpec{Name: topic, Partitions: 16, ReplicationFactor: 3},
				Load:   load.Config{Rate: rate, Duration: dur, MessageSize: 1024, Producers: producers / n},
				Shard:  &runner.Shard{Index: i, Count: n, RunID: runner.RunIDFor(topic, start, n), Start: start, Late: 2 * time.Second},
				Ledger: ledger.Options{},
			}
			go func() {
				_, err := runner.Run(context.Background(), cfg)
				d.Close()
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		cpu := cpuSeconds() - cpu0
		d, _ := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
		var dirs []string
		for i := range n {
			dirs = append(dirs, filepath.Join(base, fmt.Sprint(i)))
		}
		res, err := runner.VerifyShards(context.Background(), filepath.Join(base, "merged"), dirs, d, verifier.Options{}, 30*time.Second, nil)
		d.Close()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		took := res.LoadEnd.Sub(res.LoadStart).Seconds()
		t.Logf("%d shard(s): verdict %s, %d acked of %d sent, %.0f acked/s over the load (%.1fs), shed %s, %.1f CPU-s per 1M acked (shards and kfake, one process)",
			n, res.Verdict, res.Acked, res.Sent, float64(res.Acked)/took, took, res.ShedText(), cpu/float64(res.Acked)*1e6)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// TestShardVerifyFigures records ids IDs (a send, an ack, a read each) as
// 8 shard ledgers and as one ledger, each with its own reads ledger, and
// times the verdict over each in a child process of its own: IDs/s and
// peak RSS.
func TestShardVerifyFigures(t *testing.T) {
	if dir := os.Getenv("ACKCHECK_SHARD_BENCH_CHILD"); dir != "" {
		verifyChild(t, dir)
		return
	}
	ids, _ := strconv.ParseInt(os.Getenv("ACKCHECK_SHARD_BENCH_IDS"), 10, 64)
	if ids <= 0 {
		t.Skip("ACKCHECK_SHARD_BENCH_IDS is not set")
	}
	for _, n := range []int{1, 8} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(n))
		t0 := time.Now()
		synthShards(t, dir, ids, n)
		t.Logf("%d ledger(s): %d IDs recorded in %s", n, ids, time.Since(t0).Round(time.Millisecond))
		child := exec.Command(os.Args[0], "-test.run=^TestShardVerifyFigures$")
		child.Env = append(os.Environ(), "ACKCHECK_SHARD_BENCH_CHILD="+dir)
		out, err := child.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		i := strings.Index(string(out), "FIGURES ")
		if i < 0 {
			t.Fatalf("child printed no figures:\n%s", out)
		}
		var secs float64
		var rssKiB, acked int64
		fmt.Sscan(string(out[i+len("FIGURES "):]), &secs, &rssKiB, &acked)
		if acked != ids {
			t.Fatalf("%d ledger(s): verdict saw %d acked of %d", n, acked, ids)
		}
		t.Logf("%d ledger(s): verify %d IDs in %.2fs = %.0f IDs/s, peak RSS %.1f MiB", n, ids, secs, float64(ids)/secs, float64(rssKiB)/1024)
		os.RemoveAll(dir)
	}
}

// synthShards writes, under dir, n shard ledgers (one: a run of its
// own) holding ids IDs of 4 producers per ledger over 16 partitions, all
// acked, and one reads ledger with a copy of each.
func synthShards(t *testing.T, dir string, ids int64, n int) {
	const producers, partitions = 4, 16
	start := time.Now().Add(-time.Hour)
	reads, err := ledger.Open(filepath.Join(dir, "reads"), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	offsets := make([]int64, partitions)
	per := ids / int64(n)
	for s := range n {
		l, err := ledger.Open(filepath.Join(dir, fmt.Sprintf("shard-%d", s)), ledger.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		run := ledger.RunInfo{RunID: 1, Driver: "synthetic", Topic: "bench", Producers: producers,
			StartOffsets: drivers.OffsetsOf(map[int32]int64{}), LoadStart: start, LoadEnd: start.Add(time.Hour), Clean: true}
		if n > 1 {
			run.Shard = &ledger.ShardInfo{Index: s, Count: n, ProducerBase: uint32(s * producers)}
		}
		for p := range partitions {
			run.StartOffsets.Set(int32(p), 0)
		}
		interval := time.Hour / time.Duration(per)
		for i := range per {
			p := uint32(s*producers) + uint32(i%producers)
			seq := uint64(i / producers)
			part := int32(i % partitions)
			intended := start.Add(time.Duration(i) * interval)
			off := offsets[part]
			offsets[part]++
			l.Record(ledger.Send, ledger.Event{Producer: p, Seq: seq, Time: intended.UnixNano(), Partition: part})
			l.Record(ledger.Outcome, ledger.Event{Producer: p, Seq: seq, Status: ledger.OutcomeAcked, Partition: part, Offset: off,
				Time: int64(2*time.Millisecond + time.Duration(i%1000)*time.Microsecond)})
			reads.Record(ledger.Read, ledger.Event{Producer: p, Seq: seq, Partition: part, Offset: off, Time: intended.Add(time.Hour).UnixNano(), Status: uint8(message.Valid)})
		}
		if err := l.PutMeta(ledger.MetaRun, run); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := reads.PutMeta(verifier.MetaReadBack, verifier.ReadBackReport{RunID: verifier.RunIDText(1), At: time.Now(), Complete: true, Records: ids}); err != nil {
		t.Fatal(err)
	}
	if err := reads.Close(); err != nil {
		t.Fatal(err)
	}
}

// verifyChild judges the ledgers under dir, read-only as verify opens
// them, and prints the seconds, its peak RSS (KiB) and the acked count.
func verifyChild(t *testing.T, dir string) {
	reads, err := ledger.OpenReadOnly(filepath.Join(dir, "reads"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reads.Close()
	dirs, _ := filepath.Glob(filepath.Join(dir, "shard-*"))
	var lg verifier.Ledgers
	lg.Reads = reads
	for i, d := range dirs {
		l, err := ledger.OpenReadOnly(d, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if len(dirs) == 1 {
			lg.Run = l
		} else {
			lg.Shards = append(lg.Shards, verifier.Shard{Index: i, Dir: d, Ledger: l})
		}
	}
	t0 := time.Now()
	res, err := verifier.CheckLedgers(context.Background(), lg, verifier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secs := time.Since(t0).Seconds()
	if res.Verdict != verifier.Pass {
		t.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("FIGURES %f %d %d\n", secs, ru.Maxrss, res.Acked)
}
