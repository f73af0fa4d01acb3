package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/netns"
)

// Preflight checks, before any load or fault, that every node the run may
// act on answers as a process: its PID source (pid_file, pgrep, systemd
// unit, or the local cluster's PID file) names a running process. A node
// that does not would otherwise be reported, seconds into the load, as a
// node that "died and no fault killed it", failing a verdict for a
// mistake in the cluster description. As etcd's failpoints say up front
// whether they are Available, and roachtest refuses a test whose needs the
// cluster cannot meet, a schedule that cannot run is refused here with
// what to fix.
//
// Each step's fault says whether it is available where it is scheduled
// (fault.available): a power loss needs nodes whose data can lose unsynced
// writes (every node, for a target chosen by role), a node named by ID must
// be one of the nodes, an fsync toggle needs the admin API or readable
// configuration files.
func Preflight(ctx context.Context, env Env, steps []Step) error {
	var errs []error
	needsNodes := false
	for _, st := range steps {
		if st.Action.IsNetwork() && env.netCaps == nil {
			env.netCaps = netns.Preflight(ctx) // once: it makes a scratch namespace
		}
	}
	for _, st := range steps {
		f, err := faultOf(st)
		if err == nil {
			err = f.available(ctx, env, st)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st, err))
		}
		needsNodes = needsNodes || st.ActsOnNodes()
	}
	errs = append(errs, downForFiles(steps)...)
	if needsNodes && env.Nodes != nil {
		for _, id := range env.Nodes.IDs() {
			pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			pid, err := env.Nodes.PID(pctx, id)
			cancel()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("node %d: cannot tell whether its broker runs: %w", id, err))
			case pid == 0:
				errs = append(errs, fmt.Errorf("node %d: its broker does not run (as %s describes it): start it, or fix how the node's process is found (pid_file, pgrep or systemd_unit)", id, env.Nodes.Where()))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the fault schedule cannot run here, and nothing was applied: %w", errors.Join(errs...))
	}
	return nil
}

// downForFiles refuses a file fault (bitflip, truncate, stale) on node:N
// that the schedule does not take down before it (kill, stop) and keep
// down until then: its broker would run when the fault fires, and the
// fault would fail. A fault on previous or a named node is checked when
// it fires. A stale on node:N needs a snapshot of node:N before it.
func downForFiles(steps []Step) []error {
	var errs []error
	down, snap := map[int32]bool{}, map[int32]bool{}
	for _, st := range steps {
		if st.Target.Kind != Node {
			continue
		}
		switch st.Action {
		case Kill, Stop:
			down[st.Target.Node] = true
		case Restart, PowerLoss:
			down[st.Target.Node] = false
		case Snapshot:
			snap[st.Target.Node] = true
		case Bitflip, Truncate, Stale:
			if !down[st.Target.Node] {
				errs = append(errs, fmt.Errorf("%s: node %d runs then: a file fault changes only the files of a stopped or killed node (schedule kill node:%d before it and restart after)", st, st.Target.Node, st.Target.Node))
			}
			if st.Action == Stale && !snap[st.Target.Node] {
				errs = append(errs, fmt.Errorf("%s: no snapshot of node %d before it: schedule snapshot node:%d earlier (stale puts its chunks back)", st, st.Target.Node, st.Target.Node))
			}
		}
	}
	return errs
}
