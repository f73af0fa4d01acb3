package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
)

// TestRealNATSFsyncAudit is the fsync audit on NATS JetStream: the same
// load on a real 3-node cluster whose store dirs are on lazyfs (journal
// entries, as on ext4), first with the default sync_interval and then with
// sync_interval: always (switched by a clean restart, as fsync-audit
// does), each with a power loss of every server at once. The default must
// lose acked messages (within up to 3 tries); always must lose none.
// .ci/run starts the cluster.
func TestRealNATSFsyncAudit(t *testing.T) {
	n := clustertest.NATSLazyFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	was := n.SyncAlways()
	defer func() {
		if err := n.SetSyncAlways(context.Background(), was); err != nil {
			t.Errorf("put sync_interval back: %v", err)
		}
	}()
	dir := t.TempDir()
	if rd := os.Getenv("ACKCHECK_REPORT_DIR"); rd != "" {
		dir = filepath.Join(rd, "nats-fsync-audit")
		os.RemoveAll(dir)
	}
	audit := FsyncAudit{Topic: fmt.Sprintf("audit-%d", time.Now().Unix()), LossAt: 6 * time.Second,
		Settings: NATSFsyncSettings(n.SetSyncAlways), Broker: "nats"}
	d := natsDriver(t, n)
	defer d.Close()
	base := runner.Config{
		Driver:          d,
		Topic:           drivers.TopicSpec{Partitions: 3, ReplicationFactor: 3},
		Load:            load.Config{Rate: 300, Duration: 16 * time.Second, Producers: 2, MessageSize: 512, LiveRead: true},
		ReadIdleTimeout: 30 * time.Second,
		Faults:          &runner.FaultPlan{Nodes: faults.Local{Cluster: n}, RecoveryTimeout: time.Minute, Broker: "nats"},
		Progress:        testWriter{t}, ProgressEvery: 5 * time.Second,
	}
	res := &AuditResult{Scenario: audit.Name(), LossAtS: audit.LossAt.Seconds(), SteadyEndS: audit.steadyEnd().Seconds()}
	for _, s := range audit.Settings {
		var row AuditRow
		for try := 1; try <= 3; try++ {
			a := audit
			a.Topic = fmt.Sprintf("%s-try%d", audit.Topic, try)
			var err error
			if row, err = a.RunSetting(ctx, base, s, filepath.Join(dir, fmt.Sprintf("%s-try%d", s.Name, try))); err != nil {
				t.Fatal(err)
			}
			if !s.ExpectLoss || row.Lost > 0 {
				break
			}
			t.Logf("try %d of %s lost nothing", try, s.Name)
		}
		res.Rows = append(res.Rows, row)
	}
	md := res.Markdown()
	t.Logf("\n%s", md)
	os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644)
	def, always := res.Rows[0], res.Rows[1]
	for _, r := range res.Rows {
		if r.PowerLoss != "applied" || len(r.NodeLoss) != 3 {
			t.Fatalf("%s: power loss %q on %d nodes", r.Setting.Name, r.PowerLoss, len(r.NodeLoss))
		}
		if r.SteadyPublish.Count == 0 {
			t.Errorf("%s: no latency before the loss", r.Setting.Name)
		}
	}
	if !strings.Contains(def.AckMeaning, "sync_interval=2m0s") || !strings.Contains(always.AckMeaning, "sync_interval=always") {
		t.Errorf("the ack meanings do not name the sync_interval read from the servers: %q / %q", def.AckMeaning, always.AckMeaning)
	}
	if def.Lost == 0 {
		t.Errorf("the default sync_interval lost no acked message in 3 power losses of every server")
	}
	if always.Lost != 0 || always.Acked == 0 || always.Verdict != "pass" {
		t.Errorf("sync_interval always: acked %d, lost %d, verdict %s", always.Acked, always.Lost, always.Verdict)
	}
	if always.ReadyMs <= 0 || always.InSyncMs <= 0 {
		t.Errorf("always: recovery not measured: ready %.0f ms, in sync %.0f ms", always.ReadyMs, always.InSyncMs)
	}
	t.Logf("nats fsync audit: default lost %d of %d acked; always lost %d of %d; publish p50 before the loss %.2f ms (default), %.2f ms (always)",
		def.Lost, def.Acked, always.Lost, always.Acked, def.SteadyPublish.P50, always.SteadyPublish.P50)
}
