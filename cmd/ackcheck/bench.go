package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	var (
		ids           []int64
		dir           string
		onlyDir       string
		peer          bool
		shape         peerShape
		peerChild     string
		peerShapeJSON string
		repeat        int
		pairs         []string
		rates         []float64
		rateSeconds   float64
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure ledger recording, verification speed and verification memory",
		Long: `bench measures, on this machine, in one run:
  - acks recorded per second by the ledger on one core (target: 1,000,000);
  - IDs verified per second by the verdict's merge of sorted scans (target: 5,000,000);
  - the peak RSS of a process that only verifies N acked IDs, for each N given,
    so that the ratio between sizes shows whether memory grows with the IDs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onlyDir != "" { // child mode: verify one prepared ledger, print the time
				return benchVerifyOnly(cmd, onlyDir)
			}
			if peerChild != "" { // child mode: one workload of the peer benchmark
				return runPeerChild(cmd, peerChild, peerShapeJSON)
			}
			if avail, from, ok := availableMemory(); ok && peer {
				if err := shape.validate(avail, from); err != nil {
					return err
				}
			}
			if dir == "" {
				d, err := os.MkdirTemp("", "ackcheck-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			if peer {
				return runBenchPeer(cmd, shape, dir, repeat, pairs, rates, rateSeconds)
			}
			return runBench(cmd, dir, ids)
		},
	}
	cmd.Flags().Int64SliceVar(&ids, "ids", []int64{1_000_000, 10_000_000}, "acked IDs in each verification measurement")
	cmd.Flags().StringVar(&dir, "dir", "", "scratch directory (default: a temporary one, removed after)")
	cmd.Flags().StringVar(&onlyDir, "verify-only", "", "internal: verify the ledger in this directory and exit")
	cmd.Flags().MarkHidden("verify-only")
	cmd.Flags().BoolVar(&peer, "peer", false, "compare ackcheck with bare franz-go doing the same work: CPU per 1M messages, msg/s and peak RSS, with the ratios")
	cmd.Flags().StringSliceVar(&shape.Brokers, "brokers", nil, "with --peer: a Kafka to measure against (default: kfake in this process, not counted)")
	cmd.Flags().IntVar(&shape.Messages, "messages", 1_000_000, "with --peer: messages per workload")
	cmd.Flags().IntVar(&shape.Size, "message-size", load.Defaults().MessageSize, "with --peer: bytes per value")
	cmd.Flags().IntVar(&shape.Producers, "producers", load.Defaults().Producers, "with --peer: producer clients (ackcheck's default)")
	cmd.Flags().IntVar(&shape.Partitions, "partitions", 16, "with --peer: partitions")
	cmd.Flags().StringVar(&shape.Linger, "linger", "5ms", "with --peer: producer linger (ackcheck's default)")
	cmd.Flags().IntVar(&shape.MaxInFlight, "max-in-flight", load.Defaults().MaxInFlight, "with --peer: sends awaiting an outcome at most (ackcheck's default; the bare clients share it)")
	cmd.Flags().Float64Var(&shape.Rate, "rate", 50_000, "with --peer: the paced workloads' rate")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "with --peer: rounds of every workload; the table gives each figure's median")
	cmd.Flags().StringSliceVar(&pairs, "pairs", []string{"unpaced", "paced", "read"}, "with --peer: the comparisons to run (read needs unpaced)")
	cmd.Flags().Float64SliceVar(&rates, "rates", nil, "with --peer: instead of the pairs, find each one's ceiling: offer each rate, paced, to the bare client and to ackcheck, and give the highest at which pacing lag p99 < 1 ms and nothing is shed")
	cmd.Flags().Float64Var(&rateSeconds, "rate-seconds", 4, "with --rates: seconds each rate is offered")
	cmd.Flags().StringVar(&shape.Driver, "driver", "", "with --peer: the broker whose bare client ackcheck is measured against (default: the first that has one)")
	cmd.Flags().StringVar(&peerChild, "peer-child", "", "internal: run one peer workload")
	cmd.Flags().StringVar(&peerShapeJSON, "peer-shape", "", "internal: the peer workload's shape")
	cmd.Flags().MarkHidden("peer-child")
	cmd.Flags().MarkHidden("peer-shape")
	return cmd
}

func runBench(cmd *cobra.Command, dir string, ids []int64) error {
	out := cmd.OutOrStdout()
	// 1. Recording on one core.
	prev := runtime.GOMAXPROCS(1)
	l, err := ledger.Open(filepath.Join(dir, "record"), ledger.Options{})
	if err != nil {
		return err
	}
	const n = 10_000_000
	start := time.Now()
	for i := 0; i < n; i++ {
		seq := uint64(i >> 2)
		l.Record(ledger.Outcome, ledger.Event{Producer: uint32(i & 3), Seq: seq, Status: ledger.OutcomeAcked,
			Partition: int32(seq & 15), Offset: int64(seq >> 4), Time: 2_000_000 + int64(i&1023)})
	}
	if err := l.Close(); err != nil {
		return err
	}
	rec := time.Since(start)
	runtime.GOMAXPROCS(prev)
	fmt.Fprintf(out, "record: %d acks in %s on 1 core = %.0f acks/s (target 1,000,000: %.1fx)\n",
		n, rec.Round(time.Millisecond), n/rec.Seconds(), n/rec.Seconds()/1e6)

	// 2 and 3. Verification speed and memory, each size in its own process.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rss []int64
	for _, k := range ids {
		ldir := filepath.Join(dir, fmt.Sprintf("verify-%d", k))
		l, err := ledger.Open(ldir, ledger.Options{NoSync: true})
		if err != nil {
			return err
		}
		recStart := time.Now()
		if err := verifier.SyntheticRun(l, k, 4, 16); err != nil {
			l.Close()
			return err
		}
		if err := l.Close(); err != nil {
			return err
		}
		recTook := time.Since(recStart)
		size := dirBytes(ldir)
		child := exec.CommandContext(cmd.Context(), self, "bench", "--verify-only", ldir)
		child.Stderr = os.Stderr
		o, err := child.Output()
		if err != nil {
			return fmt.Errorf("verify %d IDs: %w", k, err)
		}
		var secs float64
		var maxRSS int64
		if _, err := fmt.Sscan(string(o), &secs, &maxRSS); err != nil {
			return fmt.Errorf("verify %d IDs: unreadable child output %q", k, o)
		}
		rss = append(rss, maxRSS)
		fmt.Fprintf(out, "ledger: %d IDs (a send, an ack and a read each) recorded in %.2fs = %.0f events/s on all cores, %.1f bytes per ID on disk\n",
			k, recTook.Seconds(), 3*float64(k)/recTook.Seconds(), float64(size)/float64(k))
		fmt.Fprintf(out, "verify: %d IDs in %.2fs = %.0f IDs/s (target 5,000,000: %.1fx), peak RSS %.1f MiB\n",
			k, secs, float64(k)/secs, float64(k)/secs/5e6, float64(maxRSS)/1024)
		os.RemoveAll(ldir)
	}
	if len(rss) > 1 {
		fmt.Fprintf(out, "verify memory: %.0fx the IDs took %.2fx the peak RSS\n",
			float64(ids[len(ids)-1])/float64(ids[0]), float64(rss[len(rss)-1])/float64(rss[0]))
	}
	return nil
}

func benchVerifyOnly(cmd *cobra.Command, dir string) error {
	l, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	start := time.Now()
	res, err := verifier.Check(context.Background(), l, verifier.Options{})
	if err != nil {
		return err
	}
	if res.Verdict != verifier.Pass {
		return fmt.Errorf("synthetic run judged %s: %v", res.Verdict, res.Reasons)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%f %d\n", time.Since(start).Seconds(), peakRSSKiB())
	return nil
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// peakRSSKiB reads this process's own peak RSS (VmHWM). The rusage of a
// child is no use here: Go starts children with vfork, so a child's
// ru_maxrss includes the parent's memory at the time of the fork.
func peakRSSKiB() int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return -1
}
