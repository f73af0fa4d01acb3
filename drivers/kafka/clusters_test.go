package kafka_test

import (
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/kafka"
)

// The variables that name the running local Kafka clusters (.ci/run sets
// them): the lazyfs one on other ports than its plain twin, so that both
// can run at once.
var (
	plainKafka = clustertest.Env[*kafka.Cluster]{Var: "ACKCHECK_KAFKA_CLUSTER_DIR", Up: "ackcheck cluster kafka up --dir D",
		Ready: 90 * time.Second, Open: openKafka}
	lazyKafka = clustertest.Env[*kafka.Cluster]{Var: "ACKCHECK_KAFKA_LAZYFS_DIR", Up: "ackcheck cluster kafka up --lazyfs --base-port 29291 --dir D",
		LazyFS: true, Ready: 90 * time.Second, Open: openKafka}
	// lazyOneKafka is a one-node lazyfs cluster: its offsets topic has
	// replication factor 1, so a power loss of its only replica can lose
	// commits (the consumer group's truths).
	lazyOneKafka = clustertest.Env[*kafka.Cluster]{Var: "ACKCHECK_KAFKA_LAZYFS_ONE_DIR",
		Up:     "ackcheck cluster kafka up --lazyfs --nodes 1 --base-port 29691 --heap-mb 512 --prop offsets.topic.num.partitions=1 --dir D",
		LazyFS: true, Ready: 90 * time.Second, Open: openKafka}
)

func openKafka(dir string) (*kafka.Cluster, error) {
	return kafka.OpenCluster(kafka.ClusterOptions{Options: cluster.Options{Dir: dir}})
}
