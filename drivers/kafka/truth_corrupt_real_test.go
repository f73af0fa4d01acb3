package kafka_test

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// envKafkaTools names a directory of the jars of Kafka's tools
// (org.apache.kafka:kafka-tools:4.3.1 and its dependencies), whose
// DumpLogSegments is bin/kafka-dump-log.sh: the oracle of the test below.
const envKafkaTools = "ACKCHECK_KAFKA_TOOLS_DIR"

// TestRealKafkaCorruptFollowerLeads is issue 38's Kafka truth: a bit of
// a follower's segment is flipped while it is stopped (a clean stop), it
// is started again and rejoins the ISR, then the leader is killed so that
// the corrupted follower leads, and the topic is read back through
// ackcheck's read-back and verifier. RF 3, acks=all, one partition.
//
// The oracle is Kafka's own tool, DumpLogSegments --deep-iteration
// (bin/kafka-dump-log.sh) on the flipped segment: the batches it says are
// not valid ("isValid: false") must be exactly the spans ackcheck read as
// damaged, and every acked message in them is corrupt (and, with no intact
// copy, lost): the verdict fails. What Kafka logs meanwhile is logged.
func TestRealKafkaCorruptFollowerLeads(t *testing.T) {
	k := realCluster(t)
	tools := kafkaTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := adminFor(t, k)
	name := scenariotest.TopicName(t)
	began := time.Now()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": ptr("2")}, name); err != nil {
		t.Fatal(err)
	}
	defer deleteTopic(t, adm, name)
	const n = 4000
	c := corruptFollowerThenLead(t, ctx, k, adm, tools, name, n)
	run, info, first, last, invalid := c.run, c.info, c.first, c.last, c.invalid

	// ackcheck's account: the read-back and the verdict.
	d := realDriver(t, k, kafka.Config{})
	reads, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reads.Close()
	rb, err := verifier.ReadBack(ctx, d, reads, info, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifier.CheckLedgers(ctx, verifier.Ledgers{Run: run, Reads: reads}, verifier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "kafka-corrupt-follower-leads", res)
	t.Logf("read-back in %s: %d records, %d damaged, complete %v, damaged spans %+v, notes %v", rb.Took.Round(time.Millisecond), rb.Records, rb.DamagedRecords, rb.Complete, rb.Damaged, rb.Notes)
	t.Logf("acked %d, lost %d, corrupt %d, phantom %d, verdict %s %v", res.Acked, res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)

	// What Kafka logged meanwhile, on every node.
	// (Case matters: the topic's name holds "corrupt".)
	said := regexp.MustCompile(`CorruptRecordException|Found invalid messages|is invalid|Corruption found|CRC|crc |Skipping recovery|Recovering \d+ logs|UNCLEAN|Truncating partition ` + regexp.QuoteMeta(name))
	for _, id := range k.Nodes() {
		for _, l := range kafkaLines(t, k.LogFile(id), began, said) {
			t.Logf("kafka, node %d: %s", id, l)
		}
	}

	var spans [][2]int64
	for _, s := range rb.Damaged[0] {
		spans = append(spans, [2]int64{s.First, s.Last})
	}
	batch := last - first + 1
	if !slices.Equal(spans, invalid) || rb.DamagedRecords != batch || !rb.Complete {
		t.Fatalf("ackcheck read damaged spans %v (%d records, complete %v); kafka-dump-log says %v (%d records)", spans, rb.DamagedRecords, rb.Complete, invalid, batch)
	}
	if res.Acked != n || res.Corrupt != batch || res.Lost != batch || res.Verdict != verifier.Fail {
		t.Fatalf("acked %d, corrupt %d, lost %d, verdict %s; want %d, %d, %d, fail", res.Acked, res.Corrupt, res.Lost, res.Verdict, n, batch, batch)
	}
}

