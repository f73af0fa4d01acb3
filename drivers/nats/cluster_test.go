package nats

import (
	"context"
	"github.com/ackcheck/ackcheck/cluster"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// The port this test creates its cluster on (no broker listens on it;
// create checks it is free), apart from the ports other tests and .ci/run's
// clusters use.
const setupTestNATSPort = 30600 // +100, +200 for routes and monitoring

// Each launcher's setup (create, and the rewrite of a setting that an
// fsync toggle makes) on a lazyfs that then loses power: every file it
// wrote comes back as it was written. The cluster's whole directory is on
// the lazyfs here (in .ci/run's clusters only the data dirs are), so that
// cluster.json and the configuration files beside the data dirs are put
// to the test too. Kafka's case needs Java and Kafka's jars in the cache
// (`ackcheck cluster kafka up` fetches them), Queen's Debian's PostgreSQL
// and root (initdb runs as postgres); each skips without.
func TestCreateSurvivesPowerLoss(t *testing.T) {
	l, mnt := clustertest.LazyDir(t, lazyfs.EntriesStrict)
	n, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: filepath.Join(mnt, "nats")}, BasePort: setupTestNATSPort})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := clustertest.Snapshot(t, n.Dir())
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "create", before, clustertest.Snapshot(t, n.Dir()))
	// The rewrite of an fsync toggle (SetSyncAlways, between the
	// clean stop and the start).
	n.opts.SyncAlways = true
	if err := n.writeFiles(); err != nil {
		t.Fatal(err)
	}
	before = clustertest.Snapshot(t, n.Dir())
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "sync_interval always", before, clustertest.Snapshot(t, n.Dir()))
	if !strings.Contains(before["node1/nats.conf"], "sync_interval: always") {
		t.Errorf("the rewritten nats.conf has no sync_interval: %q", before["node1/nats.conf"])
	}
	if again, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: n.Dir()}}); err != nil || !again.SyncAlways() || again.opts.BasePort != setupTestNATSPort {
		t.Errorf("reopened after the power loss: %+v %v", again, err)
	}
}
