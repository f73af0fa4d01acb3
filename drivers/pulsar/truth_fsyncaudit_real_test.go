package pulsar_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// TestRealPulsarFsyncAudit is the fsync audit on a real Pulsar standalone
// whose data dir is on lazyfs (journal entries, as on ext4): the same load
// with the bookie's journalSyncData=false and then true (switched by a
// clean restart, as fsync-audit does), each with a power loss. false must
// lose acked messages (within up to 3 tries: the bookie still flushes its
// journal about every second); true must lose none. .ci/run starts the
// standalone.
func TestRealPulsarFsyncAudit(t *testing.T) {
	p := lazyPulsar.Get(t)
	d := pulsarDriver(t, p, true)
	defer d.Close()
	audit := scenarios.FsyncAudit{Topic: fmt.Sprintf("audit-%d", time.Now().Unix()), LossAt: 6 * time.Second,
		Settings: scenariotest.AuditSettings(t, pulsar.Profile{}, p.SetJournalSyncData), Broker: "pulsar"}
	res := scenariotest.RunSwitchedAudit(t, scenariotest.Switched{Name: "journalSyncData", Get: p.JournalSyncData, Set: p.SetJournalSyncData}, audit, d, faults.Local{Cluster: p}, 1, 1, "pulsar-fsync-audit")
	nosync, def := res.Rows[0], res.Rows[1]
	if !strings.Contains(nosync.AckMeaning, "journalSyncData=false") || !strings.Contains(def.AckMeaning, "journalSyncData=true") {
		t.Errorf("the ack meanings do not name journalSyncData read from the bookie: %q / %q", nosync.AckMeaning, def.AckMeaning)
	}
	if nosync.Lost == 0 {
		t.Errorf("journalSyncData=false lost no acked message in 3 power losses")
	}
	if def.Lost != 0 || def.Acked == 0 || def.Verdict != "pass" {
		t.Errorf("journalSyncData=true: acked %d, lost %d, verdict %s", def.Acked, def.Lost, def.Verdict)
	}
	t.Logf("pulsar fsync audit: journalSyncData=false lost %d of %d acked; true lost %d of %d; publish p50 before the loss %.2f ms (false), %.2f ms (true)",
		nosync.Lost, nosync.Acked, def.Lost, def.Acked, nosync.SteadyPublish.P50, def.SteadyPublish.P50)
}
