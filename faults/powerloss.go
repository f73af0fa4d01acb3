package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// powerLossNode cuts the power of one node, chosen when it is due.
type powerLossNode struct{}

// availableOn: every node the target may pick can lose what it had not
// fsynced.
func (powerLossNode) availableOn(env Env, ids []int32) error { return canLoseUnsynced(env.Nodes, ids) }

func (powerLossNode) act(ctx context.Context, w *world, node int32, rec *Record) error {
	return loseUnsynced(ctx, w, []int32{node}, rec)
}

// powerLossAll cuts the power of every node at once, as when a rack
// loses power.
type powerLossAll struct{}

func (powerLossAll) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	return canLoseUnsynced(env.Nodes, env.Nodes.IDs())
}

// pick: every node; the recovery watch starts from the newest topology
// read in advance.
func (powerLossAll) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	if env.Nodes == nil {
		return picked{}, errors.New("no cluster to act on: give --cluster-dir or --cluster-file")
	}
	return picked{nodes: env.Nodes.IDs(), before: t.cachedBefore()}, nil
}

func (powerLossAll) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	err := loseUnsynced(ctx, w, on.nodes, rec)
	return fmt.Sprintf("nodes %v lost what they had not fsynced and started again", on.nodes), err
}

// canLoseUnsynced says whether each node in ids can lose unsynced writes.
func canLoseUnsynced(nodes Nodes, ids []int32) error {
	pl, ok := nodes.(PowerLosser)
	if !ok {
		return fmt.Errorf("these nodes (%s) cannot lose unsynced writes: start the local cluster with --lazyfs, or give each node a lose_command in the cluster file", nodes.Where())
	}
	for _, id := range ids {
		if err := pl.CanLoseUnsynced(id); err != nil {
			return err
		}
	}
	return nil
}

// loseUnsynced SIGKILLs every node in ids as close together as it can,
// waits for each process to be gone, loses each one's unsynced writes, and
// starts each again. Each node's restart is journaled before its kill and
// done once it runs again, so a power loss cut short (an error, Ctrl-C)
// leaves its nodes for the heal to start. rec.At is the first kill.
func loseUnsynced(ctx context.Context, w *world, ids []int32, rec *Record) error {
	pl, ok := w.Nodes.(PowerLosser)
	if !ok {
		return fmt.Errorf("power-loss needs data dirs that can lose unsynced writes: start the local cluster with --lazyfs, or give each node a lose_command in the cluster file (%s)", w.Nodes.Where())
	}
	rec.Nodes, rec.PIDs, rec.Restarted, rec.Lost = ids, map[int32]int{}, map[int32]int{}, map[int32]string{}
	undos, err := cutPower(ctx, w, ids, rec)
	if err != nil {
		return err
	}
	if len(ids) == 1 {
		rec.PID = rec.PIDs[ids[0]]
	}
	// The loss must come after the last write the dead process made: wait
	// for each process to be gone (lazyfs then waits for its files to be
	// closed).
	if err := waitGone(ctx, w, ids, 30*time.Second); err != nil {
		return err
	}
	if err := loseEach(ctx, w, pl, ids, rec); err != nil {
		return err
	}
	return powerBack(ctx, w, ids, undos, rec)
}

// cutPower journals each node's start, sets the nodes down (their deaths
// are expected), and SIGKILLs them one right after the other. It returns
// the journal entry of each node's start.
func cutPower(ctx context.Context, w *world, ids []int32, rec *Record) (map[int32]int, error) {
	undos := map[int32]int{}
	for _, id := range ids {
		pid, err := w.Nodes.PID(ctx, id)
		if err != nil {
			return nil, err
		}
		if pid == 0 {
			return nil, fmt.Errorf("node %d does not run: a power loss needs a running broker", id)
		}
		j, err := w.journal.Add(Undo{Kind: UndoStart, Node: id, Why: fmt.Sprintf("power-loss of node %d", id)})
		if err != nil {
			return nil, err
		}
		undos[id] = j
	}
	w.states.set(nodeDown, ids...)
	for i, id := range ids {
		pid, err := signalStamped(ctx, w, id, syscall.SIGKILL, rec, i == 0)
		if err != nil {
			return nil, err
		}
		rec.PIDs[id] = pid
	}
	return undos, nil
}

// waitGone waits until no node in ids has a process, at most within.
func waitGone(ctx context.Context, w *world, ids []int32, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, id := range ids {
		for {
			pid, err := w.Nodes.PID(ctx, id)
			if err == nil && pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d's process did not die within %s of SIGKILL", id, within)
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// loseEach loses every node's unsynced writes at once, and records what
// each lost.
func loseEach(ctx context.Context, w *world, pl PowerLosser, ids []int32, rec *Record) error {
	errs := make([]error, len(ids))
	lost := make([]string, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lost[i], errs[i] = pl.LoseUnsynced(ctx, id)
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			return fmt.Errorf("lose node %d's unsynced writes: %w", id, errs[i])
		}
		rec.Lost[id] = lost[i]
		w.logf("power-loss node %d: %s", id, lost[i])
	}
	return nil
}

// powerBack starts every node again, and marks each start undone once the
// node runs.
func powerBack(ctx context.Context, w *world, ids []int32, undos map[int32]int, rec *Record) error {
	for _, id := range ids {
		if err := w.Nodes.Start(ctx, id); err != nil {
			return fmt.Errorf("start node %d after the power loss: %w", id, err)
		}
	}
	for _, id := range ids {
		rec.Restarted[id] = w.waitPID(ctx, id)
		w.states.set(nodeUp, id)
		if err := w.journal.Done(undos[id]); err != nil {
			return err
		}
	}
	return nil
}
