package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// Injector runs a schedule of faults against a cluster during a run. It
// only dispatches, records, journals and times: each step's fault (see
// fault) picks its target and does its own work and undo; the Injector
// fires it on time (ontime.go), after the earlier actions on the same
// nodes, records what became of it, measures the recovery of the nodes it
// took away, reports nodes that die unasked, and heals, from the journal,
// what the schedule left applied.
//
// Heal brings every node back to up (see nodeStates): it resumes paused
// nodes and starts down ones, and puts settings back.
type Injector struct {
	Nodes Nodes
	// Topic is the run's topic: targets and in-sync checks describe it.
	Topic string
	// Driver describes the topology and, if it can, probes single nodes.
	Driver drivers.Driver
	// Ledger receives the records (meta MetaFaults) as they change.
	Ledger *ledger.Ledger
	// OnChange, if set, is called after every change to the records,
	// once the ledger has them, from the goroutine that made the change:
	// a fault timeline kept elsewhere (a sharded load's shared file) reads
	// Records there. It must not block for long.
	OnChange func()
	// Logf prints progress; nil is silent.
	Logf func(format string, args ...any)
	// Poll is the interval of recovery and death checks. Default 200ms.
	Poll time.Duration
	// Journal receives every undo before its fault applies. Default: an
	// in-memory journal (nothing survives a crash of ackcheck).
	Journal *Journal
	// Expect, if set, is the broker profile's expectation of an action
	// (ExpectFrom, drivers.FaultExpecter); "" falls back to the generic one.
	Expect func(Action) string
	// ConfigFsync is the broker profile's edit of a server configuration
	// file that switches fsync (fsync-on/off brokers); nil when the broker
	// has none.
	ConfigFsync *drivers.ConfigEdit

	// ResolveWait bounds how long a fault whose target is chosen by role
	// (leader, controller) waits at its due time for a fresh topology read
	// before it uses the newest one read in advance. Default 50ms.
	ResolveWait time.Duration

	// DataFiles are the broker profile's globs of its data files, for
	// file faults written without one.
	DataFiles []string
	// Group is the run's consumer group, for restart-consumers; nil when
	// the run has none.
	Group GroupRestarter

	// Seed makes the file faults repeatable: the same seed and schedule
	// change the same offsets and bits of the same files. 0: a seed from
	// the clock, recorded in each file fault's record.
	Seed int64

	once     sync.Once
	w        *world
	targets  *targets
	log      recordLog
	watchers sync.WaitGroup
	chain    chain
}

// init applies the defaults and builds what the faults act through, once.
func (in *Injector) init() {
	in.once.Do(func() {
		if in.Poll <= 0 {
			in.Poll = 200 * time.Millisecond
		}
		if in.ResolveWait <= 0 {
			in.ResolveWait = 50 * time.Millisecond
		}
		if in.Journal == nil {
			in.Journal, _ = OpenJournal("")
		}
		logf := func(format string, args ...any) {
			if in.Logf != nil {
				in.Logf(format, args...)
			}
		}
		var ids []int32
		if in.Nodes != nil {
			ids = in.Nodes.IDs()
		}
		in.targets = newTargets(in.Driver, in.Topic, in.ResolveWait)
		if in.Seed == 0 {
			in.Seed = time.Now().UnixNano()
		}
		in.w = &world{Env: Env{Nodes: in.Nodes, Driver: in.Driver, ConfigFsync: in.ConfigFsync, DataFiles: in.DataFiles, Group: in.Group},
			topic: in.Topic, journal: in.Journal, states: newNodeStates(ids), read: in.targets.read, logf: logf, net: &netLive{},
			seed: in.Seed, files: &fileSnaps{}}
		in.log.mu.Lock()
		in.log.ledger, in.log.logf, in.log.onChange = in.Ledger, logf, in.OnChange
		in.log.mu.Unlock()
	})
}

// Records returns a copy of the records so far.
func (in *Injector) Records() []Record { return in.log.list() }

