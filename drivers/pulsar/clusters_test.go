package pulsar_test

import (
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
)

// The variables that name the running local Pulsar standalones (.ci/run
// sets them): the lazyfs one on other ports than its plain twin.
var (
	plainPulsar = clustertest.Env[*pulsar.Cluster]{Var: "ACKCHECK_PULSAR_DIR", Up: "ackcheck cluster pulsar up --dir D",
		Ready: 3 * time.Minute, Open: openPulsar}
	lazyPulsar = clustertest.Env[*pulsar.Cluster]{Var: "ACKCHECK_PULSAR_LAZYFS_DIR",
		Up:     "ackcheck cluster pulsar up --lazyfs --lazyfs-entries journal --broker-port 26750 --web-port 28180 --bookie-port 23281 --dir D",
		LazyFS: true, Ready: 3 * time.Minute, Open: openPulsar}
)

func openPulsar(dir string) (*pulsar.Cluster, error) {
	return pulsar.OpenCluster(pulsar.ClusterOptions{Options: cluster.Options{Dir: dir}})
}
