package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/lazyfs"
	"github.com/ackcheck/ackcheck/remote"
)

// DiskErrorer is implemented by Nodes whose data dirs can fail calls with
// EIO on command (ackcheck lazyfs: a local cluster started with --lazyfs,
// or cluster-file nodes with lazyfs_control).
type DiskErrorer interface {
	// CanDiskError says up front, without touching the node, whether its
	// data dir can fail calls, and if not, what to do.
	CanDiskError(id int32) error
	// DiskError makes percent% of the node's call calls (fsync, write,
	// read) fail with EIO until DiskOK.
	DiskError(ctx context.Context, id int32, call string, percent int) error
	// DiskOK ends every disk error on the node and says what they did.
	DiskOK(ctx context.Context, id int32) (string, error)
}

// diskFault is disk-error (on) or disk-ok (off) on one node.
type diskFault struct{ on bool }

func (f diskFault) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	de, ok := env.Nodes.(DiskErrorer)
	if !ok {
		return fmt.Errorf("these nodes (%s) cannot fail disk calls: start the local cluster with --lazyfs, or give each node lazyfs_control in the cluster file", env.Nodes.Where())
	}
	for _, id := range candidateNodes(env, st) {
		if err := de.CanDiskError(id); err != nil {
			return err
		}
	}
	return nil
}

func (f diskFault) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return onNode{}.pick(ctx, t, env, st, rec)
}

// apply journals disk-ok before the errors start; disk-ok ends them and
// marks that undo done.
func (f diskFault) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	node := on.nodes[0]
	de, ok := w.Nodes.(DiskErrorer)
	if !ok {
		return "", fmt.Errorf("node %d cannot fail disk calls (%s)", node, w.Nodes.Where())
	}
	if !f.on {
		got, err := de.DiskOK(ctx, node)
		if err != nil {
			return "", err
		}
		rec.Disk = got
		if id, ok := w.journal.Find(UndoDiskError, node); ok {
			return fmt.Sprintf("node %d: %s", node, got), w.journal.Done(id)
		}
		return fmt.Sprintf("node %d: %s", node, got), nil
	}
	if _, ok := w.journal.Find(UndoDiskError, node); !ok {
		if _, err := w.journal.Add(Undo{Kind: UndoDiskError, Node: node, Why: fmt.Sprintf("disk-error %s on node %d", st.Disk, node)}); err != nil {
			return "", err
		}
	}
	w.states.hitByDisk(node)
	if err := de.DiskError(ctx, node, st.Disk.Call, st.Disk.Percent); err != nil {
		return "", err
	}
	rec.Disk = fmt.Sprintf("%d%% of %s calls fail with EIO", st.Disk.Percent, st.Disk.Call)
	return fmt.Sprintf("node %d: %s", node, rec.Disk), nil
}

// undo ends the node's disk errors.
func (diskFault) undo(ctx context.Context, w *world, u Undo) error {
	if err := w.needNodes(); err != nil {
		return err
	}
	de, ok := w.Nodes.(DiskErrorer)
	if !ok {
		return fmt.Errorf("cannot reach node %d's lazyfs to end its disk errors", u.Node)
	}
	_, err := de.DiskOK(ctx, u.Node)
	return err
}

// parseDiskCall reads disk-error's call and rate: fsync|write|read [<P>%].
func parseDiskCall(args []string, st *Step) error {
	if len(args) == 0 || len(args) > 2 {
		return fmt.Errorf("disk-error needs the call that fails, and may take a rate: node:<id> fsync|write|read [<P>%%]")
	}
	if !slices.Contains(lazyfs.DiskCalls, args[0]) {
		return fmt.Errorf("disk-error on %q: use %s", args[0], orList(lazyfs.DiskCalls))
	}
	st.Disk = DiskCall{Call: args[0], Percent: 100}
	if len(args) == 2 {
		p, err := parsePercent(args[1])
		if err != nil {
			return err
		}
		st.Disk.Percent = p.Percent
	}
	return nil
}

// endDiskErrors describes what disk-ok ended, from lazyfs's answer.
func endDiskErrors(ended []lazyfs.DiskError) string {
	if len(ended) == 0 {
		return "no disk error was in force"
	}
	var parts []string
	for _, e := range ended {
		parts = append(parts, fmt.Sprintf("%s: %d of %d calls failed (%d%%)", e.Call, e.Failed, e.Calls, e.Percent))
	}
	return "disk errors ended; " + strings.Join(parts, ", ")
}

// mountOf is a local cluster's lazyfs mount of a node (nil: none).
type mounter interface {
	Mount(id int32) *cluster.Mount
}

// CanDiskError implements DiskErrorer for a cluster started with --lazyfs.
func (l Local) CanDiskError(id int32) error {
	if m, ok := l.Cluster.(mounter); ok && m.Mount(id) != nil {
		return nil
	}
	return fmt.Errorf("the cluster in %s has no lazyfs mount for node %d: start it with `ackcheck cluster <broker> up --lazyfs`", l.Cluster.Dir(), id)
}

// DiskError implements DiskErrorer through the node's lazyfs control socket.
func (l Local) DiskError(ctx context.Context, id int32, call string, percent int) error {
	if err := l.CanDiskError(id); err != nil {
		return err
	}
	_, err := lazyfs.Control(ctx, l.Cluster.(mounter).Mount(id).Socket(), fmt.Sprintf("disk-error %s %d", call, percent))
	return err
}

// DiskOK implements DiskErrorer.
func (l Local) DiskOK(ctx context.Context, id int32) (string, error) {
	if err := l.CanDiskError(id); err != nil {
		return "", err
	}
	r, err := lazyfs.Control(ctx, l.Cluster.(mounter).Mount(id).Socket(), "disk-ok")
	if err != nil {
		return "", err
	}
	return endDiskErrors(r.Ended), nil
}

var _ DiskErrorer = (*Scripted)(nil)

// CanDiskError implements DiskErrorer: the node needs lazyfs_control.
func (s *Scripted) CanDiskError(id int32) error {
	return s.needs(id, "lazyfs_control", func(n NodeSpec) string { return n.LazyfsControl }, "put its data dir on ackcheck lazyfs and give its control socket")
}

// DiskError implements DiskErrorer with `ackcheck lazyfs disk-error` on
// the node.
func (s *Scripted) DiskError(ctx context.Context, id int32, call string, percent int) error {
	if err := s.CanDiskError(id); err != nil {
		return err
	}
	n, r, _ := s.node(id)
	if _, err := r.Run(ctx, fmt.Sprintf("ackcheck lazyfs disk-error --control %s %s %s", remote.Quote(n.LazyfsControl), call, strconv.Itoa(percent))); err != nil {
		return fmt.Errorf("disk-error on node %d: %w", id, err)
	}
	return nil
}

// DiskOK implements DiskErrorer with `ackcheck lazyfs disk-ok` on the node.
func (s *Scripted) DiskOK(ctx context.Context, id int32) (string, error) {
	if err := s.CanDiskError(id); err != nil {
		return "", err
	}
	n, r, _ := s.node(id)
	out, err := r.Run(ctx, "ackcheck lazyfs disk-ok --control "+remote.Quote(n.LazyfsControl))
	if err != nil {
		return "", fmt.Errorf("disk-ok on node %d: %w", id, err)
	}
	return "disk errors ended: " + strings.Join(strings.Fields(out), " "), nil
}
