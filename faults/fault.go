package faults

import (
	"context"
	"fmt"
	"slices"
)

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

// undoer puts back one kind of change a fault journaled. Every undo is
// idempotent: applying it when the change is already undone changes
// nothing, so a heal may run again after a failure or a crash.
type undoer interface {
	undo(ctx context.Context, w *world, u Undo) error
}

// faultOf is the fault a step schedules: its action's entry's
// constructor (actionTable).
func faultOf(st Step) (fault, error) {
	sp, ok := specOf(st.Action)
	if !ok {
		return nil, fmt.Errorf("unknown action %q", st.Action)
	}
	if !slices.Contains(sp.targets, st.Target.Kind) {
		return nil, fmt.Errorf("%s cannot target %s: it takes %s", st.Action, st.Target, targetsText(sp.targets))
	}
	return sp.make(st.Target), nil
}

// undoerOf is the fault that owns an undo of kind k: the first entry of
// actionTable that journals k (every entry that journals it names the
// same undoer, TestActionTableComplete checks).
func undoerOf(k UndoKind) (undoer, error) {
	for _, sp := range actionTable {
		for _, u := range sp.undo {
			if u.kind == k {
				return u.by, nil
			}
		}
	}
	return nil, fmt.Errorf("unknown undo %q: the heal journal was written by a newer ackcheck; heal with that one", k)
}