// Run applies steps at start+step.At until all ran or ctx ends, then
// waits for the actions it started. A step whose target cannot be found,
// or whose action fails, is recorded and the run goes on. Each step fires
// at its due time without waiting on earlier steps' actions on other nodes
// or on topology reads (see ontime.go); its record says when it was due.
func (in *Injector) Run(ctx context.Context, start time.Time, steps []Step) {
	in.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, stopPrefetch := context.WithCancel(ctx)
	defer stopPrefetch()
	first := true
	for _, st := range steps {
		if !st.Target.needsTopology() && !st.Action.TakesNodeAway() {
			continue
		}
		if first && in.Driver != nil {
			// A read now, for steps due sooner than the first lead.
			first = false
			wg.Add(1)
			go func() { defer wg.Done(); in.targets.read(pctx) }() //nolint:errcheck // fills the cache or not
		}
		in.targets.prefetch(pctx, start.Add(st.At), &wg)
	}
	// Each step acting on nodes is prepared a second before it is due
	// (prepare.go): its nodes' shells and PIDs, its network's probe.
	preps := make([]*stepPrep, len(steps))
	for i, st := range steps {
		if prepares(st) && in.Nodes != nil {
			preps[i] = in.schedulePrepare(pctx, st, start.Add(st.At), &wg)
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i, st := range steps {
		due := start.Add(st.At)
		timer.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		in.dispatch(ctx, st, due, preps[i], &wg)
	}
}

// Apply performs one step now, outside a schedule (its record has no due
// time), and returns its record once its action is done. A step that
// cannot run is recorded as skipped or failed, with why.
func (in *Injector) Apply(ctx context.Context, st Step) Record {
	in.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	return <-in.dispatch(ctx, st, time.Time{}, nil, &wg)
}

// apply has f do its work on what it picked, records the result, and for
// an action that takes nodes away, starts watching them come back.
func (in *Injector) apply(ctx context.Context, f fault, st Step, on picked, rec Record) Record {
	rec.At = time.Now()
	detail, err := f.apply(ctx, in.w, st, on, &rec)
	if err != nil {
		rec.Result, rec.Error = Failed, err.Error()
		in.w.logf("fault %s %s%s failed: %v", st.Action, st.Target, nodeText(on), err)
	} else {
		rec.Result = Applied
		in.w.logf("fault %s %s: %s%s", st.Action, st.Target, detail, slipText(rec))
	}
	i := in.log.add(rec)
	if p := rec.NetworkProof; p != nil && len(p.Rules) > 0 && st.Action != HealNetwork {
		// The heal stamps its probe on this record (NetworkProof.Healed).
		in.w.net.attach(p.Rules[0].Name, func(fn func(*Record)) { in.log.update(i, fn) })
	}
	if err == nil && st.Action.TakesNodeAway() && in.Driver != nil {
		in.watchers.Add(1)
		go func() {
			defer in.watchers.Done()
			in.w.watchRecovery(ctx, in.Poll, rec, on.nodes, on.before, func(fn func(*Record)) { in.log.update(i, fn) })
		}()
	}
	return rec
}

// nodeText names, for progress lines, the one node a fault acted on.
func nodeText(on picked) string {
	if len(on.nodes) == 1 {
		return fmt.Sprintf(" (node %d)", on.nodes[0])
	}
	return ""
}

// slipText says, for progress lines, how late a scheduled fault fired
// when that is more than SlipNote.
func slipText(rec Record) string {
	if s := rec.Slip(); s > SlipNote {
		return fmt.Sprintf(" (%s after it was due)", s.Round(time.Millisecond))
	}
	return ""
}

// WatchDeaths polls every node until ctx ends and records, once per
// incident, a node whose process vanished while no fault took it down.
func (in *Injector) WatchDeaths(ctx context.Context) {
	in.init()
	if in.Nodes == nil {
		return
	}
	dead := map[int32]bool{}
	tick := time.NewTicker(max(in.Poll, 500*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, id := range in.Nodes.IDs() {
			expectedUp := !in.w.states.are(nodeDown, id)
			pid, err := in.Nodes.PID(ctx, id)
			// A fault may take the node down while its PID is read (a
			// busy machine makes that read slow): its death is then
			// expected, and only a node up before and after the read
			// died unexpectedly.
			expectedUp = expectedUp && !in.w.states.are(nodeDown, id)
			if err != nil || !expectedUp {
				dead[id] = false
				continue
			}
			if pid == 0 && !dead[id] {
				dead[id] = true
				if in.diedOnDiskError(id) {
					continue
				}
				in.log.add(Record{Action: UnexpectedDeath, Target: fmt.Sprintf("node:%d", id), Node: id,
					At: time.Now(), Result: Observed, Error: "the node's process is gone and no fault killed it"})
				in.w.logf("node %d died and no fault killed it", id)
			} else if pid != 0 {
				dead[id] = false
			}
		}
	}
}

// diedOnDiskError records the death of node id as its disk errors' doing
// when a disk-error is in force on it, or was since its process started
// (PostgreSQL's postmaster ended 4 s after disk-ok, when the crash
// recovery it began under the errors failed): the node is down from then
// on, as after a kill, and its start is journaled so that a heal starts
// it. It reports false, recording nothing, for a node no disk error hit.
func (in *Injector) diedOnDiskError(id int32) bool {
	if _, ok := in.w.journal.Find(UndoDiskError, id); !ok && !in.w.states.diskHitSinceStart(id) {
		return false
	}
	rec := Record{Action: DiedOnDiskError, Target: fmt.Sprintf("node:%d", id), Node: id, At: time.Now(), Result: Observed,
		Error: "the node's process is gone while its disk calls failed: the broker stopped on the I/O errors"}
	if _, ok := in.w.journal.Find(UndoStart, id); !ok {
		if _, err := in.w.journal.Add(Undo{Kind: UndoStart, Node: id, Why: fmt.Sprintf("node %d died on its disk errors", id)}); err != nil {
			rec.Error += fmt.Sprintf("; its start could not be journaled (%v): start it by hand if the heal does not", err)
		}
	}
	in.w.states.set(nodeDown, id)
	in.log.add(rec)
	in.w.logf("node %d died while its disk calls failed: the broker stopped on the I/O errors", id)
	return true
}

// Heal undoes, newest first, everything the journal holds as still
// applied: each undo is done by the fault that journaled it (undoerOf):
// it resumes paused nodes, starts nodes left down, restores topic
// settings, modes and config files. It returns what it did, a line each.
// Every undo is idempotent, so Heal may run again after a failure or after
// a crash of ackcheck (ackcheck heal).
func (in *Injector) Heal(ctx context.Context) ([]string, error) {
	in.init()
	var done []string
	var errs []error
	tried := map[int]bool{}
	// An undo may journal one of its own (a file put back under a running
	// node stops it and journals its start): a later pass does those,
	// never one tried already.
	for pass := 0; pass < 3; pass++ {
		ids, undos := in.Journal.Pending()
		more := false
		for i, u := range undos {
			if tried[ids[i]] {
				continue
			}
			tried[ids[i]], more = true, true
			un, err := undoerOf(u.Kind)
			if err == nil {
				err = un.undo(ctx, in.w, u)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", u, err))
				continue
			}
			if err := in.Journal.Done(ids[i]); err != nil {
				errs = append(errs, err)
			}
			done = append(done, u.String()+" (after "+u.Why+")")
		}
		if !more {
			break
		}
	}
	if shot := in.w.net.healed(ctx, in.w.Env); shot != nil {
		// The proof that the heal restored the network, as the heal's
		// last line: ackcheck heal after a crash prints it.
		done = append(done, "network probed after the heal: "+shot.String())
		if shot.Error != "" || len(shot.Cut) > 0 {
			errs = append(errs, fmt.Errorf("after the heal not every path answers: %s", shot))
		}
	}
	return done, errors.Join(errs...)
}

// WaitRecovery waits for the recovery measurements to finish, at most
// until ctx ends.
func (in *Injector) WaitRecovery(ctx context.Context) {
	_ = drivers.Within(ctx, in.watchers.Wait)
}

// InForce describes what the faults have applied and not yet undone, for
// progress lines ("" when nothing is).
func (in *Injector) InForce() string {
	if in.Journal == nil {
		return ""
	}
	_, undos := in.Journal.Pending()
	var parts []string
	for i := len(undos) - 1; i >= 0; i-- {
		// A fault that journaled an undo per file is said once.
		if !slices.Contains(parts, undos[i].Why) {
			parts = append(parts, undos[i].Why)
		}
	}
	return strings.Join(parts, "; ")
}