// TestRealKafkaCorruptLeaderReplicates asks what Kafka itself says of
// the damaged batch when a replica must copy it: as the test above, with
// RF 2 (min.insync.replicas 1) so that a third node is free, the
// corrupted follower leads; then the partition is reassigned to it and
// the free node, which must fetch the whole log from the corrupted leader.
// Kafka's account: the new replica's fetcher checks each batch's CRC on
// append and fails the whole fetch, again every second: "ERROR
// [ReplicaFetcher replicaId=F, leaderId=L] Found invalid messages during
// fetch for partition T-0 offset 0" (the fetch's offset, not the batch's)
// and "CorruptRecordException: Record is corrupt (stored crc = C) in topic
// partition T-0", C the flipped batch's stored CRC; the new replica
// never joins the ISR. Nothing of this reaches a consumer: the corrupted
// leader serves the batch as it is.
func TestRealKafkaCorruptLeaderReplicates(t *testing.T) {
	k := realCluster(t)
	tools := kafkaTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := adminFor(t, k)
	name := scenariotest.TopicName(t)
	began := time.Now()
	if _, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"min.insync.replicas": ptr("1")}, name); err != nil {
		t.Fatal(err)
	}
	defer deleteTopic(t, adm, name)
	c := corruptFollowerThenLead(t, ctx, k, adm, tools, name, 4000)
	free := slices.DeleteFunc(k.Nodes(), func(id int32) bool { return slices.Contains(c.replicas, id) })[0]

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(name, 0, []int32{c.victim, free})
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reassigned %s/0 to [%d %d]: node %d copies the log from the corrupted leader %d", name, c.victim, free, free, c.victim)

	// Kafka's account, on the free node, for up to a minute.
	invalidAt := regexp.MustCompile(`Found invalid messages during fetch for partition ` + regexp.QuoteMeta(name) + `-0 offset (\d+)`)
	said := regexp.MustCompile(`CorruptRecordException|Found invalid messages|is invalid|marked as failed|crc`)
	var found []string
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && len(found) == 0; time.Sleep(time.Second) {
		for _, l := range kafkaLines(t, k.LogFile(free), began, invalidAt) {
			found = append(found, l)
		}
	}
	for _, l := range kafkaLines(t, k.LogFile(free), began, said) {
		t.Logf("kafka, node %d: %s", free, l)
	}
	p := waitPartition(t, adm, name, func(kadm.PartitionDetail) bool { return true })
	t.Logf("%s/0 now: leader %d, replicas %v, ISR %v", name, p.Leader, p.Replicas, p.ISR)
	if len(found) == 0 {
		t.Fatalf("node %d's log never says it found invalid messages in %s-0", free, name)
	}
	// Kafka names the fetch's offset, not the batch's, and the batch by
	// its stored CRC.
	crcSaid := regexp.MustCompile(`CorruptRecordException: Record is corrupt \(stored crc = (\d+)\) in topic partition ` + regexp.QuoteMeta(name) + `-0`)
	var named []string
	for _, l := range kafkaLines(t, k.LogFile(free), began, crcSaid) {
		named = append(named, crcSaid.FindStringSubmatch(l)[1])
	}
	if want := strconv.FormatUint(uint64(c.storedCRC), 10); len(named) == 0 || named[0] != want {
		t.Errorf("node %d names stored CRCs %v; the flipped batch's is %s", free, named, want)
	}
	if slices.Contains(p.ISR, free) {
		t.Errorf("node %d joined the ISR of %s/0 with a log copied across a damaged batch", free, name)
	}
}

// kafkaTools is $ACKCHECK_KAFKA_TOOLS_DIR, or skips the test.
func kafkaTools(t *testing.T) string {
	t.Helper()
	tools := os.Getenv(envKafkaTools)
	if tools == "" {
		t.Skipf("%s not set: fetch org.apache.kafka:kafka-tools:%s with its dependencies (mvn dependency:copy-dependencies) into a directory D and set it to D", envKafkaTools, kafka.Version)
	}
	return tools
}

// corrupted is what corruptFollowerThenLead did.
type corrupted struct {
	run         *ledger.Ledger // the acked load, as a run's ledger
	info        ledger.RunInfo
	victim      int32  // the corrupted follower, now the leader
	leader      int32  // the leader killed (restarted at the test's end)
	first, last int64  // the flipped batch's offsets
	storedCRC   uint32 // and the CRC its header stores
	invalid     [][2]int64
	replicas    []int32
	segment     string
}

