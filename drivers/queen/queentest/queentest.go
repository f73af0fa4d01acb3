// Package queentest gives tests the real local Queen cluster that .ci/run
// (or a developer) started, or skips them with what to do.
package queentest

import (
	"context"
	"encoding/json"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
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
	return queen.OpenCluster(queen.ClusterOptions{Options: cluster.Options{Dir: dir}})
}

// EnvNetns names a Queen cluster started with `cluster queen up --netns`
// for the network-fault tests; without it, NetnsCluster starts one of its
// own. EnvHome is the Queen home (shared/queen/build.sh's output) such a
// cluster is made from, when neither it nor EnvCluster's cluster.json
// names one. ACKCHECK_REQUIRE_NETNS (internal/need) makes the tests fail,
// not skip, where network namespaces cannot be made (CI sets it).
const (
	EnvNetns = "ACKCHECK_QUEEN_NETNS_DIR"
	EnvHome  = "ACKCHECK_QUEEN_HOME"
)

// NetnsCluster returns a Queen cluster whose server and database run in a
// network namespace of their own, once both answer from the Net's hub:
// the one in $ACKCHECK_QUEEN_NETNS_DIR, else one it starts in a directory
// /tmp/queenns-* (the user postgres must enter it) from the Queen home of
// $ACKCHECK_QUEEN_HOME or of $ACKCHECK_QUEEN_DIR's cluster, and takes
// down (namespaces deleted) and removes when the test ends. It skips the
// test where this machine cannot make namespaces (no root, ip or nft) or
// has no Queen home, and fails it instead when $ACKCHECK_REQUIRE_NETNS
// (namespaces) or $ACKCHECK_REQUIRE_QUEEN (a home) is set.
func NetnsCluster(t *testing.T) *queen.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if dir := os.Getenv(EnvNetns); dir != "" {
		q, err := queen.OpenCluster(queen.ClusterOptions{Options: cluster.Options{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		if q.Net() == nil {
			t.Fatalf("%s=%s holds a Queen cluster started without --netns", EnvNetns, dir)
		}
		if err := q.Up(ctx); err != nil {
			t.Fatal(err)
		}
		return q
	}
	need.NetnsTools(t)
	home := os.Getenv(EnvHome)
	if d := os.Getenv(EnvCluster); home == "" && d != "" {
		var cf struct {
			Home string `json:"queen_home"`
		}
		data, err := os.ReadFile(filepath.Join(d, "cluster.json"))
		if err == nil {
			err = json.Unmarshal(data, &cf)
		}
		if err != nil {
			t.Fatalf("the Queen home of %s=%s: %v", EnvCluster, d, err)
		}
		home = cf.Home
	}
	if home == "" {
		if os.Getenv(EnvRequire) != "" {
			t.Fatalf("%s is set and neither %s, %s nor %s is: no Queen home to start a cluster in a namespace from", EnvRequire, EnvNetns, EnvHome, EnvCluster)
		}
		t.Skipf("no Queen cluster in a namespace: set %s (ackcheck cluster queen up --netns --queen-home H --dir D), or %s to the Queen home to start one", EnvNetns, EnvHome)
	}
	dir, err := os.MkdirTemp("/tmp", "queenns-")
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL runs as the user postgres, which must enter it.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	q, err := queen.OpenCluster(queen.ClusterOptions{Options: cluster.Options{Dir: filepath.Join(dir, "queen"), NetNS: true}, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := q.Down(ctx); err != nil {
			t.Errorf("take the Queen cluster in a namespace down: %v", err)
			return // its processes may still run: the directory stays, for the next down
		}
		// down deletes the namespaces: none of its prefix is left.
		if _, ok, err := netns.Open(ctx, q.Net().Prefix); ok || err != nil {
			t.Errorf("network namespaces %s-* after down (%v)", q.Net().Prefix, err)
		}
		os.RemoveAll(dir)
	})
	start := time.Now()
	if err := q.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Queen in namespace %s up in %s", q.Net().NodeNS(queen.ServerNode), time.Since(start).Round(time.Millisecond))
	return q
}
