package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// nodeAction is what a fault on one node does to it, once onNode chose
// the node.
type nodeAction interface {
	act(ctx context.Context, w *world, node int32, rec *Record) error
}

// onNode composes an action on one node with the target that picks the
// node when the fault is due (kill x leader:orders/3), and proves what it
// hit: the node's data dir inode and the other nodes' PIDs at that moment.
type onNode struct{ a nodeAction }

// availableOn is implemented by node actions that need more of the nodes
// they may pick than to exist (a power loss needs data that can lose
// unsynced writes).
type availableOn interface {
	availableOn(env Env, ids []int32) error
}

// available: there are nodes to act on, a node named by ID or name is one
// of them, and the action can run on every node the target may pick.
func (f onNode) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	if err := coordinatorAvailable(env, st); err != nil {
		return err
	}
	ao, ok := f.a.(availableOn)
	if !ok {
		return nil
	}
	return ao.availableOn(env, candidateNodes(env, st))
}

// nodeAvailable: there are nodes to act on, and a node named by ID or by
// name is one of them.
func nodeAvailable(env Env, st Step) error {
	if env.Nodes == nil {
		return fmt.Errorf("it needs the cluster it acts on: pass --cluster-dir of a local cluster or --cluster-file")
	}
	if st.Target.Kind == Node && !slices.Contains(env.Nodes.IDs(), st.Target.Node) {
		return fmt.Errorf("node %d is not one of the nodes %s describes (%v)", st.Target.Node, env.Nodes.Where(), env.Nodes.IDs())
	}
	if st.Target.Kind == Named {
		if _, err := nodeNamed(env.Nodes, st.Target.Name); err != nil {
			return err
		}
	}
	return nil
}

// candidateNodes is every node st's target may pick, as far as it is known
// before the fault fires: the node named by ID or by name, or every node
// for a target by role (resolved only when the fault fires).
// REQUIRES: nodeAvailable(env, st) returned nil.
func candidateNodes(env Env, st Step) []int32 {
	switch st.Target.Kind {
	case Node:
		return []int32{st.Target.Node}
	case Named:
		id, _ := nodeNamed(env.Nodes, st.Target.Name)
		return []int32{id}
	}
	return env.Nodes.IDs()
}

// pick resolves st's target to one node now. A target by role is read
// from the topology (bounded, see targets.resolve), which is also the
// state before the fault for the recovery watch.
func (f onNode) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	var topo drivers.Topology
	var before *drivers.Topology
	if st.Target.needsTopology() {
		if env.Driver == nil {
			return picked{}, errors.New("no driver to read the topology from")
		}
		tp, age, err := t.resolve(ctx)
		if err != nil {
			return picked{}, fmt.Errorf("could not read the topology: %w", err)
		}
		topo, before = tp, &tp
		rec.TopologyAgeMs = float64(age) / float64(time.Millisecond)
	} else if st.Action.TakesNodeAway() {
		before = t.cachedBefore()
	}
	var node int32
	var err error
	switch {
	case st.Target.Kind == Named && env.Nodes != nil:
		node, err = nodeNamed(env.Nodes, st.Target.Name)
	case st.Target.Kind == Coordinator:
		node, err = coordinatorOf(ctx, env.Driver, st.Target.Group)
		if st.Action.TakesNodeAway() {
			before = t.cachedBefore()
		}
	default:
		node, err = st.Target.Resolve(topo, t.previous())
	}
	if err != nil {
		return picked{}, err
	}
	rec.Node = node
	if env.Nodes == nil {
		return picked{}, errors.New("no cluster to act on: give --cluster-dir or --cluster-file")
	}
	if !slices.Contains(env.Nodes.IDs(), node) {
		return picked{}, fmt.Errorf("node %d is not one this run controls (%s)", node, env.Nodes.Where())
	}
	t.setPrevious(node)
	return picked{nodes: []int32{node}, before: before}, nil
}

// apply acts on the node. The kill proof (data dir inode, the other
// nodes' PIDs) is read beside the action, not before it, so that a slow
// PID read (over SSH) does not delay the fault.
func (f onNode) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	node := on.nodes[0]
	var proof sync.WaitGroup
	var inode uint64
	survivors := map[int32]int{}
	proof.Add(1)
	go func() {
		defer proof.Done()
		inode, _ = w.Nodes.DataDirInode(ctx, node)
		for _, id := range w.Nodes.IDs() {
			if id != node {
				survivors[id], _ = w.Nodes.PID(ctx, id)
			}
		}
	}()
	err := f.a.act(ctx, w, node, rec)
	proof.Wait()
	rec.Inode, rec.Survivors = inode, survivors
	return fmt.Sprintf("node %d, PID %d", node, rec.PID), err
}

// The actions on one node.
type (
	kill    struct{} // SIGKILL
	stop    struct{} // SIGTERM, waited for
	pause   struct{} // SIGSTOP
	resume  struct{} // SIGCONT
	restart struct{} // start again on the same data
)

// takeDown is what kill and stop share: a node taken down, whose undo
// starts it again.
type takeDown struct{}