// corruptFollowerThenLead produces n acked messages to partition 0 of
// topic (created with all its replicas in sync), stops the follower the
// controller would pick next (a clean stop), flips one bit inside the
// batch holding offset n/2 of its segment, asks DumpLogSegments which
// batches are invalid (it must name that one only), starts the follower
// again, waits for it to rejoin the ISR, and kills the leader so that the
// corrupted follower leads. The killed leader is started again when the
// test ends.
func corruptFollowerThenLead(t *testing.T, ctx context.Context, k *kafka.Cluster, adm *kadm.Client, tools, topic string, n int) corrupted {
	t.Helper()
	var c corrupted
	p := waitPartition(t, adm, topic, func(p kadm.PartitionDetail) bool { return p.Leader >= 0 && len(p.ISR) == len(p.Replicas) })
	c.leader, c.replicas = p.Leader, p.Replicas
	// When the leader dies the controller picks the first replica, in
	// assignment order, that is alive and in the ISR: that one is flipped.
	c.victim = slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return r == c.leader })[0]
	t.Logf("%s: replicas %v, leader %d; node %d is the follower to corrupt", topic, p.Replicas, c.leader, c.victim)

	// The load: n acked messages, recorded in a ledger as a run would.
	c.run, c.info = produceLedger(t, ctx, k, topic, n, 38)
	t.Cleanup(func() { c.run.Close() })

	// A clean stop: Kafka then skips its recovery check of the segment.
	if err := k.StopNode(ctx, c.victim, k.Grace()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // on a failure before its restart
		if pid, _ := k.PID(c.victim); pid == 0 {
			if err := k.StartNode(context.Background(), c.victim); err != nil {
				t.Errorf("restart node %d: %v", c.victim, err)
			}
		}
	})
	// Until the controller has taken it out of the ISR, a describe may
	// still list it there: the wait for its return below must not pass
	// on that.
	waitPartition(t, adm, topic, func(p kadm.PartitionDetail) bool { return !slices.Contains(p.ISR, c.victim) })
	c.segment = filepath.Join(k.DataDir(c.victim), topic+"-0", "00000000000000000000.log")
	var at int64
	c.first, c.last, c.storedCRC, at = flipMidBatch(t, c.segment, int64(n/2))
	t.Logf("flipped bit 4 of byte %d of %s: inside the batch of offsets %d-%d", at, c.segment, c.first, c.last)

	// Kafka's own account of the segment.
	c.invalid = dumpLogInvalid(t, ctx, tools, c.segment)
	t.Logf("oracle, kafka-dump-log --deep-iteration: invalid batches %v", c.invalid)
	if !slices.Equal(c.invalid, [][2]int64{{c.first, c.last}}) {
		t.Fatalf("DumpLogSegments says the invalid batches are %v; want [%d %d] only", c.invalid, c.first, c.last)
	}

	if err := k.StartNode(ctx, c.victim); err != nil {
		t.Fatal(err)
	}
	waitPartition(t, adm, topic, func(p kadm.PartitionDetail) bool { return slices.Contains(p.ISR, c.victim) })
	killed := time.Now()
	if _, err := k.Signal(c.leader, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.StartNode(context.Background(), c.leader); err != nil {
			t.Errorf("restart node %d: %v", c.leader, err)
		}
		if err := k.WaitReady(context.Background(), 2*time.Minute); err != nil {
			t.Errorf("cluster not whole after the test: %v", err)
		}
	})
	p = waitPartition(t, adm, topic, func(p kadm.PartitionDetail) bool { return p.Leader >= 0 && p.Leader != c.leader })
	t.Logf("node %d killed; node %d leads after %s, ISR %v", c.leader, p.Leader, time.Since(killed).Round(time.Millisecond), p.ISR)
	if p.Leader != c.victim {
		t.Fatalf("node %d leads, not the corrupted node %d", p.Leader, c.victim)
	}
	return c
}

func ptr(s string) *string { return &s }

// waitPartition waits up to three minutes (a node restarted on this
// 2-core machine took 60 s to rejoin the ISR) for partition 0 of topic to satisfy
// ok, and returns it.
func waitPartition(t *testing.T, adm *kadm.Client, topic string, ok func(kadm.PartitionDetail) bool) kadm.PartitionDetail {
	t.Helper()
	var last kadm.PartitionDetail
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		td, err := adm.ListTopics(ctx, topic)
		cancel()
		if err != nil || td[topic].Err != nil {
			continue
		}
		if last = td[topic].Partitions[0]; ok(last) {
			return last
		}
	}
	t.Fatalf("%s/0 never came to the state wanted: last leader %d, ISR %v", topic, last.Leader, last.ISR)
	return last
}

