package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// lazyCluster is a local cluster of fake processes whose node 2 has its
// data dir on a real lazyfs mount, served at the mount's socket.
type lazyCluster struct {
	*fakeNodes
	mount *cluster.Mount
}

func (c lazyCluster) Nodes() []int32                     { return c.IDs() }
func (c lazyCluster) PID(id int32) (int, error)          { return c.fakeNodes.PID(context.Background(), id) }
func (c lazyCluster) DataDirInode(int32) (uint64, error) { return 1, nil }
func (c lazyCluster) Dir() string                        { return filepath.Dir(c.mount.NodeDir) }
func (c lazyCluster) Signal(id int32, sig syscall.Signal) (int, error) {
	return c.fakeNodes.Signal(context.Background(), id, sig)
}
func (c lazyCluster) StopNode(ctx context.Context, id int32, g time.Duration) error {
	return c.fakeNodes.Stop(ctx, id, g)
}
func (c lazyCluster) StartNode(ctx context.Context, id int32) error {
	return c.fakeNodes.Start(ctx, id)
}
func (c lazyCluster) LoseUnsynced(context.Context, int32) (string, error) { return "", nil }
func (c lazyCluster) CanLoseUnsynced(int32) error                         { return nil }
func (c lazyCluster) Mount(id int32) *cluster.Mount {
	if id == 2 {
		return c.mount
	}
	return nil
}

// disk-error node:2 fsync on a local cluster's lazyfs node makes fsync in
// its data dir return EIO; disk-ok ends it and records what failed; a
// heal after a disk-error left in force ends it too.
func TestDiskErrorOnLazyfsNode(t *testing.T) {
	dir := t.TempDir()
	m := &cluster.Mount{ID: 2, NodeDir: filepath.Join(dir, "node2"), DataDir: filepath.Join(dir, "node2", "data")}
	if err := os.MkdirAll(m.Backing(), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := lazyfs.Mount(m.Backing(), m.DataDir, lazyfs.Options{})
	if err != nil {
		if os.Getenv("ACKCHECK_REQUIRE_FUSE") != "" {
			t.Fatalf("FUSE is required here: %v", err)
		}
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	defer fs.Unmount()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fs.Serve(ctx, m.Socket()) //nolint:errcheck // ends with the test
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(m.Socket()); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fsyncErr := func() error {
		f, err := os.OpenFile(filepath.Join(m.DataDir, "seg"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Write([]byte("x"))
		return f.Sync()
	}
	nodes := Local{lazyCluster{newFakeNodes(1, 2, 3), m}}
	if err := Preflight(context.Background(), Env{Nodes: nodes}, mustParse(t, "at=1s disk-error node:2 fsync")); err != nil {
		t.Fatalf("preflight on a lazyfs node: %v", err)
	}
	if err := Preflight(context.Background(), Env{Nodes: nodes}, mustParse(t, "at=1s disk-error node:1 fsync")); err == nil || !strings.Contains(err.Error(), "--lazyfs") {
		t.Errorf("preflight on a node without lazyfs: %v", err)
	}
	in := &Injector{Nodes: nodes}
	if err := fsyncErr(); err != nil {
		t.Fatalf("fsync before the fault: %v", err)
	}
	apply(t, in, "at=1s disk-error node:2 fsync", Applied)
	if err := fsyncErr(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync under disk-error: %v, want EIO", err)
	}
	fsyncErr()
	rec := apply(t, in, "at=2s disk-ok node:2", Applied)
	if !strings.Contains(rec.Disk, "fsync: 2 of 2 calls failed") {
		t.Errorf("disk-ok recorded %q", rec.Disk)
	}
	if err := fsyncErr(); err != nil {
		t.Errorf("fsync after disk-ok: %v", err)
	}
	if _, pending := in.Journal.Pending(); len(pending) != 0 {
		t.Errorf("pending after disk-ok: %v", pending)
	}
	apply(t, in, "at=3s disk-error node:2 fsync 50%", Applied)
	if _, err := in.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := fsyncErr(); err != nil {
			t.Fatalf("fsync %d after the heal: %v", i, err)
		}
	}
}

func mustParse(t *testing.T, s string) []Step {
	t.Helper()
	steps, err := ParseSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}
