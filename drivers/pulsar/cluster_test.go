package pulsar

import (
	"context"
	"github.com/ackcheck/ackcheck/cluster"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// The port this test creates its cluster on (no broker listens on it;
// create checks it is free), apart from the ports other tests and .ci/run's
// clusters use.
const setupTestPulsarPort = 30550 // broker; web 30580, bookie 30581

// Each launcher's setup (create, and the rewrite of a setting that an
// fsync toggle makes) on a lazyfs that then loses power: every file it
// wrote comes back as it was written. The cluster's whole directory is on
// the lazyfs here (in .ci/run's clusters only the data dirs are), so that
// cluster.json and the configuration files beside the data dirs are put
// to the test too. Kafka's case needs Java and Kafka's jars in the cache
// (`ackcheck cluster kafka up` fetches them), Queen's Debian's PostgreSQL
// and root (initdb runs as postgres); each skips without.
func TestCreateSurvivesPowerLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	l, mnt := clustertest.LazyDir(t, lazyfs.EntriesStrict)
	p, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: filepath.Join(mnt, "pulsar")}, BrokerPort: setupTestPulsarPort, WebPort: setupTestPulsarPort + 30, BookiePort: setupTestPulsarPort + 31})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Create(ctx); err != nil {
		t.Fatal(err)
	}
	before := clustertest.Snapshot(t, p.Dir())
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "create", before, clustertest.Snapshot(t, p.Dir()))
	off := false
	p.opts.JournalSyncData = &off
	if err := p.writeFiles(); err != nil {
		t.Fatal(err)
	}
	before = clustertest.Snapshot(t, p.Dir())
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "journalSyncData false", before, clustertest.Snapshot(t, p.Dir()))
	if again, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: p.Dir()}}); err != nil || again.JournalSyncData() || again.opts.BrokerPort != setupTestPulsarPort {
		t.Errorf("reopened after the power loss: %+v %v", again, err)
	}
}
