package cluster

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/lazyfs"
)

// The ports these tests create clusters on (no broker listens on most of
// them; create checks they are free). Apart from the ports other tests
// and .ci/run's clusters use.
const (
	setupTestNATSPort   = 30600 // +100, +200 for routes and monitoring
	setupTestKafkaPort  = 30591 // +100 for controllers
	setupTestPulsarPort = 30550 // broker; web 30580, bookie 30581
	setupTestQueenPort  = 30832 // PostgreSQL on +2
)

// snapshot reads every file under dir (or only the given ones, relative
// to dir) into a map of relative path to content; a missing one maps to
// "<missing>".
func snapshot(t *testing.T, dir string, only ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if len(only) > 0 {
		for _, rel := range only {
			out[rel] = readOr(filepath.Join(dir, rel))
		}
		return out
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
		} else if d.Type().IsRegular() {
			out[rel] = readOr(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFiles fails the test for every file that is not as it was.
func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s after the power loss: %q, before: %q", what, k, cut(after[k]), cut(v))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared after the power loss", what, k)
		}
	}
}

func cut(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

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
	t.Run("nats", func(t *testing.T) {
		l, mnt := lazyDir(t, lazyfs.EntriesStrict)
		n, err := OpenNATS(NATSOptions{Dir: filepath.Join(mnt, "nats"), BasePort: setupTestNATSPort})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.create(); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, n.Dir())
		lose(t, l)
		sameFiles(t, "create", before, snapshot(t, n.Dir()))
		// The rewrite of an fsync toggle (SetSyncAlways, between the
		// clean stop and the start).
		n.opts.SyncAlways = true
		if err := n.writeFiles(); err != nil {
			t.Fatal(err)
		}
		before = snapshot(t, n.Dir())
		lose(t, l)
		sameFiles(t, "sync_interval always", before, snapshot(t, n.Dir()))
		if !strings.Contains(before["node1/nats.conf"], "sync_interval: always") {
			t.Errorf("the rewritten nats.conf has no sync_interval: %q", before["node1/nats.conf"])
		}
		if again, err := OpenNATS(NATSOptions{Dir: n.Dir()}); err != nil || !again.SyncAlways() || again.opts.BasePort != setupTestNATSPort {
			t.Errorf("reopened after the power loss: %+v %v", again, err)
		}
	})
	t.Run("pulsar", func(t *testing.T) {
		l, mnt := lazyDir(t, lazyfs.EntriesStrict)
		p, err := OpenPulsar(PulsarOptions{Dir: filepath.Join(mnt, "pulsar"), BrokerPort: setupTestPulsarPort,
			WebPort: setupTestPulsarPort + 30, BookiePort: setupTestPulsarPort + 31})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.create(ctx); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, p.Dir())
		lose(t, l)
		sameFiles(t, "create", before, snapshot(t, p.Dir()))
		off := false
		p.opts.JournalSyncData = &off
		if err := p.writeFiles(); err != nil {
			t.Fatal(err)
		}
		before = snapshot(t, p.Dir())
		lose(t, l)
		sameFiles(t, "journalSyncData false", before, snapshot(t, p.Dir()))
		if again, err := OpenPulsar(PulsarOptions{Dir: p.Dir()}); err != nil || again.JournalSyncData() || again.opts.BrokerPort != setupTestPulsarPort {
			t.Errorf("reopened after the power loss: %+v %v", again, err)
		}
	})
	t.Run("kafka", func(t *testing.T) {
		// One node: the files of each node are alike, and each StorageTool
		// run is a JVM start.
		k, err := OpenKafka(KafkaOptions{Dir: "unused", BasePort: setupTestKafkaPort, Nodes: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := filepath.Glob(filepath.Join(k.libDir(), "kafka_2.13-"+KafkaVersion+".jar")); len(m) == 0 {
			t.Skipf("no Kafka jars in %s: `ackcheck cluster kafka up` fetches them", k.libDir())
		}
		l, mnt := lazyDir(t, lazyfs.EntriesStrict)
		k.opts.Dir = filepath.Join(mnt, "kafka")
		if err := k.create(ctx); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, k.Dir())
		if before["node1/data/meta.properties"] == "" {
			t.Fatalf("create wrote no meta.properties: %v", before)
		}
		lose(t, l)
		sameFiles(t, "create", before, snapshot(t, k.Dir()))
	})
	t.Run("queen", func(t *testing.T) {
		bin, err := pgBin()
		if err != nil || os.Geteuid() != 0 {
			t.Skipf("needs Debian's PostgreSQL and root (%v)", err)
		}
		// Journal entries: PostgreSQL relies on them. Its CREATE DATABASE
		// does not fsync base/ after making the database's directory, and
		// in strict mode a loss took base/16384 away (measured).
		l, mnt := lazyDir(t, lazyfs.EntriesJournal)
		// create only checks that the Queen server's files exist: it
		// does not start the server.
		home := filepath.Join(mnt, "home")
		os.MkdirAll(filepath.Join(home, "schema"), 0o755)
		os.WriteFile(filepath.Join(home, "queen-server"), nil, 0o755)
		os.WriteFile(filepath.Join(home, "schema", "schema.sql"), nil, 0o644)
		q, err := OpenQueen(QueenOptions{Dir: filepath.Join(mnt, "queen"), Home: home, BasePort: setupTestQueenPort})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.StopNode(context.Background(), QueenDBNode, 10*time.Second) })
		if err := q.create(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("PostgreSQL of %s created and running", bin)
		files := []string{"cluster.json", "node2/data/ackcheck.conf", "node2/data/postgresql.conf"}
		before := snapshot(t, q.Dir(), files...)
		if !strings.Contains(before["node2/data/postgresql.conf"], "include_if_exists = 'ackcheck.conf'") ||
			!strings.Contains(before["node2/data/ackcheck.conf"], "port = 30834") {
			t.Fatalf("setup files: %v", before)
		}
		// Power loss: PostgreSQL and its backends SIGKILLed, then the
		// disk keeps only what was fsynced.
		if _, err := q.Signal(QueenDBNode, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if pid, _ := q.PID(QueenDBNode); pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("PostgreSQL did not die within 30 s of SIGKILL")
			}
		}
		if err := q.waitBackendsGone(ctx); err != nil {
			t.Fatal(err)
		}
		r := lose(t, l)
		t.Logf("lazyfs under the whole cluster: %d files cut back, %d bytes dropped, %d directory changes undone", r.FilesRestored, r.BytesDropped, r.EntriesUndone)
		sameFiles(t, "create", before, snapshot(t, q.Dir(), files...))
		if _, err := os.Stat(q.pgSocketDir()); err != nil {
			t.Errorf("PostgreSQL's socket dir after the power loss: %v", err)
		}
		// Up again on the same port, with the database queen (made
		// durable by the checkpoint after CREATE DATABASE).
		if err := q.StartNode(ctx, QueenDBNode); err != nil {
			t.Fatal(err)
		}
		if err := q.waitDB(ctx, time.Minute, "queen"); err != nil {
			t.Fatalf("PostgreSQL after the power loss: %v", err)
		}
		// The rewrite of an fsync toggle (SetFsync, while PostgreSQL is
		// stopped), then another power loss.
		if err := q.StopNode(ctx, QueenDBNode, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		q.opts.SynchronousCommitOff = true
		if err := q.writeSettings(); err != nil {
			t.Fatal(err)
		}
		before = snapshot(t, q.Dir(), files...)
		lose(t, l)
		sameFiles(t, "synchronous_commit off", before, snapshot(t, q.Dir(), files...))
		if !strings.Contains(before["node2/data/ackcheck.conf"], "synchronous_commit = off") {
			t.Errorf("the rewritten ackcheck.conf: %q", before["node2/data/ackcheck.conf"])
		}
	})
}
