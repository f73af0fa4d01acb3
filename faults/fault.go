package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Env is what faults act through: the nodes' processes, the broker's
// admin API (the driver), and the broker's configuration-file fsync edit.
type Env struct {
	Nodes       Nodes // nil: no cluster to act on
	Driver      drivers.Driver
	ConfigFsync *drivers.ConfigEdit
}

// fault is one action applied to one kind of target, in the manner of
// etcd's robustness failpoints: it says before the load whether it can run
// where it is scheduled (available), picks its target when it is due, and
// does its own work. Its undo is its own too (undoer): every change it
// makes is journaled, before it is made, as an Undo whose kind names the
// fault that puts it back.
//
// The Injector around it only dispatches (in schedule order, each action
// after the earlier ones on the same nodes), records, journals and times;
// it never knows what an action does.
type fault interface {
	// available reports what would stop st from running in env, checked
	// without applying anything; nil when it can run.
	available(ctx context.Context, env Env, st Step) error
	// pick chooses, at st's due time and in schedule order, the nodes the
	// fault acts on. It never waits on a node: a target by ID or name
	// reads nothing, one by role reads the topology with a bound
	// (targets.resolve). An error means the step is skipped, with why.
	pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error)
	// apply does the work now, on what pick chose, filling rec with what it
	// measured. It returns the progress line's detail on success.
	apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error)
}

// picked is what a fault chose to act on when it was due.
type picked struct {
	// nodes are the nodes the action touches: it runs after the earlier
	// actions on them, and, for an action that takes nodes away, these
	// are the nodes whose recovery is watched.
	nodes []int32
	// before is the newest topology read before the fault, for the
	// recovery watch; nil when none was read.
	before *drivers.Topology
}

// undoer puts back one kind of change a fault journaled. Every undo is
// idempotent: applying it when the change is already undone changes
// nothing, so a heal may run again after a failure or a crash.
type undoer interface {
	undo(ctx context.Context, w *world, u Undo) error
}

// faultOf is the fault a step schedules.
func faultOf(st Step) (fault, error) {
	switch st.Action {
	case Kill:
		return onNode{kill{}}, nil
	case Stop:
		return onNode{stop{}}, nil
	case Pause:
		return onNode{pause{}}, nil
	case Resume:
		return onNode{resume{}}, nil
	case Restart:
		return onNode{restart{}}, nil
	case PowerLoss:
		if st.Target.Kind == All {
			return powerLossAll{}, nil
		}
		return onNode{powerLossNode{}}, nil
	case FsyncOn, FsyncOff:
		switch st.Target.Kind {
		case Topic:
			return fsyncTopic{}, nil
		case Brokers:
			return fsyncBrokers{}, nil
		}
		return nil, fmt.Errorf("%s takes topic:<topic> or brokers, not %s", st.Action, st.Target)
	}
	if _, _, ok := st.Action.Switch(); ok {
		return switchMode{}, nil
	}
	return nil, fmt.Errorf("unknown action %q", st.Action)
}

// undoerOf is the fault that owns an undo of kind k.
func undoerOf(k UndoKind) (undoer, error) {
	switch k {
	case UndoResume:
		return pause{}, nil
	case UndoStart:
		return takeDown{}, nil
	case UndoTopicConfig:
		return fsyncTopic{}, nil
	case UndoNodeConfig:
		return fsyncBrokers{}, nil
	case UndoSwitch:
		return switchMode{}, nil
	}
	return nil, fmt.Errorf("unknown undo %q: the heal journal was written by a newer ackcheck; heal with that one", k)
}

// world is what a fault acts on and through while it fires or is undone:
// the nodes and the driver, the journal each undo goes to before its
// change is made, and the node states that tell a death a fault caused
// from one nobody asked for.
type world struct {
	Env
	topic   string
	journal *Journal
	states  *nodeStates
	// read reads the topic's topology with a bound of its own
	// (targets.read); every successful read also feeds the target cache.
	read func(ctx context.Context) (drivers.Topology, error)
	logf func(format string, args ...any)
}

// needNodes is the error of an action or undo on nodes when there are
// none to act on.
func (w *world) needNodes() error {
	if w.Nodes == nil {
		return fmt.Errorf("no cluster to act on: give --cluster-dir or --cluster-file")
	}
	return nil
}

// waitPID waits briefly for a just-started node's process to show.
func (w *world) waitPID(ctx context.Context, node int32) int {
	for i := 0; i < 50; i++ {
		if pid, _ := w.Nodes.PID(ctx, node); pid != 0 {
			return pid
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(100 * time.Millisecond):
		}
	}
	return 0
}

// nodeState is what the faults did to a node last: up, down or paused.
// A node that dies while its state is not down died unasked.
type nodeState uint8

const (
	nodeUp nodeState = iota
	nodeDown
	nodePaused
)

// nodeStates holds each node's state (per node):
//
//	up --kill/stop/power-loss--> down --restart/start--> up
//	up --pause-->                paused --resume--> up
//
// A fault sets a node down before its signal, so that the death it
// causes is expected; a heal brings every node back to up.
type nodeStates struct {
	mu sync.Mutex
	m  map[int32]nodeState
}

func newNodeStates(ids []int32) *nodeStates {
	s := &nodeStates{m: map[int32]nodeState{}}
	for _, id := range ids {
		s.m[id] = nodeUp
	}
	return s
}

func (s *nodeStates) set(st nodeState, ids ...int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.m[id] = st
	}
}

// are reports whether every node in ids is in state st.
func (s *nodeStates) are(st nodeState, ids ...int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !slices.ContainsFunc(ids, func(id int32) bool { return s.m[id] != st })
}
