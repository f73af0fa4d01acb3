package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/lazyfs"
)

// A cluster made with LazyFS runs, beside each node's JVM, an
// `ackcheck lazyfs mount` process that serves the node's data dir:
//
//	<dir>/node<N>/data.backing/   what the disk holds
//	<dir>/node<N>/data/           the lazyfs mount the broker writes to
//	<dir>/node<N>/lazyfs.sock     its control socket (lose, sync, status)
//	<dir>/node<N>/lazyfs.pid      its PID
//	<dir>/node<N>/lazyfs.log      its output
//
// The mounts live as long as the cluster: brokers die and restart on them.

// LazyFS reports whether the nodes' data dirs are on lazyfs.
func (k *Kafka) LazyFS() bool { return k.opts.LazyFS }

func (k *Kafka) backingDir(id int32) string { return filepath.Join(k.nodeDir(id), "data.backing") }

// ControlSocket is node id's lazyfs control socket.
func (k *Kafka) ControlSocket(id int32) string { return filepath.Join(k.nodeDir(id), "lazyfs.sock") }

func (k *Kafka) lazyFSPIDFile(id int32) string { return filepath.Join(k.nodeDir(id), "lazyfs.pid") }
func (k *Kafka) lazyFSLog(id int32) string     { return filepath.Join(k.nodeDir(id), "lazyfs.log") }

// lazyFSPID is node id's lazyfs process, 0 if it does not run. Like a
// broker's, it counts only if its command line names this node's mount.
func (k *Kafka) lazyFSPID(id int32) int {
	if !k.opts.LazyFS {
		return 0
	}
	pid, _ := pidFrom(k.lazyFSPIDFile(id), k.lazyFSMarker(id))
	return pid
}

// lazyFSMarker is what node id's lazyfs command line holds: its mountpoint
// as the argument of --mountpoint.
func (k *Kafka) lazyFSMarker(id int32) string {
	return "--mountpoint\x00" + k.DataDir(id) + "\x00"
}

// startLazyFS mounts node id's data dir, if the cluster uses lazyfs and it
// is not mounted yet, and waits until its control socket answers.
func (k *Kafka) startLazyFS(ctx context.Context, id int32) error {
	if !k.opts.LazyFS || k.lazyFSPID(id) != 0 {
		return nil
	}
	if k.opts.LazyFSBinary == "" {
		return errors.New("no ackcheck binary recorded to serve lazyfs: run `ackcheck cluster kafka up` again")
	}
	logf, err := os.OpenFile(k.lazyFSLog(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(k.opts.LazyFSBinary, "lazyfs", "mount", "--backing", k.backingDir(id),
		"--mountpoint", k.DataDir(id), "--control", k.ControlSocket(id))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start lazyfs for node %d: %w", id, err)
	}
	go cmd.Wait()
	if err := os.WriteFile(k.lazyFSPIDFile(id), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := lazyfs.Control(cctx, k.ControlSocket(id), "status")
		cancel()
		if err == nil {
			return nil
		}
		if k.lazyFSPID(id) == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(k.lazyFSLog(id))
			return fmt.Errorf("lazyfs for node %d did not come up (%v); %s says:\n%s", id, err, k.lazyFSLog(id), tail(data, 1500))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkLazyFS fails if the cluster uses lazyfs and node id's mount does
// not answer: a broker must never start on the bare mountpoint.
func (k *Kafka) checkLazyFS(ctx context.Context, id int32) error {
	if !k.opts.LazyFS {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := lazyfs.Control(cctx, k.ControlSocket(id), "status"); err != nil {
		return fmt.Errorf("node %d's data dir is not on a running lazyfs (%v): run `ackcheck cluster kafka up --dir %s` to mount it", id, err, k.opts.Dir)
	}
	return nil
}

// stopLazyFS unmounts node id's data dir (SIGTERM to its lazyfs), and
// clears the dead mount a killed lazyfs leaves.
func (k *Kafka) stopLazyFS(ctx context.Context, id int32) error {
	if !k.opts.LazyFS {
		return nil
	}
	if pid := k.lazyFSPID(id); pid != 0 {
		if err := stopProcess(ctx, pid, k.lazyFSMarker(id), 15*time.Second); err != nil {
			return err
		}
	}
	return lazyfs.ClearDeadMount(k.DataDir(id))
}

// LoseUnsynced makes node id's data dir lose every write not fsynced. The
// node's broker must be dead. It returns when the loss is complete, with
// what was lost.
func (k *Kafka) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	if !k.opts.LazyFS {
		return "", fmt.Errorf("the cluster in %s was not created with --lazyfs: its data dirs cannot lose unsynced writes", k.opts.Dir)
	}
	if pid, _ := k.PID(id); pid != 0 {
		return "", fmt.Errorf("node %d still runs as PID %d: a loss under a live broker is not a power loss", id, pid)
	}
	r, err := lazyfs.Control(ctx, k.ControlSocket(id), fmt.Sprintf("lose %s", lazyfs.DefaultCloseWait))
	if err != nil {
		return "", err
	}
	l := r.Loss
	s := fmt.Sprintf("%d files cut back to their last fsync (%d bytes dropped, %d bytes of overwritten pages restored), %d directory changes undone",
		l.FilesRestored, l.BytesDropped, l.BytesRestored, l.EntriesUndone)
	if l.OpenHandles > 0 {
		s += fmt.Sprintf("; %d files were still open", l.OpenHandles)
	}
	if len(l.UndoFailures) > 0 {
		return s, fmt.Errorf("%s; could not undo: %s", s, strings.Join(l.UndoFailures, "; "))
	}
	return s, nil
}

// SyncAll makes everything on every node's lazyfs durable, as a clean
// shutdown of the machines would. A no-op without lazyfs.
func (k *Kafka) SyncAll(ctx context.Context) error {
	if !k.opts.LazyFS {
		return nil
	}
	for _, id := range k.Nodes() {
		if _, err := lazyfs.Control(ctx, k.ControlSocket(id), "sync"); err != nil {
			return fmt.Errorf("sync node %d's lazyfs: %w", id, err)
		}
	}
	return nil
}
