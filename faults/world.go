package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/netns"
)

// Env is what faults act through: the nodes' processes, the broker's
// admin API (the driver), and the broker's configuration-file fsync edit.
type Env struct {
	Nodes       Nodes // nil: no cluster to act on
	Driver      drivers.Driver
	ConfigFsync *drivers.ConfigEdit
	// DataFiles are the broker profile's globs of its data files
	// (drivers.DataFiler), which a file fault without a glob picks from.
	DataFiles []string
	// Group is the run's consumer group (restart-consumers); nil: none.
	// GroupName names it before it runs (preflight), when Group is not
	// made yet.
	Group     GroupRestarter
	GroupName string
	// netCaps is netns.Preflight's answer once Preflight read it (nil:
	// read it when a network fault asks).
	netCaps []netns.Capability
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
	// net tracks the network faults in force (netfault.go).
	net *netLive
	// seed is where file faults' choices come from (Injector.Seed), and
	// files holds the chunks snapshots saved (filefault.go).
	seed  int64
	files *fileSnaps
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
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			return 0
		}
	}
	return 0
}

// sleepCtx waits d, or less when ctx ends first: then it returns ctx's
// error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
// causes is expected; a heal brings every node back to up. diskHit
// holds the nodes a disk-error was in force on since they last started
// (down -> up): the process that was given the I/O errors still runs.
type nodeStates struct {
	mu      sync.Mutex
	m       map[int32]nodeState
	diskHit map[int32]bool
}

func newNodeStates(ids []int32) *nodeStates {
	s := &nodeStates{m: map[int32]nodeState{}, diskHit: map[int32]bool{}}
	for _, id := range ids {
		s.m[id] = nodeUp
	}
	return s
}

func (s *nodeStates) set(st nodeState, ids ...int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if st == nodeUp && s.m[id] == nodeDown {
			delete(s.diskHit, id) // a new process
		}
		s.m[id] = st
	}
}

// hitByDisk marks id as given disk errors since it last started.
func (s *nodeStates) hitByDisk(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.diskHit[id] = true
}

// diskHitSinceStart reports whether a disk-error was in force on id since
// it last started.
func (s *nodeStates) diskHitSinceStart(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.diskHit[id]
}

// are reports whether every node in ids is in state st.
func (s *nodeStates) are(st nodeState, ids ...int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !slices.ContainsFunc(ids, func(id int32) bool { return s.m[id] != st })
}
