// Package pulsartest gives tests the real local Pulsar standalones that
// .ci/run (or a developer) started, or skips them with what to do.
package pulsartest

import (
	"github.com/ackcheck/ackcheck/cluster"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
)

// The variables that name the directory of a running standalone (the
// lazyfs one on other ports than its plain twin).
const (
	EnvCluster = "ACKCHECK_PULSAR_DIR"
	EnvLazyFS  = "ACKCHECK_PULSAR_LAZYFS_DIR"
)

// Cluster returns the standalone in $ACKCHECK_PULSAR_DIR once it passes
// its health check, or skips the test when the variable is not set.
func Cluster(t *testing.T) *pulsar.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvCluster, "ackcheck cluster pulsar up --dir D", open, false, 3*time.Minute)
}

// LazyFS returns the standalone in $ACKCHECK_PULSAR_LAZYFS_DIR, whose data
// dir is on lazyfs, once it passes its health check.
func LazyFS(t *testing.T) *pulsar.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvLazyFS, "ackcheck cluster pulsar up --lazyfs --lazyfs-entries journal --broker-port 26750 --web-port 28180 --bookie-port 23281 --dir D",
		open, true, 3*time.Minute)
}

func open(dir string) (*pulsar.Cluster, error) {
	return pulsar.OpenCluster(pulsar.ClusterOptions{Options: cluster.Options{Dir: dir}})
}
