package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
)

// The command's real-cluster tests name a cluster by its variable and
// reach it as the command does, through the brokers list (openLocal):
// this package imports no broker's package (TestNoBrokerPackageImported).
// A broker's own truths live in its directory, drivers/<broker>.

// kafkaCluster is the plain 3-node Kafka cluster .ci/run starts: its
// variable and the command that starts one.
var kafkaCluster = realEnv{"ACKCHECK_KAFKA_CLUSTER_DIR", "ackcheck cluster kafka up --dir D"}

// realEnv is a variable that names a running local cluster's directory,
// and the command that starts one.
type realEnv struct{ name, start string }

// runningCluster is a local cluster a test can wait for.
type runningCluster interface {
	cluster.Local
	clustertest.Running
}

// realCluster opens the running local cluster in the directory env
// names, of whichever broker its cluster.json records, once every node
// answers; it skips the test, saying how to start one, when env is not
// set.
func realCluster(t *testing.T, env realEnv) runningCluster {
	t.Helper()
	return clustertest.FromEnv(t, env.name, env.start, func(dir string) (runningCluster, error) {
		c, kind, err := openLocal(dir)
		if err != nil {
			return nil, err
		}
		r, ok := c.(runningCluster)
		if !ok {
			return nil, fmt.Errorf("%s's local cluster in %s has no WaitReady: a test cannot wait for it", kind, dir)
		}
		return r, nil
	}, false, 90*time.Second)
}
