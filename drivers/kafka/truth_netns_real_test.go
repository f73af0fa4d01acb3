package kafka_test

import (
	"context"
	"fmt"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// The Kafka truth table of issue 26, on the 3-node Kafka whose nodes run
// in network namespaces (ACKCHECK_KAFKA_NETNS_DIR; .ci/run starts it with
// `cluster kafka up --netns`). Each case is checked against Kafka's own
// logs, an account ackcheck did not compute: the controller's "Fencing
// broker", the leaders' "ISR updated to", and "Truncating partition ... to
// offset" of the replica that lost data. A lossy case that did not lose in
// a run is reported as such (t.Log), never retried until it does.

const envKafkaNetns = "ACKCHECK_KAFKA_NETNS_DIR"

func netnsCluster(t *testing.T) *kafka.Cluster {
	t.Helper()
	dir := os.Getenv(envKafkaNetns)
	if dir == "" {
		t.Skipf("%s is not set (.ci/run starts one: ackcheck cluster kafka up --netns --dir D)", envKafkaNetns)
	}
	k, err := kafka.OpenCluster(kafka.ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if k.Net() == nil {
		t.Fatalf("%s=%s holds a cluster started without --netns", envKafkaNetns, dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := k.WaitReady(ctx, 90*time.Second); err != nil {
		t.Fatalf("the cluster in namespaces is not ready: %v", err)
	}
	return k
}

// runNetnsSchedule runs a load with a fault schedule on the cluster in
// namespaces, its driver dialling through the Net's hub as --cluster-dir
// would make it, and returns the verdict and the run directory.
func runNetnsSchedule(t *testing.T, k *kafka.Cluster, acks string, topic drivers.TopicSpec, dur time.Duration, schedule string) (*verifier.Result, string) {
	t.Helper()
	d, err := kafka.New(kafka.Config{Brokers: k.Brokers(), NetNS: k.Net().Prefix, Acks: acks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	steps, err := faults.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: topic,
		Load:   load.Config{Rate: 300, Duration: dur, Producers: 2, MessageSize: 512, DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, Steps: steps, RecoveryTimeout: 30 * time.Second},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not whole after the scenario: %v", err)
	}
	return res, out
}

// faultTime is when the run's i-th fault fired, on the wall clock the
// brokers' logs use.
func faultTime(res *verifier.Result, i int) time.Time {
	return res.LoadStart.Add(time.Duration(res.Faults[i].AtS * float64(time.Second)))
}

var (
	fencingLine  = regexp.MustCompile(`Fencing broker (\d+)`)
	isrUpdated   = regexp.MustCompile(`\[Partition (\S+)-(\d+) broker=(\d+)\] ISR updated to ([\d,]+)`)
	truncatingTo = regexp.MustCompile(`Truncating partition (\S+)-(\d+) with TruncationState\(offset=(\d+)`)
)

// kafkaTruth is what the brokers' logs say happened to a topic from a
// time on.
type kafkaTruth struct {
	fenced map[int32]time.Time // broker -> first "Fencing broker N"
	// truncatedTo: node -> partition -> the lowest offset it truncated to.
	truncatedTo map[int32]map[int32]int64
	isrLines    int
	lines       []string
}

func readKafkaTruth(t *testing.T, k *kafka.Cluster, topic string, since time.Time) kafkaTruth {
	t.Helper()
	var logs []kafka.NodeLog
	for _, id := range k.Nodes() {
		f, err := os.Open(k.LogFile(id))
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		defer f.Close()
		logs = append(logs, kafka.NodeLog{Node: id, Log: f})
	}
	tr := kafkaTruth{fenced: map[int32]time.Time{}, truncatedTo: map[int32]map[int32]int64{}}
	note := func(node int32, at time.Time, s string) {
		tr.lines = append(tr.lines, fmt.Sprintf("node %d at %s: %s", node, at.Format("15:04:05.000"), s))
	}
	err := kafka.LogLines(logs, since, time.Time{}, func(node int32, at time.Time, line string) {
		if m := fencingLine.FindStringSubmatch(line); m != nil {
			b, _ := strconv.Atoi(m[1])
			if _, ok := tr.fenced[int32(b)]; !ok {
				tr.fenced[int32(b)] = at
			}
			note(node, at, m[0])
		}
		if m := isrUpdated.FindStringSubmatch(line); m != nil && m[1] == topic {
			tr.isrLines++
			note(node, at, m[0])
		}
		if m := truncatingTo.FindStringSubmatch(line); m != nil && m[1] == topic {
			p, _ := strconv.Atoi(m[2])
			off, _ := strconv.ParseInt(m[3], 10, 64)
			if tr.truncatedTo[node] == nil {
				tr.truncatedTo[node] = map[int32]int64{}
			}
			if cur, ok := tr.truncatedTo[node][int32(p)]; !ok || off < cur {
				tr.truncatedTo[node][int32(p)] = off
			}
			note(node, at, m[0])
		}
	})
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	for _, l := range tr.lines {
		t.Logf("oracle: %s", l)
	}
	return tr
}

// checkLossWithinTruncation fails t unless every lost message is on a
// partition whose replica on node truncated after the losses, at or
// above the offset it truncated to, and no partition lost more than the
// truncation's span accounts for. It returns the losses by partition.
func checkLossWithinTruncation(t *testing.T, res *verifier.Result, out string, tr kafkaTruth, node int32) map[int32]int {
	t.Helper()
	lines := lostLines(t, out)
	if int64(len(lines)) != res.Lost {
		t.Fatalf("lost.jsonl lists %d, lost %d", len(lines), res.Lost)
	}
	byPart := map[int32][]verifier.LostLine{}
	for _, l := range lines {
		byPart[l.Partition] = append(byPart[l.Partition], l)
	}
	counts := map[int32]int{}
	for p, ls := range byPart {
		counts[p] = len(ls)
		to, ok := tr.truncatedTo[node][p]
		if !ok {
			t.Errorf("partition %d lost %d acked messages, but node %d logged no truncation of it", p, len(ls), node)
			continue
		}
		highest := int64(-1)
		for _, l := range ls {
			if l.AckedOffset < to {
				t.Errorf("partition %d: lost message %s acked at offset %d, below the %d node %d truncated to", p, l.ID, l.AckedOffset, to, node)
			}
			highest = max(highest, l.AckedOffset)
		}
		span := highest - to + 1
		t.Logf("partition %d: node %d truncated to offset %d; ackcheck lost %d acked at offsets up to %d (the truncation accounts for at most %d)", p, node, to, len(ls), highest, span)
		if int64(len(ls)) > span {
			t.Errorf("partition %d: %d lost, more than the %d offsets from the truncation point %d to %d", p, len(ls), span, to, highest)
		}
	}
	return counts
}

// Cases 1 and 2: the leader of the most partitions is cut off from the
// other nodes for 30 s; the client still reaches it.
//   - acks=all (RF 3, min.insync 2): nothing acked is lost; acks stop for
//     the partitions it led until the others elect new leaders.
//   - acks=1: the isolated leader keeps acking until it is fenced and its
//     partitions move, then truncates when it returns: acked messages lost
//     in most runs, never more than the logs say it truncated.
func TestRealNetnsPartitionLeaderTruth(t *testing.T) {
	k := netnsCluster(t)
	for _, acks := range []string{"all", "1"} {
		t.Run("acks="+acks, func(t *testing.T) {
			topic := drivers.TopicSpec{Name: scenariotest.TopicName(t), Partitions: 6, ReplicationFactor: 3,
				Configs: map[string]string{"min.insync.replicas": "2"}}
			schedule := fmt.Sprintf("at=8s partition most-leaders:%s; at=38s heal-network", topic.Name)
			res, out := runNetnsSchedule(t, k, acks, topic, 50*time.Second, schedule)
			scenariotest.SaveSummary(t, "netns-partition-leader-acks-"+acks, res)
			if len(res.Faults) != 2 || res.Faults[0].Result != faults.Applied || res.Faults[1].Result != faults.Applied {
				t.Fatalf("faults: %+v: want the partition and its heal applied", res.Faults)
			}
			node := res.Faults[0].Node
			// From the partition on: the truncations to offset 0 that a
			// new topic's replicas log when it is created are no loss.
			tr := readKafkaTruth(t, k, topic.Name, faultTime(res, 0))
			// The partition happened as meant: the controller fenced the
			// isolated node (it stopped heartbeating to the quorum).
			if _, ok := tr.fenced[node]; !ok {
				t.Fatalf("oracle: no 'Fencing broker %d' in the logs: the partition did not isolate it", node)
			}
			// "ISR updated to" is evidence, not a requirement: in KRaft the
			// controller drops a fenced broker from the ISRs (logged by
			// state.change.logger, which the cluster keeps at WARN), and a
			// leader logs the line only when it changes the ISR itself, as
			// on the isolated node's return in some runs and not others.
			t.Logf("oracle: node %d fenced at %s; %d 'ISR updated to' lines for %s", node, tr.fenced[node].Format("15:04:05.000"), tr.isrLines, topic.Name)
			if acks == "all" {
				if res.Lost != 0 || res.Verdict != verifier.Pass {
					t.Fatalf("acks=all: lost %d, verdict %s %v: want PASS", res.Lost, res.Verdict, res.Reasons)
				}
				// Recovery after the heal, as for a kill: measured, and
				// printed beside the controller's own account (the node
				// unfenced, back in every ISR), which the test reads here.
				f := res.Faults[0]
				if f.ReadyMs <= 0 || f.InSyncMs <= 0 || f.SlowestFirstAckMs < 0 {
					t.Fatalf("partition: ready %.0f ms, in sync %.0f ms, first ack %.0f ms: recovery not measured", f.ReadyMs, f.InSyncMs, f.SlowestFirstAckMs)
				}
				checkProductOracle(t, k, res)
				return
			}
			counts := checkLossWithinTruncation(t, res, out, tr, node)
			if res.Lost == 0 {
				t.Logf("acks=1: this run lost nothing acked (node %d fenced at %s; truncations %v): the lossy case did not lose this time", node, tr.fenced[node].Format("15:04:05.000"), tr.truncatedTo[node])
				if res.Verdict != verifier.Pass {
					t.Errorf("nothing lost, but verdict %s %v", res.Verdict, res.Reasons)
				}
				return
			}
			if res.Verdict != verifier.Fail {
				t.Errorf("acks=1: lost %d, verdict %s: want FAIL", res.Lost, res.Verdict)
			}
			// Every lost message was acked by the isolated leader while cut
			// off, or just before, while its followers had not fetched it
			// yet (they fetch at least every replica.fetch.wait.max.ms,
			// 500 ms; one run lost a message acked 6 ms before the cut).
			// Those acked in the cut are put against it (they once read
			// "acked while no fault in force"). Acks after the heal are
			// not: the rules are gone then, though the old leader, not yet
			// told it was fenced, still acked for up to 1.7 s after the
			// heal in a run here (174 of 3,170 lost), and lost those too.
			healAt := faultTime(res, 1)
			inCut, afterHeal := 0, 0
			for _, l := range lostLines(t, out) {
				if l.AckedAt.Before(faultTime(res, 0).Add(-time.Second)) {
					t.Errorf("lost message %s acked at %.3f s, more than 1 s before the partition at %.3f s", l.ID, l.AckedS, res.Faults[0].AtS)
				}
				named := slices.ContainsFunc(l.InForce, func(f string) bool { return strings.HasPrefix(f, "partition ") })
				if named {
					inCut++
				}
				switch {
				case !l.AckedAt.Before(healAt):
					afterHeal++
					if named {
						t.Errorf("lost message %s acked at %.3f s, after the heal, is put against the partition", l.ID, l.AckedS)
					}
					// ...but beside it, as acked so long after its end.
					want := fmt.Sprintf(", ended %.1f s before the ack", l.AckedAt.Sub(healAt).Seconds())
					if l.AckedAt.Sub(healAt) <= verifier.AfterFaultWindow && (!strings.HasPrefix(l.AfterFault, "partition ") || !strings.HasSuffix(l.AfterFault, want)) {
						t.Errorf("lost message %s acked %s after the heal: after_fault %q, want the partition%s", l.ID, l.AckedAt.Sub(healAt), l.AfterFault, want)
					}
				case !l.AckedAt.Before(faultTime(res, 0)) && !named:
					t.Errorf("lost message %s acked at %.3f s, in the partition, lists in force %q", l.ID, l.AckedS, l.InForce)
				case l.AfterFault != "":
					t.Errorf("lost message %s acked at %.3f s, before the heal, says after_fault %q", l.ID, l.AckedS, l.AfterFault)
				}
			}
			if inCut == 0 {
				t.Errorf("none of the %d lost messages is put against the partition", res.Lost)
			}
			t.Logf("acks=1: %d lost acked in the cut and put against it, %d acked after the heal", inCut, afterHeal)
			t.Logf("acks=1: lost %d acked, by partition %v; node %d fenced at %s", res.Lost, counts, node, tr.fenced[node].Format("15:04:05.000"))
		})
	}
}

// Case 3: unclean leader election. A topic of RF 2 with
// unclean.leader.election.enable=true and min.insync.replicas=1: its
// follower is cut off until the controller fences it and the ISR shrinks
// to the leader, which acks alone; the leader is killed and the
// follower's cut healed; the controller elects the out-of-sync follower,
// and the old leader truncates when it returns. Loss, each lost message
// within what the old leader truncated.
func TestRealNetnsUncleanElectionTruth(t *testing.T) {
	k := netnsCluster(t)
	topic := drivers.TopicSpec{Name: scenariotest.TopicName(t), Partitions: 1, ReplicationFactor: 2,
		Configs: map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}}
	schedule := fmt.Sprintf("at=5s partition follower:%[1]s/0; at=22s kill leader:%[1]s/0; at=24s heal-network; at=34s restart previous", topic.Name)
	res, out := runNetnsSchedule(t, k, "1", topic, 45*time.Second, schedule)
	scenariotest.SaveSummary(t, "netns-unclean-election", res)
	for _, f := range res.Faults {
		t.Logf("fault %s %s -> node %d: %s", f.Action, f.Target, f.Node, f.Result)
		if f.Result != faults.Applied {
			t.Fatalf("fault %s %s: %s: want applied", f.Action, f.Target, f.Result)
		}
	}
	follower, leader := res.Faults[0].Node, res.Faults[1].Node
	tr := readKafkaTruth(t, k, topic.Name, faultTime(res, 0))
	if _, ok := tr.fenced[follower]; !ok {
		t.Fatalf("oracle: no 'Fencing broker %d': the cut follower was never fenced, so the ISR may not have shrunk", follower)
	}
	u, err := k.Unclean(topic.Name, faultTime(res, 0))
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	for _, l := range u.Lines {
		t.Logf("oracle: %s", l)
	}
	e, elected := u.Elections[0]
	if !elected {
		if res.Lost != 0 {
			t.Fatalf("lost %d, but the controller logged no unclean election", res.Lost)
		}
		t.Logf("no unclean election of %s-0 in this run (follower %d, leader %d): nothing lost; the lossy case did not lose this time", topic.Name, follower, leader)
		return
	}
	t.Logf("unclean election of %s-0 at %s: isr %v -> leader %d", topic.Name, e.At.Format("15:04:05.000"), e.OldISR, e.NewLeader)
	if e.NewLeader != follower {
		t.Errorf("the unclean election chose node %d, not the cut follower %d", e.NewLeader, follower)
	}
	counts := checkLossWithinTruncation(t, res, out, tr, leader)
	if res.Lost == 0 {
		t.Logf("an unclean election, but nothing acked lost in this run (the old leader truncated to %v)", tr.truncatedTo[leader])
		return
	}
	if res.Verdict != verifier.Fail {
		t.Errorf("lost %d, verdict %s: want FAIL", res.Lost, res.Verdict)
	}
	t.Logf("unclean election: lost %d acked (by partition %v)", res.Lost, counts)
}
