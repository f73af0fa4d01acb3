package kafka_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
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
)

// Issue 38's Kafka truths run on the lazyfs cluster .ci/run starts
// (ACKCHECK_KAFKA_LAZYFS_DIR), after TestRealPowerLossUpAgain has taken
// it fresh (this file sorts after cluster_real_test.go), and each leaves
// it whole: every node running and in every ISR, its disk errors ended,
// its files put back, and its topic deleted (a healed file fault puts
// back segments Kafka has since truncated or deleted, which only that
// topic's partitions hold).

// runFileFault runs a load with a fault schedule on k with a fixed seed
// (file faults repeat), then deletes the topic, and returns the verdict,
// the run directory and when the load started.
func runFileFault(t *testing.T, k *kafka.Cluster, d drivers.Driver, topic drivers.TopicSpec, dur time.Duration, schedule string) *verifier.Result {
	t.Helper()
	steps, err := faults.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d, Topic: topic,
		Load:   load.Config{Rate: 300, Duration: dur, Producers: 2, MessageSize: 512, DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 20 * time.Second,
		Faults: &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, Steps: steps, RecoveryTimeout: 30 * time.Second,
			DataFiles: kafka.Profile{}.DataFiles(), Seed: 38},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatalf("cluster not whole after the scenario: %v", err)
	}
	return res
}

// adminFor is a kadm client on k, closed with the test.
func adminFor(t *testing.T, k *kafka.Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// deleteTopic deletes topic, so that the partitions a healed file fault
// left as they were before Kafka repaired them serve no later test.
func deleteTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Errorf("delete topic %s after the test: %v", topic, err)
	}
}

