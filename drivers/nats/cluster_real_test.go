package nats_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
)

// TestRealPowerLossUpAgain takes the lazyfs cluster .ci/run starts
// (ACKCHECK_NATS_LAZYFS_DIR) through a power loss of every node, as the power-loss fault
// does it (SIGKILL of every broker, then each lazyfs drops what was not
// fsynced), and brings it up again: the same ports, the same settings,
// every node healthy. It runs before this package's other tests (its file
// sorts first), and no package before drivers/nats uses this cluster, so the
// cluster is as `cluster up` left it: a setup file that `up` wrote
// without fsync is gone here, as in issue 24, where PostgreSQL came back
// on port 5432 and the Queen server never started.
func TestRealPowerLossUpAgain(t *testing.T) {
	n := lazyNATS.Get(t)
	// The settings the broker runs with, read from the broker itself (not
	// from ackcheck's files): the same before and after the power loss.
	clustertest.PowerLossUpAgain(t, n, func(ctx context.Context) (map[string]string, error) {
		out := map[string]string{}
		for i, mon := range n.MonitorURLs() {
			var v map[string]any
			if err := clustertest.GetJSON(ctx, mon+"/varz", &v); err != nil {
				return nil, err
			}
			for k, val := range clustertest.Pick(v, fmt.Sprintf("node%d ", i+1), "server_name", "port", "http_port", "cluster.name", "cluster.cluster_port", "cluster.urls",
				"jetstream.config.store_dir", "jetstream.config.sync_interval", "jetstream.config.max_storage") {
				out[k] = val
			}
		}
		return out, nil
	})
}
