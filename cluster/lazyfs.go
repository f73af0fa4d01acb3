package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/lazyfs"
)

// A cluster made with LazyFS runs, beside each node's broker, an
// `ackcheck lazyfs mount` process that serves the node's data dir:
//
//	<node dir>/data.backing/   what the disk holds
//	<node dir>/data/           the lazyfs mount the broker writes to
//	<node dir>/lazyfs.sock     its control socket (lose, sync, status)
//	<node dir>/lazyfs.pid      its PID
//	<node dir>/lazyfs.log      its output
//
// The mounts live as long as the cluster: brokers die and restart on them.

// Mount is one node's lazyfs mount.
type Mount struct {
	ID      int32
	NodeDir string
	DataDir string // the mountpoint
	Binary  string // the ackcheck binary that serves it
	UpCmd   string // the command that mounts it again, for error messages
	Entries string // lazyfs --entries mode; "" for its default (strict)
}

func (m Mount) Backing() string { return filepath.Join(m.NodeDir, "data.backing") }
func (m Mount) Socket() string  { return filepath.Join(m.NodeDir, "lazyfs.sock") }
func (m Mount) PIDFile() string { return filepath.Join(m.NodeDir, "lazyfs.pid") }
func (m Mount) LogFile() string { return filepath.Join(m.NodeDir, "lazyfs.log") }

// Marker is what the mount's command line holds: its mountpoint as the
// argument of --mountpoint.
func (m Mount) Marker() string { return "--mountpoint\x00" + m.DataDir + "\x00" }

// PID is the mount's lazyfs process, 0 if it does not run. Like a
// broker's, it counts only if its command line names this mountpoint.
func (m Mount) PID() int {
	pid, _ := PIDFrom(m.PIDFile(), m.Marker())
	return pid
}

// Start mounts the data dir, unless it is mounted, and waits until its
// control socket answers.
func (m Mount) Start(ctx context.Context) error {
	if m.PID() != 0 {
		return nil
	}
	if m.Binary == "" {
		return fmt.Errorf("no ackcheck binary recorded to serve lazyfs: run `%s` again", m.UpCmd)
	}
	for _, d := range []string{m.Backing(), m.DataDir} {
		if err := MkdirAllDurable(d, 0o755); err != nil {
			return err
		}
	}
	args := []string{"lazyfs", "mount", "--backing", m.Backing(), "--mountpoint", m.DataDir, "--control", m.Socket()}
	if m.Entries != "" {
		args = append(args, "--entries", m.Entries)
	}
	if err := StartDetached(exec.Command(m.Binary, args...), m.LogFile(), m.PIDFile(), fmt.Sprintf("lazyfs for node %d", m.ID)); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := lazyfs.Control(cctx, m.Socket(), "status")
		cancel()
		if err == nil {
			return nil
		}
		if m.PID() == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(m.LogFile())
			return fmt.Errorf("lazyfs for node %d did not come up (%v); %s says:\n%s", m.ID, err, m.LogFile(), Tail(data, 1500))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Check fails if the mount does not answer: a broker must never start on
// the bare mountpoint.
func (m Mount) Check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := lazyfs.Control(cctx, m.Socket(), "status"); err != nil {
		return fmt.Errorf("node %d's data dir is not on a running lazyfs (%v): run `%s` to mount it", m.ID, err, m.UpCmd)
	}
	return nil
}

// Stop unmounts the data dir (SIGTERM to its lazyfs), and clears the dead
// mount a killed lazyfs leaves.
func (m Mount) Stop(ctx context.Context) error {
	if err := StopPIDFile(ctx, m.PIDFile(), m.Marker(), 15*time.Second); err != nil {
		return err
	}
	return lazyfs.ClearDeadMount(m.DataDir)
}

// Lose makes the data dir lose every write not fsynced; the caller makes
// sure the broker is dead. It returns when the loss is complete, with what
// was lost.
func (m Mount) Lose(ctx context.Context) (string, error) {
	r, err := lazyfs.Control(ctx, m.Socket(), fmt.Sprintf("lose %s", lazyfs.DefaultCloseWait))
	if err != nil {
		return "", err
	}
	l := r.Loss
	s := fmt.Sprintf("%d files cut back to their last fsync (%d bytes dropped, %d bytes of overwritten pages restored), %d directory changes undone",
		l.FilesRestored, l.BytesDropped, l.BytesRestored, l.EntriesUndone)
	if l.EntriesSuperseded > 0 {
		s += fmt.Sprintf(" (%d more implied by later durable ones)", l.EntriesSuperseded)
	}
	if l.OpenHandles > 0 {
		s += fmt.Sprintf("; %d files were still open", l.OpenHandles)
	}
	if len(l.UndoFailures) > 0 {
		return s, fmt.Errorf("%s; could not undo: %s", s, strings.Join(l.UndoFailures, "; "))
	}
	return s, nil
}

// Sync makes everything on the mount durable.
func (m Mount) Sync(ctx context.Context) error {
	if _, err := lazyfs.Control(ctx, m.Socket(), "sync"); err != nil {
		return fmt.Errorf("sync node %d's lazyfs: %w", m.ID, err)
	}
	return nil
}

// CanLoseOnMount is CanLoseUnsynced for any local cluster.
func CanLoseOnMount(m *Mount, dir, kind string) error {
	if m == nil {
		return fmt.Errorf("the cluster in %s was not created with --lazyfs: its data dirs cannot lose unsynced writes (start one with `ackcheck cluster %s up --lazyfs`)", dir, kind)
	}
	return nil
}

// LoseOnMount is LoseUnsynced for any local cluster whose node runs as
// pid (0: it does not).
func LoseOnMount(ctx context.Context, m *Mount, dir string, pid int) (string, error) {
	if m == nil {
		return "", fmt.Errorf("the cluster in %s was not created with --lazyfs: its data dirs cannot lose unsynced writes", dir)
	}
	if pid != 0 {
		return "", fmt.Errorf("node %d still runs as PID %d: a loss under a live broker is not a power loss", m.ID, pid)
	}
	return m.Lose(ctx)
}

// LazyBinary is the ackcheck binary that will serve a new cluster's mounts.
func LazyBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the ackcheck binary to serve lazyfs: %w", err)
	}
	return exe, nil
}

// DataDirInode is the inode of a node's data dir: of its backing directory
// when it is a lazyfs mount, whose root a FUSE stat reports as inode 0.
func DataDirInode(m *Mount, dir string) (uint64, error) {
	if m != nil {
		dir = m.Backing()
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
