package pulsar_test

import (
	"context"
	"testing"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
)

// TestRealPowerLossUpAgain takes the lazyfs cluster .ci/run starts
// (ACKCHECK_PULSAR_LAZYFS_DIR) through a power loss of every node, as the power-loss fault
// does it (SIGKILL of every broker, then each lazyfs drops what was not
// fsynced), and brings it up again: the same ports, the same settings,
// every node healthy. It runs before this package's other tests (its file
// sorts first), and no package before drivers/pulsar uses this cluster, so the
// cluster is as `cluster up` left it: a setup file that `up` wrote
// without fsync is gone here, as in issue 24, where PostgreSQL came back
// on port 5432 and the Queen server never started.
func TestRealPowerLossUpAgain(t *testing.T) {
	p := lazyPulsar.Get(t)
	// The settings the broker runs with, read from the broker itself (not
	// from ackcheck's files): the same before and after the power loss.
	clustertest.PowerLossUpAgain(t, p, func(ctx context.Context) (map[string]string, error) {
		var bookie, broker map[string]any
		if err := clustertest.GetJSON(ctx, p.BookieHTTPURL()+"/api/v1/config/server_config", &bookie); err != nil {
			return nil, err
		}
		if err := clustertest.GetJSON(ctx, p.AdminURL()+"/admin/v2/brokers/configuration/runtime", &broker); err != nil {
			return nil, err
		}
		out := clustertest.Pick(bookie, "bookie ", "journalSyncData")
		for k, v := range clustertest.Pick(broker, "broker ", "brokerServicePort", "webServicePort", "allowAutoTopicCreation", "managedLedgerDefaultAckQuorum") {
			out[k] = v
		}
		return out, nil
	})
}
