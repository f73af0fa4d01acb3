package queen

import (
	"context"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// The port this test creates its cluster on (no broker listens on it;
// create checks it is free), apart from the ports other tests and .ci/run's
// clusters use.
const setupTestQueenPort = 30832 // PostgreSQL on +2

// Each launcher's setup (create, and the rewrite of a setting that an
// fsync toggle makes) on a lazyfs that then loses power: every file it
// wrote comes back as it was written. The cluster's whole directory is on
// the lazyfs here (in .ci/run's clusters only the data dirs are), so that
// cluster.json and the configuration files beside the data dirs are put
// to the test too. Kafka's case needs Java and Kafka's jars in the cache
// (`ackcheck cluster kafka up` fetches them), Queen's Debian's PostgreSQL
// and root (initdb runs as postgres); each skips without.
func TestCreateSurvivesPowerLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin, err := pgBin()
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs Debian's PostgreSQL and root (%v)", err)
	}
	// Journal entries: PostgreSQL relies on them. Its CREATE DATABASE
	// does not fsync base/ after making the database's directory, and
	// in strict mode a loss took base/16384 away (measured).
	l, mnt := clustertest.LazyDir(t, lazyfs.EntriesJournal)
	// create only checks that the Queen server's files exist: it
	// does not start the server.
	home := filepath.Join(mnt, "home")
	os.MkdirAll(filepath.Join(home, "schema"), 0o755)
	os.WriteFile(filepath.Join(home, "queen-server"), nil, 0o755)
	os.WriteFile(filepath.Join(home, "schema", "schema.sql"), nil, 0o644)
	q, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: filepath.Join(mnt, "queen")}, Home: home, BasePort: setupTestQueenPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.StopNode(context.Background(), DBNode, 10*time.Second) })
	if err := q.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL of %s created and running", bin)
	files := []string{"cluster.json", "node2/data/ackcheck.conf", "node2/data/postgresql.conf"}
	before := clustertest.Snapshot(t, q.Dir(), files...)
	if !strings.Contains(before["node2/data/postgresql.conf"], "include_if_exists = 'ackcheck.conf'") ||
		!strings.Contains(before["node2/data/ackcheck.conf"], "port = 30834") {
		t.Fatalf("setup files: %v", before)
	}
	// Power loss: PostgreSQL and its backends SIGKILLed, then the
	// disk keeps only what was fsynced.
	if _, err := q.Signal(DBNode, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pid, _ := q.PID(DBNode); pid == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("PostgreSQL did not die within 30 s of SIGKILL")
		}
	}
	if err := q.waitBackendsGone(ctx); err != nil {
		t.Fatal(err)
	}
	r := clustertest.Lose(t, l)
	t.Logf("lazyfs under the whole cluster: %d files cut back, %d bytes dropped, %d directory changes undone", r.FilesRestored, r.BytesDropped, r.EntriesUndone)
	clustertest.SameFiles(t, "create", before, clustertest.Snapshot(t, q.Dir(), files...))
	if _, err := os.Stat(q.pgSocketDir()); err != nil {
		t.Errorf("PostgreSQL's socket dir after the power loss: %v", err)
	}
	// Up again on the same port, with the database queen (made
	// durable by the checkpoint after CREATE DATABASE).
	if err := q.StartNode(ctx, DBNode); err != nil {
		t.Fatal(err)
	}
	if err := q.waitDB(ctx, time.Minute, "queen"); err != nil {
		t.Fatalf("PostgreSQL after the power loss: %v", err)
	}
	// The rewrite of an fsync toggle (SetFsync, while PostgreSQL is
	// stopped), then another power loss.
	if err := q.StopNode(ctx, DBNode, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	q.opts.SynchronousCommitOff = true
	if err := q.writeSettings(); err != nil {
		t.Fatal(err)
	}
	before = clustertest.Snapshot(t, q.Dir(), files...)
	clustertest.Lose(t, l)
	clustertest.SameFiles(t, "synchronous_commit off", before, clustertest.Snapshot(t, q.Dir(), files...))
	if !strings.Contains(before["node2/data/ackcheck.conf"], "synchronous_commit = off") {
		t.Errorf("the rewritten ackcheck.conf: %q", before["node2/data/ackcheck.conf"])
	}
}

// What an existing cluster.json records wins over the options given, a
// setting it leaves out (synchronous_commit_off, written only when off)
// too; a new cluster takes the options.
func TestRecordedSettingWins(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(`{"kind":"queen","queen_home":"/q","base_port":26632}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		dir    string
		wantOn bool
	}{{"recorded on", dir, true}, {"new", filepath.Join(dir, "new"), false}} {
		q, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: tc.dir}, SynchronousCommitOff: true})
		if err != nil || q.FsyncOn() != tc.wantOn {
			t.Errorf("%s: synchronous_commit on %v (%v), want %v", tc.name, q.FsyncOn(), err, tc.wantOn)
		}
	}
}
