package cluster

import (
	"context"
	"errors"
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

// lazyMount is one node's lazyfs mount.
type lazyMount struct {
	id      int32
	nodeDir string
	dataDir string // the mountpoint
	binary  string // the ackcheck binary that serves it
	upCmd   string // the command that mounts it again, for error messages
	entries string // lazyfs --entries mode; "" for its default (strict)
}

func (m lazyMount) backing() string { return filepath.Join(m.nodeDir, "data.backing") }
func (m lazyMount) socket() string  { return filepath.Join(m.nodeDir, "lazyfs.sock") }
func (m lazyMount) pidFile() string { return filepath.Join(m.nodeDir, "lazyfs.pid") }
func (m lazyMount) logFile() string { return filepath.Join(m.nodeDir, "lazyfs.log") }

// marker is what the mount's command line holds: its mountpoint as the
// argument of --mountpoint.
func (m lazyMount) marker() string { return "--mountpoint\x00" + m.dataDir + "\x00" }

// pid is the mount's lazyfs process, 0 if it does not run. Like a
// broker's, it counts only if its command line names this mountpoint.
func (m lazyMount) pid() int {
	pid, _ := pidFrom(m.pidFile(), m.marker())
	return pid
}

// start mounts the data dir, unless it is mounted, and waits until its
// control socket answers.
func (m lazyMount) start(ctx context.Context) error {
	if m.pid() != 0 {
		return nil
	}
	if m.binary == "" {
		return fmt.Errorf("no ackcheck binary recorded to serve lazyfs: run `%s` again", m.upCmd)
	}
	for _, d := range []string{m.backing(), m.dataDir} {
		if err := mkdirAllDurable(d, 0o755); err != nil {
			return err
		}
	}
	args := []string{"lazyfs", "mount", "--backing", m.backing(), "--mountpoint", m.dataDir, "--control", m.socket()}
	if m.entries != "" {
		args = append(args, "--entries", m.entries)
	}
	if err := startDetached(exec.Command(m.binary, args...), m.logFile(), m.pidFile(), fmt.Sprintf("lazyfs for node %d", m.id)); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := lazyfs.Control(cctx, m.socket(), "status")
		cancel()
		if err == nil {
			return nil
		}
		if m.pid() == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(m.logFile())
			return fmt.Errorf("lazyfs for node %d did not come up (%v); %s says:\n%s", m.id, err, m.logFile(), tail(data, 1500))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// check fails if the mount does not answer: a broker must never start on
// the bare mountpoint.
func (m lazyMount) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := lazyfs.Control(cctx, m.socket(), "status"); err != nil {
		return fmt.Errorf("node %d's data dir is not on a running lazyfs (%v): run `%s` to mount it", m.id, err, m.upCmd)
	}
	return nil
}

// stop unmounts the data dir (SIGTERM to its lazyfs), and clears the dead
// mount a killed lazyfs leaves.
func (m lazyMount) stop(ctx context.Context) error {
	if err := stopPIDFile(ctx, m.pidFile(), m.marker(), 15*time.Second); err != nil {
		return err
	}
	return lazyfs.ClearDeadMount(m.dataDir)
}

// lose makes the data dir lose every write not fsynced; the caller makes
// sure the broker is dead. It returns when the loss is complete, with what
// was lost.
func (m lazyMount) lose(ctx context.Context) (string, error) {
	r, err := lazyfs.Control(ctx, m.socket(), fmt.Sprintf("lose %s", lazyfs.DefaultCloseWait))
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

// sync makes everything on the mount durable.
func (m lazyMount) sync(ctx context.Context) error {
	if _, err := lazyfs.Control(ctx, m.socket(), "sync"); err != nil {
		return fmt.Errorf("sync node %d's lazyfs: %w", m.id, err)
	}
	return nil
}

// canLose is CanLoseUnsynced for any local cluster.
func canLose(m *lazyMount, dir, kind string) error {
	if m == nil {
		return fmt.Errorf("the cluster in %s was not created with --lazyfs: its data dirs cannot lose unsynced writes (start one with `ackcheck cluster %s up --lazyfs`)", dir, kind)
	}
	return nil
}

// loseUnsynced is LoseUnsynced for any local cluster whose node runs as
// pid (0: it does not).
func loseUnsynced(ctx context.Context, m *lazyMount, dir string, pid int) (string, error) {
	if m == nil {
		return "", fmt.Errorf("the cluster in %s was not created with --lazyfs: its data dirs cannot lose unsynced writes", dir)
	}
	if pid != 0 {
		return "", fmt.Errorf("node %d still runs as PID %d: a loss under a live broker is not a power loss", m.id, pid)
	}
	return m.lose(ctx)
}

// lazyBinary is the ackcheck binary that will serve a new cluster's mounts.
func lazyBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the ackcheck binary to serve lazyfs: %w", err)
	}
	return exe, nil
}

// LazyFS reports whether the nodes' data dirs are on lazyfs.
func (k *Kafka) LazyFS() bool { return k.opts.LazyFS }

// mount is node id's lazyfs mount; nil when the cluster has none.
func (k *Kafka) mount(id int32) *lazyMount {
	if !k.opts.LazyFS {
		return nil
	}
	return &lazyMount{id: id, nodeDir: k.nodeDir(id), dataDir: k.DataDir(id), binary: k.opts.LazyFSBinary,
		upCmd: "ackcheck cluster kafka up --dir " + k.opts.Dir}
}

// ControlSocket is node id's lazyfs control socket.
func (k *Kafka) ControlSocket(id int32) string {
	return lazyMount{nodeDir: k.nodeDir(id)}.socket()
}

// CanLoseUnsynced reports whether node id's data dir is on lazyfs.
func (k *Kafka) CanLoseUnsynced(id int32) error { return canLose(k.mount(id), k.opts.Dir, "kafka") }

// LoseUnsynced makes node id's data dir lose every write not fsynced. The
// node's broker must be dead. It returns when the loss is complete, with
// what was lost.
func (k *Kafka) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := k.PID(id)
	if err != nil {
		return "", err
	}
	return loseUnsynced(ctx, k.mount(id), k.opts.Dir, pid)
}

// SyncAll makes everything on every node's lazyfs durable, as a clean
// shutdown of the machines would. A no-op without lazyfs.
func (k *Kafka) SyncAll(ctx context.Context) error {
	var errs []error
	for _, id := range k.Nodes() {
		if m := k.mount(id); m != nil {
			errs = append(errs, m.sync(ctx))
		}
	}
	return errors.Join(errs...)
}

// dataDirInode is the inode of a node's data dir: of its backing directory
// when it is a lazyfs mount, whose root a FUSE stat reports as inode 0.
func dataDirInode(m *lazyMount, dir string) (uint64, error) {
	if m != nil {
		dir = m.backing()
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
