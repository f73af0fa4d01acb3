package faults

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// A power loss needs nodes whose data can lose unsynced writes: asked of
// each node it may hit (every node, for a target chosen by role).
func Preflight(ctx context.Context, nodes Nodes, steps []Step) error {
	var errs []error
	for _, st := range steps {
		if st.Action != PowerLoss {
			continue
		}
		pl, ok := nodes.(PowerLosser)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: these nodes (%s) cannot lose unsynced writes: start the local cluster with --lazyfs, or give each node a lose_command in the cluster file", st, nodes.Where()))
			continue
		}
		ids := nodes.IDs()
		if st.Target.Kind == Node {
			ids = []int32{st.Target.Node}
		}
		for _, id := range ids {
			if err := pl.CanLoseUnsynced(id); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st, err))
			}
		}
	}
	for _, id := range nodes.IDs() {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		pid, err := nodes.PID(pctx, id)
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("node %d: cannot tell whether its broker runs: %w", id, err))
		case pid == 0:
			errs = append(errs, fmt.Errorf("node %d: its broker does not run (as %s describes it): start it, or fix how the node's process is found (pid_file, pgrep or systemd_unit)", id, nodes.Where()))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("before the load, every node faults may act on must run: %w", errors.Join(errs...))
	}
	return nil
}
