// Package kafkatest gives tests the real local Kafka clusters that .ci/run
// (or a developer) started, or skips them with what to do.
package kafkatest

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/kafka"
)

// The variables that name the directory of a running local cluster (the
// lazyfs one on other ports than its plain twin, so that both can run at
// once).
const (
	EnvCluster = "ACKCHECK_KAFKA_CLUSTER_DIR"
	EnvLazyFS  = "ACKCHECK_KAFKA_LAZYFS_DIR"
	// EnvLazyFSOne names a one-node lazyfs cluster: its offsets topic
	// has replication factor 1, so a power loss of its only replica can
	// lose commits (the consumer group's truths). One offsets partition
	// (not 50) keeps its recovery after a power loss short.
	EnvLazyFSOne = "ACKCHECK_KAFKA_LAZYFS_ONE_DIR"
)

// Cluster returns the cluster in $ACKCHECK_KAFKA_CLUSTER_DIR once every
// node answers, or skips the test when the variable is not set.
func Cluster(t *testing.T) *kafka.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvCluster, "ackcheck cluster kafka up --dir D", open, false, 90*time.Second)
}

// LazyFS returns the cluster in $ACKCHECK_KAFKA_LAZYFS_DIR, whose brokers
// keep their data on lazyfs, once every node answers.
func LazyFS(t *testing.T) *kafka.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvLazyFS, "ackcheck cluster kafka up --lazyfs --base-port 29291 --dir D", open, true, 90*time.Second)
}

// LazyFSOne returns the one-node lazyfs cluster in
// $ACKCHECK_KAFKA_LAZYFS_ONE_DIR once its node answers.
func LazyFSOne(t *testing.T) *kafka.Cluster {
	t.Helper()
	return clustertest.FromEnv(t, EnvLazyFSOne, "ackcheck cluster kafka up --lazyfs --nodes 1 --base-port 29691 --heap-mb 512 --prop offsets.topic.num.partitions=1 --dir D", open, true, 90*time.Second)
}

func open(dir string) (*kafka.Cluster, error) {
	return kafka.OpenCluster(kafka.ClusterOptions{Dir: dir})
}
