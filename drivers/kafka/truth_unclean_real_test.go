package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
)

// runRealSchedule runs a load with a fault schedule on the shared real
// cluster and returns the verdict and the run directory. The cluster is
// whole again when it returns.
func runRealSchedule(t *testing.T, k *kafka.Cluster, topic drivers.TopicSpec, rate float64, dur time.Duration, schedule string) (*verifier.Result, string) {
	t.Helper()
	d := realDriver(t, k, kafka.Config{})
	steps, err := faults.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: topic,
		Load: load.Config{Rate: rate, Duration: dur, Producers: 2, MessageSize: 512, LiveRead: false,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, Steps: steps, RecoveryTimeout: 20 * time.Second},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not whole after the scenario: %v", err)
	}
	return res, out
}

// checkOnTime fails t for every scheduled fault that fired more than
// 100 ms away from its due time.
func checkOnTime(t *testing.T, res *verifier.Result) {
	t.Helper()
	for _, f := range res.Faults {
		if f.DueS == nil {
			continue
		}
		slip := f.AtS - *f.DueS
		t.Logf("%s %s: due %.3f s, fired %.3f s (%+.0f ms)", f.Action, f.Target, *f.DueS, f.AtS, slip*1000)
		if f.Result != faults.Applied || slip < 0 || slip > 0.1 {
			t.Errorf("%s %s: %s, due %.3f s, fired %.3f s: want applied within 100 ms", f.Action, f.Target, f.Result, *f.DueS, f.AtS)
		}
	}
}

// A pause followed 2 s later by a kill of another node: both fire within
// 100 ms of their due times, though every metadata read that asks the
// paused broker waits for its deadline.
func TestRealFaultsOnTime(t *testing.T) {
	k := realCluster(t)
	topic := drivers.TopicSpec{Name: scenariotest.TopicName(t), Partitions: 6, ReplicationFactor: 3}
	res, _ := runRealSchedule(t, k, topic, 300, 12*time.Second,
		"at=3s pause node:1; at=5s kill node:3; at=6s resume node:1; at=8s restart node:3")
	scenariotest.SaveSummary(t, "faults-on-time", res)
	if len(res.Faults) != 4 {
		t.Fatalf("%d faults recorded, want 4", len(res.Faults))
	}
	checkOnTime(t, res)
	if res.Lost != 0 {
		t.Errorf("lost %d with acks=all and RF 3", res.Lost)
	}
	// The kernel's account of when the restart fired, which ackcheck did
	// not compute: the start time of the process it started, from
	// /proc/PID/stat, within 100 ms of the restart's due time.
	for _, f := range res.Faults {
		if f.Action != faults.Restart || f.DueS == nil || f.PID == 0 {
			continue
		}
		started, err := processStart(f.PID)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		due := res.LoadStart.Add(time.Duration(*f.DueS * float64(time.Second)))
		t.Logf("oracle: restart due %s, the kernel started PID %d at %s (%+.0f ms)", due.Format("15:04:05.000"), f.PID,
			started.Format("15:04:05.000"), float64(started.Sub(due))/float64(time.Millisecond))
		if d := started.Sub(due); d < -20*time.Millisecond || d > 100*time.Millisecond {
			t.Errorf("the kernel started the restarted node %s after the restart was due; ackcheck says it fired %.0f ms after", d, (f.AtS-*f.DueS)*1000)
		}
	}
}

// processStart is when the kernel started pid: /proc/PID/stat's start
// time (clock ticks since boot, 100 a second here) on the wall clock,
// whose boot time is now minus /proc/uptime. Good to about 20 ms.
func processStart(pid int) (time.Time, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, fmt.Errorf("read the restarted process's stat: %w", err)
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64) // field 22 of stat, 20th after the name and state
	if err != nil {
		return time.Time{}, err
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil {
		return time.Time{}, err
	}
	boot := time.Now().Add(-time.Duration(secs * float64(time.Second)))
	return boot.Add(time.Duration(ticks) * 10 * time.Millisecond), nil
}

