// Package natstest gives tests the real local NATS JetStream clusters that
// .ci/run (or a developer) started, or skips them with what to do.
package natstest

import (
	"github.com/ackcheck/ackcheck/cluster"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/nats"
)

// The variables that name the directory of a running local cluster (the
// lazyfs one on other ports than its plain twin).
const (
	EnvCluster = "ACKCHECK_NATS_DIR"
	EnvLazyFS  = "ACKCHECK_NATS_LAZYFS_DIR"
)

// Cluster returns the cluster in $ACKCHECK_NATS_DIR once every node is
// healthy, or skips the test when the variable is not set.
func Cluster(t *testing.T) *nats.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvCluster, "ackcheck cluster nats up --dir D", open, false, 2*time.Minute)
}

// LazyFS returns the cluster in $ACKCHECK_NATS_LAZYFS_DIR, whose store
// dirs are on lazyfs, once every node is healthy.
func LazyFS(t *testing.T) *nats.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvLazyFS, "ackcheck cluster nats up --lazyfs --lazyfs-entries journal --base-port 24522 --dir D", open, true, 2*time.Minute)
}

func open(dir string) (*nats.Cluster, error) {
	return nats.OpenCluster(nats.ClusterOptions{Options: cluster.Options{Dir: dir}})
}
