package kafka

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
const setupTestKafkaPort = 30591 // +100 for controllers

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
	// One node: the files of each node are alike, and each StorageTool
	// run is a JVM start.
	k, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: "unused"}, BasePort: setupTestKafkaPort, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(k.libDir(), "kafka_2.13-"+Version+".jar")); len(m) == 0 {
		t.Skipf("no Kafka jars in %s: `ackcheck cluster kafka up` fetches them", k.libDir())
	}
	l, mnt := clustertest.LazyDir(t, lazyfs.EntriesStrict)
	k.opts.Dir = filepath.Join(mnt, "kafka")
	if err := k.Create(ctx); err != nil {
		t.Fatal(err)
	}
	before := clustertest.Snapshot(t, k.Dir())
	if before["node1/data/meta.properties"] == "" {
		t.Fatalf("create wrote no meta.properties: %v", before)
	}
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "create", before, clustertest.Snapshot(t, k.Dir()))
}
