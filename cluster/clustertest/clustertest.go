// Package clustertest gives tests a real local cluster that .ci/run (or a
// developer) started, or skips them with what to do, and the helpers every
// launcher's power-loss tests share: a lazyfs of the test's own, snapshots
// of the files a launcher wrote, and a power loss of every node of a
// local cluster. It names no broker: a broker's tests name the variables
// of its clusters (Env) and get a cluster from them.
package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// Running is what a test needs of every local cluster before it uses it.
type Running interface {
	LazyFS() bool
	WaitReady(ctx context.Context, timeout time.Duration) error
}

// FromEnv opens the cluster in the directory $env names and returns it
// once it is ready within ready (0: not waited for). It skips the test,
// saying to run start, when env is not set, and fails it when lazy asks
// for a cluster on lazyfs and the one found is not (a power loss there
// would lose nothing).
func FromEnv[C Running](t *testing.T, env, start string, open func(dir string) (C, error), lazy bool, ready time.Duration) C {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s not set: start a cluster with `%s` and set it to D", env, start)
	}
	c, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lazy && !c.LazyFS() {
		t.Fatalf("%s=%s is a cluster without lazyfs", env, dir)
	}
	if ready > 0 {
		if err := c.WaitReady(context.Background(), ready); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// Env is a variable that names the directory of a running local cluster
// of one broker (.ci/run sets it), for that broker's real-cluster tests.
type Env[C Running] struct {
	// Var is the variable (ACKCHECK_KAFKA_CLUSTER_DIR).
	Var string
	// Up is the command that starts such a cluster, for the skip's
	// message.
	Up string
	// LazyFS: the cluster must be on lazyfs (a power loss elsewhere
	// would lose nothing).
	LazyFS bool
	// Ready is how long Get waits for every node to answer; 0 brings the
	// cluster up instead (Up starts a node that does not run).
	Ready time.Duration
	// Require, when set in the environment, makes a missing Var fail the
	// test rather than skip it (CI sets it).
	Require string
	// Open opens the cluster in a directory.
	Open func(dir string) (C, error)
}

// Get returns the cluster in $Var once it is ready (FromEnv), or skips
// the test when Var is not set.
func (e Env[C]) Get(t *testing.T) C {
	t.Helper()
	if e.Require != "" && os.Getenv(e.Var) == "" && os.Getenv(e.Require) != "" {
		t.Fatalf("%s is set and %s is not: .ci/run starts the cluster and sets it", e.Require, e.Var)
	}
	c := FromEnv(t, e.Var, e.Up, e.Open, e.LazyFS, e.Ready)
	if u, ok := any(c).(interface{ Up(context.Context) error }); ok && e.Ready == 0 {
		if err := u.Up(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// LazyDir mounts a lazyfs for one test and returns it with its
// mountpoint. entries is its directory-entry mode: lazyfs.EntriesStrict (a
// new name is durable only once its directory is fsynced, the harshest
// legal filesystem: what ackcheck's own writes must survive) or
// lazyfs.EntriesJournal (as ext4 and XFS: for a broker, such as
// PostgreSQL, that relies on it). It skips the test when FUSE cannot be
// mounted here, and fails it instead when ACKCHECK_REQUIRE_FUSE is set
// (.ci/run sets it).
func LazyDir(t *testing.T, entries string) (*lazyfs.FS, string) {
	t.Helper()
	// Not t.TempDir: a broker's own user (postgres) must be able to enter
	// it, and t.TempDir's parent is mode 0700.
	dir, err := os.MkdirTemp("", "setup-lazy-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o711)
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := lazyfs.Mount(backing, mnt, lazyfs.Options{Entries: entries})
	if err != nil {
		os.RemoveAll(dir)
		need.Skip(t, need.FUSE, "cannot mount FUSE here: "+err.Error())
	}
	t.Cleanup(func() {
		if err := l.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
		os.RemoveAll(dir)
	})
	return l, mnt
}

// Lose is a power loss of the lazyfs: everything not fsynced goes.
func Lose(t *testing.T, l *lazyfs.FS) lazyfs.LossReport {
	t.Helper()
	r := l.Lose(5 * time.Second)
	if len(r.UndoFailures) > 0 {
		t.Fatalf("lazyfs could not undo: %v", r.UndoFailures)
	}
	return r
}

// ReadOr is path's content, or "<missing>".
func ReadOr(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "<missing>"
	}
	return string(data)
}

// Snapshot reads every file under dir (or only the given ones, relative
// to dir) into a map of relative path to content; a missing one maps to
// "<missing>".
func Snapshot(t *testing.T, dir string, only ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if len(only) > 0 {
		for _, rel := range only {
			out[rel] = ReadOr(filepath.Join(dir, rel))
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
			out[rel] = ReadOr(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameFiles fails the test for every file that is not as it was.
func SameFiles(t *testing.T, what string, before, after map[string]string) {
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

// PowerLossAll is a power loss of every node of c: each broker SIGKILLed,
// then, once all are gone, each node's lazyfs loses what was not fsynced.
func PowerLossAll(ctx context.Context, t *testing.T, c cluster.Local) {
	t.Helper()
	for _, id := range c.Nodes() {
		if _, err := c.Signal(id, syscall.SIGKILL); err != nil {
			t.Fatalf("power loss: %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range c.Nodes() {
		for {
			if pid, err := c.PID(id); err == nil && pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d did not die within 30 s of SIGKILL", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, id := range c.Nodes() {
		lost, err := c.LoseUnsynced(ctx, id)
		if err != nil {
			t.Fatalf("power loss of node %d: %v", id, err)
		}
		t.Logf("power loss of node %d: %s", id, lost)
	}
}

// endpoints lists every node's addresses.
func endpoints(ctx context.Context, c cluster.Local) map[int32]string {
	out := map[int32]string{}
	for _, s := range c.Health(ctx) {
		out[s.ID] = fmt.Sprint(s.Endpoints)
	}
	return out
}

// Settings reads the settings a broker runs with from the broker itself
// (not from ackcheck's files).
type Settings func(ctx context.Context) (map[string]string, error)

// PowerLossUpAgain takes a local cluster on lazyfs through a power loss of
// every node, as the power-loss fault does it, brings it up again, and
// checks that every node is healthy, on the same addresses, with the same
// settings as before. Run it on a cluster fresh from `cluster up`, before
// other tests use it: a setup file that `up` wrote without fsync is gone
// then, as in issue 24, where PostgreSQL came back on port 5432 and the
// Queen server never started.
func PowerLossUpAgain(t *testing.T, c cluster.Local, settings Settings) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	before, err := settings(ctx)
	if err != nil {
		t.Fatalf("settings before the power loss: %v", err)
	}
	addrs := endpoints(ctx, c)
	PowerLossAll(ctx, t, c)
	start := time.Now()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("up after a power loss of every node: %v", err)
	}
	t.Logf("up again %.1f s after the power loss", time.Since(start).Seconds())
	for _, s := range c.Health(ctx) {
		if !s.Healthy {
			t.Errorf("node %d after the power loss: %s", s.ID, s.Health)
		}
	}
	if got := endpoints(ctx, c); fmt.Sprint(got) != fmt.Sprint(addrs) {
		t.Errorf("addresses after the power loss: %v, before: %v", got, addrs)
	}
	after, err := settings(ctx)
	if err != nil {
		t.Fatalf("settings after the power loss: %v", err)
	}
	if len(before) == 0 {
		t.Fatal("no settings read")
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after the power loss: %q, before: %q", k, after[k], v)
		}
	}
	t.Logf("settings kept: %v", before)
}

// GetJSON decodes the JSON at url.
func GetJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// Pick reads the fields at the given dotted paths of a decoded JSON
// object, each as text ("<none>" when absent).
func Pick(v map[string]any, prefix string, paths ...string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		var cur any = v
		for _, k := range strings.Split(p, ".") {
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		if cur == nil {
			out[prefix+p] = "<none>"
		} else {
			out[prefix+p] = fmt.Sprint(cur)
		}
	}
	return out
}
