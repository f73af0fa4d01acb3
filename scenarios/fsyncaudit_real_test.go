package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/drivers/kafka/kafkatest"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
)

// TestRealFsyncAudit runs the fsync audit, small, on the real 3-broker
// Kafka 4.3.1 cluster whose data dirs are on lazyfs (.ci/run starts it and
// sets ACKCHECK_KAFKA_LAZYFS_DIR). Kafka's default must lose acked
// messages in a power loss of every broker (within up to 3 tries: the loss
// could, in principle, find everything written back), and
// flush.messages=1 must lose none.
func TestRealFsyncAudit(t *testing.T) {
	k := kafkatest.LazyFS(t)
	d, err := kafka.New(kafka.Config{Brokers: k.Brokers(), Acks: "all"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := k.LoseUnsynced(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("a loss under a live broker was not refused: %v", err)
	}
	dir := t.TempDir()
	if rd := os.Getenv("ACKCHECK_REPORT_DIR"); rd != "" {
		dir = filepath.Join(rd, "fsync-audit")
		os.RemoveAll(dir)
	}
	audit := FsyncAudit{Topic: fmt.Sprintf("audit-%d", time.Now().Unix()), LossAt: 6 * time.Second, Settings: auditSettings(kafkaProfile, nil)}
	base := runner.Config{
		Out: dir, Driver: d,
		Topic:           drivers.TopicSpec{Partitions: 4, ReplicationFactor: 3},
		Load:            load.Config{Rate: 300, Duration: 16 * time.Second, Producers: 2, MessageSize: 512, LiveRead: true},
		ReadIdleTimeout: time.Minute,
		Faults:          &runner.FaultPlan{Nodes: faults.Local{Cluster: k}, RecoveryTimeout: 90 * time.Second},
		Progress:        testWriter{t}, ProgressEvery: 5 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := audit.Run(ctx, base, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	def, flush := res.Rows[0], res.Rows[1]
	for try := 2; def.Lost == 0 && try <= 3; try++ {
		t.Logf("try %d of the default setting: the last lost nothing", try)
		a := audit
		a.Topic = fmt.Sprintf("%s-try%d", audit.Topic, try)
		if def, err = a.RunSetting(ctx, base, audit.Settings[0], filepath.Join(dir, fmt.Sprintf("default-try%d", try))); err != nil {
			t.Fatal(err)
		}
		res.Rows[0] = def
	}
	md := res.Markdown()
	t.Logf("\n%s", md)
	os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644)
	for _, r := range res.Rows {
		if r.PowerLoss != "applied" || len(r.NodeLoss) != 3 {
			t.Fatalf("%s: power loss %q on %d nodes", r.Setting.Name, r.PowerLoss, len(r.NodeLoss))
		}
		if r.ReadyMs <= 0 || r.InSyncMs <= 0 {
			t.Errorf("%s: recovery not measured: ready %.0f ms, in sync %.0f ms", r.Setting.Name, r.ReadyMs, r.InSyncMs)
		} else {
			// The brokers' logs: every broker came back as a new
			// incarnation, unfenced, and back in the ISRs.
			// Bounded by the next setting's power loss, which takes
			// every broker, and this topic's ISRs, away again.
			var next time.Time
			for _, o := range res.Rows {
				if o.LossAt.After(r.LossAt) && (next.IsZero() || o.LossAt.Before(next)) {
					next = o.LossAt
				}
			}
			checkAgainstKafkaLogs(t, k, r.Topic, killFigures{Nodes: r.LossNodes, At: r.LossAt, ReadyMs: r.ReadyMs, InSyncMs: r.InSyncMs, Until: next})
		}
		if r.SteadyPublish.Count == 0 {
			t.Errorf("%s: no latency before the loss", r.Setting.Name)
		}
	}
	if def.Lost == 0 {
		t.Fatalf("Kafka's default lost no acked message in 3 power losses of every broker")
	}
	if flush.Lost != 0 || flush.Verdict != "pass" {
		t.Fatalf("flush.messages=1 lost %d acked messages (verdict %s)", flush.Lost, flush.Verdict)
	}
	if res.BrokenPromise {
		t.Fatal("audit reports a broken promise although flush.messages=1 lost nothing")
	}
	if err := k.WaitReady(ctx, time.Minute); err != nil {
		t.Fatalf("cluster not whole after the audit: %v", err)
	}
}