// kafkaLines are the lines of a Kafka server log, written at or after
// since, that match re. A line without a time of its own (a stack
// trace's) was written when the timed line before it was.
func kafkaLines(t *testing.T, path string, since time.Time, re *regexp.Regexp) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	before := false // the last timed line was written before since
	for sc.Scan() {
		l := sc.Text()
		// "[2026-12-03 17:14:33,150] WARN ...", local time.
		if len(l) > 24 && l[0] == '[' {
			if at, err := time.ParseInLocation("2006-01-02 15:04:05,000", l[1:24], time.Local); err == nil {
				before = at.Before(since.Truncate(time.Millisecond))
			}
		}
		if before || !re.MatchString(l) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// TestRealKafkaBitflipThenLeaderKill is issue 38's Kafka file-fault
// truth: node 2 is killed, two bits are flipped in each of its segments
// of the topic (closed ones and the active one: segment.ms=2000 rolls
// one every 2 s), it is restarted, and later the node leading the most
// partitions is killed, so that node 2 may lead. The oracle is Kafka's
// own log: after a SIGKILL it checks every segment past its recovery
// point ("Found invalid messages in log segment F at byte offset N",
// "Corruption found in segment B, truncating to offset X") and fetches
// the rest from the leader. Every file Kafka names must be one ackcheck's
// record says it flipped, and with RF 3 and acks=all nothing acked may be
// lost or read corrupt.
//
// Not tested here (docs/faults.md says what was measured): after a clean
// stop Kafka skips that check ("Skipping recovery of N logs ... since
// clean shutdown file was found"), and a corrupted segment before the
// recovery point is not checked either; such bytes stay on the node
// until a read. The run's heal puts node 2's files back before the
// read-back, so this read-back reads healed files.
func TestRealKafkaBitflipThenLeaderKill(t *testing.T) {
	k := lazyKafka.Get(t)
	adm := adminFor(t, k)
	d := realDriver(t, k, kafka.Config{})
	name := scenariotest.TopicName(t)
	topic := drivers.TopicSpec{Name: name, Partitions: 3, ReplicationFactor: 3, Configs: map[string]string{"segment.ms": "2000"}}
	defer deleteTopic(t, adm, name)
	start := time.Now()
	res := runFileFault(t, k, d, topic, 30*time.Second, fmt.Sprintf(
		"at=6s kill node:2; at=7s bitflip node:2 %s-*/*.log; at=8s restart node:2; at=22s kill most-leaders:%s; at=26s restart", name, name))
	scenariotest.SaveSummary(t, "kafka-bitflip-leader-kill", res)

	// The proof: every fault applied, each file changed by two bits.
	flipped := map[string]faults.FileChange{}
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Fatalf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
		if f.Action != faults.Bitflip {
			continue
		}
		for _, fc := range f.Files {
			flipped[fc.File] = fc
			if len(fc.Bits) != 2 || fc.SHA256Before == fc.SHA256After {
				t.Errorf("%s: bits %v, sha256 %s -> %s", fc.File, fc.Bits, fc.SHA256Before, fc.SHA256After)
			}
		}
	}
	if len(flipped) == 0 {
		t.Fatal("the bitflip changed no file")
	}

	// Kafka's account, node 2's log after the kill: which segments failed
	// their check, and where each partition was cut.
	invalid := regexp.MustCompile(`Found invalid messages in log segment (\S+) at byte offset (\d+)`)
	cutAt := regexp.MustCompile(`\[LogLoader partition=(` + regexp.QuoteMeta(name) + `-\d+), .*Corruption found in segment \d+, truncating to offset (\d+)`)
	said := kafkaLines(t, k.LogFile(2), start, regexp.MustCompile(`Found invalid messages in log segment \S*`+regexp.QuoteMeta(name)+`|`+cutAt.String()+`|Skipping recovery of|Recovering \d+ logs`))
	var named []string
	cuts := map[string]string{}
	for _, l := range said {
		t.Logf("oracle, node 2: %s", l)
		if m := invalid.FindStringSubmatch(l); m != nil {
			named = append(named, m[1])
			if _, ok := flipped[m[1]]; !ok {
				t.Errorf("Kafka found invalid messages in %s, a file the bitflip's record does not list (%d files)", m[1], len(flipped))
			}
		}
		if m := cutAt.FindStringSubmatch(l); m != nil {
			cuts[m[1]] = m[2]
		}
	}
	if len(named) == 0 {
		t.Errorf("node 2's log names no invalid segment after the bitflip of %d files and a SIGKILL: Kafka checks every segment past its recovery point, the active one always", len(flipped))
	}
	t.Logf("Kafka found %d of the %d flipped segments invalid and truncated %v", len(named), len(flipped), cuts)

	t.Logf("kafka bitflip of node 2, then a leader kill: acked %d, lost %d, corrupt %d, phantom %d, verdict %s",
		res.Acked, res.Lost, res.Corrupt, res.Phantom, res.Verdict)
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass || res.Acked < 5000 {
		t.Fatalf("acked %d, lost %d, corrupt %d, phantom %d, verdict %s %v", res.Acked, res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
}

// TestRealKafkaDiskErrorWrite is issue 38's Kafka disk-error truth: every
// write call on node 2's data dir (its lazyfs) fails with EIO from 5 s.
// Kafka's account, node 2's log: each append fails ("ERROR Error while
// appending records to T-P in dir D (...LogDirFailureChannel)",
// "java.io.IOException: Input/output error"), and, its one log dir
// holding the KRaft metadata log too, the metadata append fails and the
// process ends ("Encountered fatal fault: Unexpected error in raft IO
// thread (...ProcessTerminatingFaultHandler)"; with a metadata dir of its
// own Kafka would say "Shutdown broker because all log dirs in D have
// failed"). ackcheck's account: node 2 died on its disk errors (not an
// unexpected death). The other replicas' account, read through kadm
// while it happens: node 2 leaves the ISR of every partition. With RF 3
// and acks=all nothing acked is lost. The schedule then ends the errors
// and starts node 2 again.
func TestRealKafkaDiskErrorWrite(t *testing.T) {
	k := lazyKafka.Get(t)
	adm := adminFor(t, k)
	d := realDriver(t, k, kafka.Config{})
	name := scenariotest.TopicName(t)
	topic := drivers.TopicSpec{Name: name, Partitions: 3, ReplicationFactor: 3}
	defer deleteTopic(t, adm, name)

	// kadm's describe, twice a second while the load runs: the ISRs
	// without node 2.
	var mu sync.Mutex
	var outOfISR []string
	without := map[int32]bool{} // the partitions described without node 2
	watch, stopWatch := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watch.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(watch, 2*time.Second)
			td, err := adm.ListTopics(ctx, name)
			cancel()
			if err != nil || td[name].Err != nil {
				continue
			}
			for _, p := range td[name].Partitions.Sorted() {
				if len(p.ISR) > 0 && !slices.Contains(p.ISR, 2) {
					mu.Lock()
					outOfISR = append(outOfISR, fmt.Sprintf("%s %s/%d isr %v", time.Now().Format("15:04:05.000"), name, p.Partition, p.ISR))
					without[p.Partition] = true
					mu.Unlock()
				}
			}
		}
	}()
	start := time.Now()
	res := runFileFault(t, k, d, topic, 30*time.Second, "at=5s disk-error node:2 write; at=12s disk-ok node:2; at=13s restart node:2")
	stopWatch()
	wg.Wait()
	scenariotest.SaveSummary(t, "kafka-disk-error-write", res)

	var ended string
	died := false
	for _, f := range res.Faults {
		t.Logf("fault %s %s: %s %s %s", f.Action, f.Target, f.Result, f.Error, f.Disk)
		switch {
		case f.Action == faults.DiedOnDiskError && f.Node == 2:
			died = true
		case f.Result != faults.Applied:
			t.Errorf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
		if f.Action == faults.DiskOK {
			ended = f.Disk
		}
	}
	// lazyfs's account: writes were seen and failed.
	if !strings.Contains(ended, "write: ") || strings.Contains(ended, "write: 0 of") {
		t.Errorf("disk-ok says %q: no write failed", ended)
	}

	// Kafka's account: node 2's log says its appends to the topic failed
	// on the I/O error, and why the process ended.
	appendFailed := regexp.MustCompile(`ERROR Error while appending records to ` + regexp.QuoteMeta(name) + `-\d+ in dir `)
	said := kafkaLines(t, k.LogFile(2), start, regexp.MustCompile(`ERROR Error while appending records to|Encountered fatal fault|Shutdown broker because|Stopping serving (logs|replicas) in dir`))
	var appends, ended2 int
	for _, l := range said {
		t.Logf("oracle, node 2: %s", l)
		if appendFailed.MatchString(l) {
			appends++
		}
		if strings.Contains(l, "Encountered fatal fault") || strings.Contains(l, "Shutdown broker because") {
			ended2++
		}
	}
	if appends == 0 || ended2 == 0 {
		t.Errorf("node 2's log: %d failed appends to %s, %d lines saying the broker stopped; want both", appends, name, ended2)
	}
	if died != (ended2 > 0) {
		t.Errorf("ackcheck recorded node 2 dying on its disk errors: %v; Kafka's log says it stopped: %v", died, ended2 > 0)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(without) != topic.Partitions {
		t.Errorf("kadm described %d of the %d partitions with an ISR without node 2", len(without), topic.Partitions)
	}
	if len(outOfISR) > 0 {
		t.Logf("kadm: node 2 out of the ISR in %d describes, first %s, last %s", len(outOfISR), outOfISR[0], outOfISR[len(outOfISR)-1])
	}
	t.Logf("kafka disk-error write on node 2: acked %d, lost %d, corrupt %d, verdict %s", res.Acked, res.Lost, res.Corrupt, res.Verdict)
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass || res.Acked < 5000 {
		t.Fatalf("acked %d, lost %d, corrupt %d, phantom %d, verdict %s %v", res.Acked, res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
}
