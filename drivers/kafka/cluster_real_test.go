package kafka_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
)

// TestRealPowerLossUpAgain takes the lazyfs cluster .ci/run starts
// (ACKCHECK_KAFKA_LAZYFS_DIR) through a power loss of every node, as the power-loss fault
// does it (SIGKILL of every broker, then each lazyfs drops what was not
// fsynced), and brings it up again: the same ports, the same settings,
// every node healthy. It runs before this package's other tests (its file
// sorts first), and no package before drivers/kafka uses this cluster, so the
// cluster is as `cluster up` left it: a setup file that `up` wrote
// without fsync is gone here, as in issue 24, where PostgreSQL came back
// on port 5432 and the Queen server never started.
func TestRealPowerLossUpAgain(t *testing.T) {
	k := lazyKafka.Get(t)
	// The settings the broker runs with, read from the broker itself (not
	// from ackcheck's files): the same before and after the power loss.
	clustertest.PowerLossUpAgain(t, k, func(ctx context.Context) (map[string]string, error) {
		out := map[string]string{}
		for _, id := range k.Nodes() {
			// Written by the storage format, on lazyfs: the cluster and
			// node IDs the broker starts with.
			data, err := os.ReadFile(filepath.Join(k.DataDir(id), "meta.properties"))
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, "cluster.id=") || strings.HasPrefix(line, "node.id=") {
					out[fmt.Sprintf("node%d %s", id, line)] = "set"
				}
			}
		}
		return out, nil
	})
}
