package queen_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
)

// lazyQueen names a Queen cluster (server and PostgreSQL) on lazyfs: its
// tests need power losses, and one cluster serves them all. Get starts a
// node that does not run; without the variable it skips the test, or
// fails it when ACKCHECK_REQUIRE_QUEEN is set (CI sets it).
var lazyQueen = clustertest.Env[*queen.Cluster]{Var: "ACKCHECK_QUEEN_DIR",
	Up:     "ackcheck cluster queen up --lazyfs --lazyfs-entries journal --queen-home H --dir D",
	LazyFS: true, Require: envRequireQueen, Open: openQueen}

const envRequireQueen = "ACKCHECK_REQUIRE_QUEEN"

func openQueen(dir string) (*queen.Cluster, error) {
	return queen.OpenCluster(queen.ClusterOptions{Options: cluster.Options{Dir: dir}})
}

// envNetnsQueen names a Queen cluster started with `cluster queen up --netns`
// for the network-fault tests; without it, netnsQueen starts one of its
// own. envQueenHome is the Queen home (shared/queen/build.sh's output) such a
// cluster is made from, when neither it nor ACKCHECK_QUEEN_DIR's cluster.json
// names one. ACKCHECK_REQUIRE_NETNS (internal/need) makes the tests fail,
// not skip, where network namespaces cannot be made (CI sets it).
const (
	envNetnsQueen = "ACKCHECK_QUEEN_NETNS_DIR"
	envQueenHome  = "ACKCHECK_QUEEN_HOME"
)

// netnsQueen returns a Queen cluster whose server and database run in a
// network namespace of their own, once both answer from the Net's hub:
// the one in $ACKCHECK_QUEEN_NETNS_DIR, else one it starts in a directory
// /tmp/queenns-* (the user postgres must enter it) from the Queen home of
// $ACKCHECK_QUEEN_HOME or of $ACKCHECK_QUEEN_DIR's cluster, and takes
// down (namespaces deleted) and removes when the test ends. It skips the
// test where this machine cannot make namespaces (no root, ip or nft) or
// has no Queen home, and fails it instead when $ACKCHECK_REQUIRE_NETNS
// (namespaces) or $ACKCHECK_REQUIRE_QUEEN (a home) is set.
func netnsQueen(t *testing.T) *queen.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if dir := os.Getenv(envNetnsQueen); dir != "" {
		q, err := openQueen(dir)
		if err != nil {
			t.Fatal(err)
		}
		if q.Net() == nil {
			t.Fatalf("%s=%s holds a Queen cluster started without --netns", envNetnsQueen, dir)
		}
		if err := q.Up(ctx); err != nil {
			t.Fatal(err)
		}
		return q
	}
	need.NetnsTools(t)
	home := os.Getenv(envQueenHome)
	if d := os.Getenv(lazyQueen.Var); home == "" && d != "" {
		var cf struct {
			Home string `json:"queen_home"`
		}
		data, err := os.ReadFile(filepath.Join(d, "cluster.json"))
		if err == nil {
			err = json.Unmarshal(data, &cf)
		}
		if err != nil {
			t.Fatalf("the Queen home of %s=%s: %v", lazyQueen.Var, d, err)
		}
		home = cf.Home
	}
	if home == "" {
		if os.Getenv(envRequireQueen) != "" {
			t.Fatalf("%s is set and neither %s, %s nor %s is: no Queen home to start a cluster in a namespace from", envRequireQueen, envNetnsQueen, envQueenHome, lazyQueen.Var)
		}
		t.Skipf("no Queen cluster in a namespace: set %s (ackcheck cluster queen up --netns --queen-home H --dir D), or %s to the Queen home to start one", envNetnsQueen, envQueenHome)
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
