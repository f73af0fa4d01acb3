package nats_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// TestRealNATSFsyncAudit is the fsync audit on NATS JetStream: the same
// load on a real 3-node cluster whose store dirs are on lazyfs (journal
// entries, as on ext4), first with the default sync_interval and then with
// sync_interval: always (switched by a clean restart, as fsync-audit
// does), each with a power loss of every server at once. The default must
// lose acked messages (within up to 3 tries); always must lose none.
// .ci/run starts the cluster.
func TestRealNATSFsyncAudit(t *testing.T) {
	n := lazyNATS.Get(t)
	d := natsDriver(t, n)
	defer d.Close()
	audit := scenarios.FsyncAudit{Topic: fmt.Sprintf("audit-%d", time.Now().Unix()), LossAt: 6 * time.Second,
		Settings: scenariotest.AuditSettings(t, nats.Profile{}, n.SetSyncAlways), Broker: "nats"}
	res := scenariotest.RunSwitchedAudit(t, scenariotest.Switched{Name: "sync_interval", Get: n.SyncAlways, Set: n.SetSyncAlways}, audit, d, faults.Local{Cluster: n}, 3, 3, "nats-fsync-audit")
	def, always := res.Rows[0], res.Rows[1]
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