// produceLedger produces n ackcheck messages (run runID, producer 0) to
// partition 0 of topic with acks=all, and returns a ledger with their
// sends and acks, as a run's, and its RunInfo. Every message must be
// acked.
func produceLedger(t *testing.T, ctx context.Context, k *kafka.Cluster, topic string, n int, runID uint64) (*ledger.Ledger, ledger.RunInfo) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		// As ackcheck's driver produces: uncompressed (its default), in
		// batches of up to 16 KiB, so that the segment holds many.
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	enc := message.NewEncoder(256)
	var mu sync.Mutex
	acked := make([]int64, n)
	var failed error
	for i := range n {
		v := enc.Encode(nil, message.ID{Run: runID, Seq: uint64(i)}, start.UnixNano())
		cl.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = err
				return
			}
			acked[i] = r.Offset
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("produce: %v", failed)
	}
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, off := range acked {
		l.Record(ledger.Send, ledger.Event{Seq: uint64(i), Time: start.UnixNano()})
		l.Record(ledger.Outcome, ledger.Event{Seq: uint64(i), Status: ledger.OutcomeAcked, Offset: off, Time: int64(time.Millisecond)})
	}
	info := ledger.RunInfo{RunID: runID, Driver: "kafka", Topic: topic, Producers: 1,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0}), LoadStart: start, LoadEnd: time.Now(), Clean: true}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.PutMeta(ledger.MetaRun, info); err != nil {
		t.Fatal(err)
	}
	t.Logf("produced %d messages acks=all in %s, offsets %d-%d", n, time.Since(start).Round(time.Millisecond), acked[0], acked[n-1])
	return l, info
}

// flipMidBatch flips bit 4 of a byte inside the last record's value of
// the record batch of segment file seg that holds offset off (six bytes
// before the batch's end: the value's filler, before its own checksum and
// the record's header count), and returns the batch's offsets, its
// stored CRC and the byte's position.
func flipMidBatch(t *testing.T, seg string, off int64) (first, last int64, crc uint32, at int64) {
	t.Helper()
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for pos := int64(0); pos+61 <= int64(len(b)); {
		base := int64(binary.BigEndian.Uint64(b[pos:]))
		size := int64(binary.BigEndian.Uint32(b[pos+8:])) + 12
		lastOff := base + int64(binary.BigEndian.Uint32(b[pos+23:]))
		if base <= off && off <= lastOff {
			at = pos + size - 6
			b[at] ^= 0x10
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return base, lastOff, binary.BigEndian.Uint32(b[pos+17:]), at
		}
		pos += size
	}
	t.Fatalf("no batch of %s holds offset %d", seg, off)
	return
}

// dumpLogInvalid runs Kafka's DumpLogSegments --deep-iteration (what
// bin/kafka-dump-log.sh runs) on seg with the jars in tools, and returns
// the batches it says are not valid ("isvalid: false"), as [base, last]
// offsets. The tool stops at a batch it cannot decompress (exit status
// 1): what it printed before counts.
func dumpLogInvalid(t *testing.T, ctx context.Context, tools, seg string) [][2]int64 {
	t.Helper()
	out, err := exec.CommandContext(ctx, "nice", "java", "-cp", filepath.Join(tools, "*"), "org.apache.kafka.tools.DumpLogSegments",
		"--files", seg, "--deep-iteration").CombinedOutput()
	if err != nil {
		t.Logf("DumpLogSegments: %v", err)
	}
	re := regexp.MustCompile(`(?mi)^baseOffset: (\d+) lastOffset: (\d+) .*isValid: (true|false)`)
	var invalid [][2]int64
	batches := 0
	for _, m := range re.FindAllSubmatch(out, -1) {
		batches++
		if string(m[3]) == "false" {
			a, _ := strconv.ParseInt(string(m[1]), 10, 64)
			b, _ := strconv.ParseInt(string(m[2]), 10, 64)
			invalid = append(invalid, [2]int64{a, b})
		}
	}
	if batches == 0 {
		t.Fatalf("DumpLogSegments printed no batch:\n%s", out)
	}
	t.Logf("DumpLogSegments: %d batches, %d invalid", batches, len(invalid))
	return invalid
}
