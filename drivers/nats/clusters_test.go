package nats_test

import (
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/nats"
)

// The variables that name the running local NATS JetStream clusters
// (.ci/run sets them): the lazyfs one on other ports than its plain twin.
var (
	plainNATS = clustertest.Env[*nats.Cluster]{Var: "ACKCHECK_NATS_DIR", Up: "ackcheck cluster nats up --dir D",
		Ready: 2 * time.Minute, Open: openNATS}
	lazyNATS = clustertest.Env[*nats.Cluster]{Var: "ACKCHECK_NATS_LAZYFS_DIR", Up: "ackcheck cluster nats up --lazyfs --lazyfs-entries journal --base-port 24522 --dir D",
		LazyFS: true, Ready: 2 * time.Minute, Open: openNATS}
)

func openNATS(dir string) (*nats.Cluster, error) {
	return nats.OpenCluster(nats.ClusterOptions{Options: cluster.Options{Dir: dir}})
}