// down journals the node's restart and sets its state to down before
// signal runs, so that its death is expected. signal returns the PID it
// acted on; when it acted on none, there is nothing to undo.
func (takeDown) down(ctx context.Context, w *world, a Action, node int32, rec *Record, signal func() (int, error)) error {
	id, err := w.journal.Add(Undo{Kind: UndoStart, Node: node, Why: fmt.Sprintf("%s of node %d", a, node)})
	if err != nil {
		return err
	}
	w.states.set(nodeDown, node)
	rec.PID, err = signal()
	if err != nil && rec.PID == 0 {
		w.journal.Done(id) //nolint:errcheck // nothing was running: nothing to undo
		w.states.set(nodeUp, node)
	}
	return err
}

// undo starts a node left down, if it does not run.
func (takeDown) undo(ctx context.Context, w *world, u Undo) error {
	return w.upAgain(ctx, u.Node, func(pid int) error {
		if pid != 0 {
			return nil
		}
		return w.Nodes.Start(ctx, u.Node)
	})
}

// upAgain ends an undo that leaves node up: bringUp gets the node's PID
// (0: no process runs) and does what that state needs; once it succeeds
// the node's state is up, so that a later death is unasked.
func (w *world) upAgain(ctx context.Context, node int32, bringUp func(pid int) error) error {
	if err := w.needNodes(); err != nil {
		return err
	}
	pid, err := w.Nodes.PID(ctx, node)
	if err != nil {
		return err
	}
	if err := bringUp(pid); err != nil {
		return err
	}
	w.states.set(nodeUp, node)
	return nil
}

func (kill) act(ctx context.Context, w *world, node int32, rec *Record) error {
	return takeDown{}.down(ctx, w, Kill, node, rec, func() (int, error) { return signalStamped(ctx, w, node, syscall.SIGKILL, rec, true) })
}

func (stop) act(ctx context.Context, w *world, node int32, rec *Record) error {
	return takeDown{}.down(ctx, w, Stop, node, rec, func() (int, error) {
		pid, _ := w.Nodes.PID(ctx, node)
		rec.At = time.Now() // SIGTERM: the node hands its leaderships over before it exits
		return pid, w.Nodes.Stop(ctx, node, 30*time.Second)
	})
}

// signalStamped sends sig to node and stamps rec.At with the signal's
// time; with first false, an earlier signal of the same fault (a power
// loss of several nodes) keeps its stamp. The stamp comes after the
// journal's fsync: stamped before it, on a busy machine, At came
// milliseconds before the kill, a leader still acked messages sent
// "after" it, and those passed for the first acks after the kill (a NATS
// stream that stalled 6 s showed a first ack 7 ms after the kill). For
// the same reason a signal sent over SSH is stamped when its command came
// back, the earliest time it is known to have gone out, with the round
// trip in rec.AtWithinMs: a first ack measured from there can be short by
// that much, never by a live leader's acks.
func signalStamped(ctx context.Context, w *world, node int32, sig syscall.Signal, rec *Record, first bool) (int, error) {
	ts, ok := w.Nodes.(TimedSignaler)
	if !ok {
		if first {
			rec.At, rec.AtWithinMs = time.Now(), 0
		}
		return w.Nodes.Signal(ctx, node, sig)
	}
	pid, sent, within, err := ts.SignalTimed(ctx, node, sig)
	if err == nil && first {
		rec.At, rec.AtWithinMs = sent, float64(within)/float64(time.Millisecond)
	}
	return pid, err
}

// act journals the node's resume, then stops it.
func (pause) act(ctx context.Context, w *world, node int32, rec *Record) error {
	id, err := w.journal.Add(Undo{Kind: UndoResume, Node: node, Why: fmt.Sprintf("pause of node %d", node)})
	if err != nil {
		return err
	}
	if rec.PID, err = signalStamped(ctx, w, node, syscall.SIGSTOP, rec, true); err != nil {
		w.journal.Done(id) //nolint:errcheck // the pause did not apply
		return err
	}
	w.states.set(nodePaused, node)
	return nil
}

// undo resumes a paused node; one that does not run is not paused.
func (pause) undo(ctx context.Context, w *world, u Undo) error {
	return w.upAgain(ctx, u.Node, func(pid int) error {
		if pid == 0 {
			return nil
		}
		_, err := w.Nodes.Signal(ctx, u.Node, syscall.SIGCONT)
		return err
	})
}

// act resumes the node, which undoes its pause.
func (resume) act(ctx context.Context, w *world, node int32, rec *Record) error {
	var err error
	if rec.PID, err = w.Nodes.Signal(ctx, node, syscall.SIGCONT); err != nil {
		return err
	}
	w.states.set(nodeUp, node)
	if id, ok := w.journal.Find(UndoResume, node); ok {
		return w.journal.Done(id)
	}
	return nil
}

// act starts a node that does not run, which undoes its kill or stop.
func (restart) act(ctx context.Context, w *world, node int32, rec *Record) error {
	if pid, _ := w.Nodes.PID(ctx, node); pid != 0 {
		return fmt.Errorf("node %d still runs as PID %d: nothing to restart", node, pid)
	}
	if err := w.Nodes.Start(ctx, node); err != nil {
		return err
	}
	rec.PID = w.waitPID(ctx, node)
	w.states.set(nodeUp, node)
	if id, ok := w.journal.Find(UndoStart, node); ok {
		return w.journal.Done(id)
	}
	return nil
}