// lostLines reads lost.jsonl.
func lostLines(t *testing.T, out string) []verifier.LostLine {
	t.Helper()
	f, err := os.Open(filepath.Join(out, verifier.LostFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []verifier.LostLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l verifier.LostLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.ID == "" {
			t.Fatalf("lost.jsonl line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// The unclean-election truth. A topic of RF 2 with min.insync.replicas=1
// on the shared 3-node cluster: node 1 is paused until the controller
// fences it and the partitions it shares with node 3 shrink their ISR to
// node 3 alone, which acks alone; node 3 is killed, node 1 resumed. With
// unclean election on, the controller elects node 1, which lacks what
// node 3 acked alone, and node 3 truncates when it returns: the verdict
// must FAIL, every lost message must be on a partition the controller
// logged as an unclean election (new leader outside the old ISR), at or
// above the offset node 3 truncated to, and the count must be what those
// truncations account for. With it off, the partitions wait offline for
// node 3 and nothing is lost.
func TestRealUncleanElectionOracle(t *testing.T) {
	k := realCluster(t)
	// Pause at 2 s; the controller fences node 1 after its 9 s session
	// timeout; node 3 then leads the shared partitions alone until the
	// kill at 15 s, 2 s after which node 1 resumes.
	const schedule = "at=2s pause node:1; at=15s kill node:3; at=17s resume node:1; at=21s restart node:3"
	for _, unclean := range []bool{true, false} {
		t.Run(fmt.Sprintf("unclean=%v", unclean), func(t *testing.T) {
			topic := drivers.TopicSpec{Name: scenariotest.TopicName(t), Partitions: 6, ReplicationFactor: 2, Configs: map[string]string{
				"min.insync.replicas": "1", "unclean.leader.election.enable": strconv.FormatBool(unclean)}}
			start := time.Now()
			res, out := runRealSchedule(t, k, topic, 300, 26*time.Second, schedule)
			scenariotest.SaveSummary(t, fmt.Sprintf("unclean-election-%v", unclean), res)
			checkOnTime(t, res)
			u, err := k.Unclean(topic.Name, start)
			if err != nil {
				t.Fatalf("oracle: %v", err)
			}
			for _, l := range u.Lines {
				t.Logf("oracle: %s", l)
			}
			elections, truncatedTo := u.Elections, u.TruncatedTo
			lines := lostLines(t, out)
			if int64(len(lines)) != res.Lost {
				t.Fatalf("lost.jsonl lists %d, lost %d", len(lines), res.Lost)
			}
			if !unclean {
				if res.Lost != 0 || res.Verdict != verifier.Pass {
					t.Fatalf("unclean election off: lost %d, verdict %s %v", res.Lost, res.Verdict, res.Reasons)
				}
				if len(elections) != 0 {
					t.Fatalf("unclean election off, but the oracle read unclean elections %v", elections)
				}
				return
			}
			if res.Verdict != verifier.Fail || res.Lost == 0 {
				t.Fatalf("unclean election on: verdict %s, lost %d: want FAIL with losses", res.Verdict, res.Lost)
			}
			if len(elections) == 0 {
				t.Fatal("oracle: the controller logged no unclean election: the scenario did not happen")
			}
			byPart := map[int32][]verifier.LostLine{}
			for _, l := range lines {
				byPart[l.Partition] = append(byPart[l.Partition], l)
			}
			var parts []int32
			for p := range byPart {
				parts = append(parts, p)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			for _, p := range parts {
				ls := byPart[p]
				e, ok := elections[p]
				if !ok {
					t.Errorf("partition %d lost %d messages, but the controller logged no unclean election of it", p, len(ls))
					continue
				}
				to, ok := truncatedTo[p]
				if !ok {
					t.Errorf("partition %d: unclean election at %s, but no replica logged a truncation after it", p, e.At.Format("15:04:05.000"))
					continue
				}
				lowest, highest := ls[0].AckedOffset, ls[0].AckedOffset
				offsets := map[int64]bool{}
				for _, l := range ls {
					if l.AckedOffset < to {
						t.Errorf("partition %d: lost message %s acked at offset %d, below the %d the old leader truncated to", p, l.ID, l.AckedOffset, to)
					}
					// Node 3 led alone only while node 1 was away: the
					// summary must put the loss next to that fault.
					if !slices.ContainsFunc(l.InForce, func(s string) bool { return strings.HasPrefix(s, "node 1 paused") }) {
						t.Errorf("partition %d: lost message %s acked at %.3f s with %v in force, not the pause of node 1", p, l.ID, l.AckedS, l.InForce)
					}
					if l.AckedAt.After(e.At) {
						t.Errorf("partition %d: lost message %s acked at %s, after the unclean election at %s", p, l.ID, l.AckedAt.Format("15:04:05.000"), e.At.Format("15:04:05.000"))
					}
					lowest, highest = min(lowest, l.AckedOffset), max(highest, l.AckedOffset)
					offsets[l.AckedOffset] = true
				}
				// What the truncation can account for: the offsets from the
				// truncation point to the last one the old leader acked. Each
				// lost one is distinct; a few at the end may have been
				// written but not acked (in flight when node 3 died).
				span := highest - to + 1
				t.Logf("partition %d: unclean election (isr %v -> leader %d) at %s, truncated to %d; lost %d at offsets %d-%d (span from the truncation %d); ackcheck: %s",
					p, e.OldISR, e.NewLeader, e.At.Format("15:04:05.000"), to, len(ls), lowest, highest, span, res.PartitionLossText(p))
				if int64(len(offsets)) != int64(len(ls)) || int64(len(ls)) > span || int64(len(ls)) < span*95/100 {
					t.Errorf("partition %d: %d lost at %d distinct offsets, but the truncation to %d accounts for %d (offsets %d-%d)",
						p, len(ls), len(offsets), to, span, to, highest)
				}
				if pl := res.LostByPartition[p]; pl == nil || pl.Count != int64(len(ls)) || pl.FirstOffset != lowest || pl.LastOffset != highest {
					t.Errorf("partition %d: lost_by_partition %+v disagrees with lost.jsonl (%d at %d-%d)", p, pl, len(ls), lowest, highest)
				}
			}
		})
	}
}
