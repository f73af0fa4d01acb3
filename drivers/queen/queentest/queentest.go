// Package queentest gives tests the real local Queen cluster that .ci/run
// (or a developer) started, or skips them with what to do.
package queentest

import (
	"context"
	"os"
	"testing"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
)

// EnvCluster names a Queen cluster on lazyfs: its tests need power losses,
// and one cluster serves them all. EnvRequire makes them fail, not skip,
// without it (CI sets it).
const (
	EnvCluster = "ACKCHECK_QUEEN_DIR"
	EnvRequire = "ACKCHECK_REQUIRE_QUEEN"
)

// Cluster returns the Queen cluster (server and PostgreSQL, on lazyfs) in
// $ACKCHECK_QUEEN_DIR once both answer, starting a node that does not
// run. Without the variable it skips the test, or fails it when
// $ACKCHECK_REQUIRE_QUEEN is set.
func Cluster(t *testing.T) *queen.Cluster {
	t.Helper()
	if os.Getenv(EnvCluster) == "" && os.Getenv(EnvRequire) != "" {
		t.Fatalf("%s is set and %s is not: .ci/run starts a Queen cluster and sets it", EnvRequire, EnvCluster)
	}
	q := clustertest.FromEnv(t, EnvCluster, "ackcheck cluster queen up --lazyfs --lazyfs-entries journal --queen-home H --dir D", open, true, 0)
	if err := q.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return q
}

func open(dir string) (*queen.Cluster, error) {
	return queen.OpenCluster(queen.ClusterOptions{Dir: dir})
}
