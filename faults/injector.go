package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// nodeState is what the injector did to a node last: up, down or paused.
// A node that dies while its state is not down died unasked.
type nodeState uint8

const (
	nodeUp nodeState = iota
	nodeDown
	nodePaused
)

// Injector runs a schedule of faults against a cluster during a run,
// records each one, measures recovery, reports nodes that die unasked, and
// heals what the schedule left applied.
//
// Node states it tracks (per node):
//
//	up --kill/stop--> down --restart--> up
//	up --pause-->     paused --resume--> up
//
// Heal brings every node back to up: it resumes paused nodes and starts
// down ones.
type Injector struct {
	Nodes Nodes
	// Topic is the run's topic: targets and in-sync checks describe it.
	Topic string
	// Driver describes the topology and, if it can, probes single nodes.
	Driver drivers.Driver
	// Ledger receives the records (meta MetaFaults) as they change.
	Ledger *ledger.Ledger
	// Logf prints progress; nil is silent.
	Logf func(format string, args ...any)
	// Poll is the interval of recovery and death checks. Default 200ms.
	Poll time.Duration
	// Journal receives every undo before its fault applies. Default: an
	// in-memory journal (nothing survives a crash of ackcheck).
	Journal *Journal
	// Expect, if set, is the broker profile's expectation of an action
	// (drivers.Profile.Expect); "" falls back to the generic one.
	Expect func(Action) string
	// ConfigFsync is the broker profile's edit of a server configuration
	// file that switches fsync (fsync-on/off brokers); nil when the broker
	// has none.
	ConfigFsync *drivers.ConfigEdit

	// ResolveWait bounds how long a fault whose target is chosen by role
	// (leader, controller) waits at its due time for a fresh topology read
	// before it uses the newest one read in advance. Default 50ms.
	ResolveWait time.Duration

	mu       sync.Mutex
	records  []Record
	state    map[int32]nodeState
	previous int32
	watchers sync.WaitGroup
	cache    topoCache
	chain    chain
}

func (in *Injector) logf(format string, args ...any) {
	if in.Logf != nil {
		in.Logf(format, args...)
	}
}

func (in *Injector) init() {
	if in.state == nil {
		in.state = map[int32]nodeState{}
		if in.Nodes != nil {
			for _, id := range in.Nodes.IDs() {
				in.state[id] = nodeUp
			}
		}
		in.previous = -1
		if in.Poll <= 0 {
			in.Poll = 200 * time.Millisecond
		}
		if in.ResolveWait <= 0 {
			in.ResolveWait = 50 * time.Millisecond
		}
		if in.Journal == nil {
			in.Journal, _ = OpenJournal("")
		}
	}
}

// Records returns a copy of the records so far.
func (in *Injector) Records() []Record {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.records)
}

// add appends r and persists the records; it returns r's index.
func (in *Injector) add(r Record) int {
	in.mu.Lock()
	r.Seq = len(in.records)
	in.records = append(in.records, r)
	in.mu.Unlock()
	in.persist()
	return r.Seq
}

func (in *Injector) update(i int, fn func(*Record)) {
	in.mu.Lock()
	fn(&in.records[i])
	in.mu.Unlock()
	in.persist()
}

func (in *Injector) persist() {
	if in.Ledger == nil {
		return
	}
	if err := in.Ledger.PutMeta(MetaKey, in.Records()); err != nil {
		in.logf("warning: could not record faults in the ledger: %v", err)
	}
}

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
			go func() { defer wg.Done(); in.topology(pctx) }() //nolint:errcheck // fills the cache or not
		}
		in.prefetch(pctx, start.Add(st.At), &wg)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, st := range steps {
		due := start.Add(st.At)
		timer.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		in.dispatch(ctx, st, due, &wg)
	}
}

// Apply performs one step now, outside a schedule (its record has no due
// time), and returns its record once its action is done. A step that
// cannot run is recorded as skipped or failed, with why.
func (in *Injector) Apply(ctx context.Context, st Step) Record {
	in.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	return <-in.dispatch(ctx, st, time.Time{}, &wg)
}

// expectation is what the broker's profile, or else the generic text,
// says the action does.
func (in *Injector) expectation(a Action) string {
	if in.Expect != nil {
		if e := in.Expect(a); e != "" {
			return e
		}
	}
	return a.Expectation()
}

// onNode resolves st's target to a node now, and returns the plan that
// applies act to it, records the result, and for an action that takes the
// node away, watches it come back. Resolving never waits on a node: a
// target by ID or name reads nothing, one by role reads the topology with
// a bound (resolveTopology).
func (in *Injector) onNode(ctx context.Context, st Step, rec Record, act nodeAction) plan {
	skip := func(why string) plan {
		rec.Result, rec.Error = Skipped, why
		in.logf("fault %s %s skipped: %s", st.Action, st.Target, why)
		in.add(rec)
		return plan{rec: rec}
	}
	var topo drivers.Topology
	var before *drivers.Topology
	if st.Target.needsTopology() {
		if in.Driver == nil {
			return skip("no driver to read the topology from")
		}
		t, age, err := in.resolveTopology(ctx)
		if err != nil {
			return skip("could not read the topology: " + err.Error())
		}
		topo, before = t, &t
		rec.TopologyAgeMs = float64(age) / float64(time.Millisecond)
	} else if st.Action.TakesNodeAway() {
		before = in.cachedBefore()
	}
	in.mu.Lock()
	prev := in.previous
	in.mu.Unlock()
	var node int32
	var err error
	if st.Target.Kind == Named && in.Nodes != nil {
		node, err = nodeNamed(in.Nodes, st.Target.Name)
	} else {
		node, err = st.Target.Resolve(topo, prev)
	}
	if err != nil {
		return skip(err.Error())
	}
	rec.Node = node
	if in.Nodes == nil {
		return skip("no cluster to act on: give --cluster-dir or --cluster-file")
	}
	if !slices.Contains(in.Nodes.IDs(), node) {
		return skip(fmt.Sprintf("node %d is not one this run controls (%s)", node, in.Nodes.Where()))
	}
	in.mu.Lock()
	in.previous = node
	in.mu.Unlock()
	return plan{rec: rec, nodes: []int32{node}, act: func(ctx context.Context, rec Record) Record {
		return in.actOn(ctx, st, rec, node, act, before)
	}}
}

// actOn applies act to node now and records it. The kill proof (data dir
// inode, the other nodes' PIDs) is read beside the action, not before it,
// so that a slow PID read (over SSH) does not delay the fault.
func (in *Injector) actOn(ctx context.Context, st Step, rec Record, node int32, act nodeAction, before *drivers.Topology) Record {
	var proof sync.WaitGroup
	var inode uint64
	survivors := map[int32]int{}
	proof.Add(1)
	go func() {
		defer proof.Done()
		inode, _ = in.Nodes.DataDirInode(ctx, node)
		for _, id := range in.Nodes.IDs() {
			if id != node {
				survivors[id], _ = in.Nodes.PID(ctx, id)
			}
		}
	}()
	rec.At = time.Now()
	err := act.act(ctx, in, node, &rec)
	proof.Wait()
	rec.Inode, rec.Survivors = inode, survivors
	if err != nil {
		rec.Result, rec.Error = Failed, err.Error()
		in.logf("fault %s %s (node %d) failed: %v", st.Action, st.Target, node, err)
	} else {
		rec.Result = Applied
		in.logf("fault %s %s: node %d, PID %d%s", st.Action, st.Target, node, rec.PID, slipText(rec))
	}
	i := in.add(rec)
	if err == nil && st.Action.TakesNodeAway() && in.Driver != nil {
		in.watch(ctx, i, []int32{node}, before)
	}
	return rec
}

// slipText says, for progress lines, how late a scheduled fault fired
// when that is more than SlipNote.
func slipText(rec Record) string {
	if s := rec.Slip(); s > SlipNote {
		return fmt.Sprintf(" (%s after it was due)", s.Round(time.Millisecond))
	}
	return ""
}

// watch measures, in the background, the recovery of the nodes record i
// took away.
func (in *Injector) watch(ctx context.Context, i int, nodes []int32, before *drivers.Topology) {
	in.watchers.Add(1)
	go func() {
		defer in.watchers.Done()
		in.watchRecovery(ctx, i, nodes, before)
	}()
}

func (in *Injector) setState(node int32, s nodeState) {
	in.mu.Lock()
	in.state[node] = s
	in.mu.Unlock()
}

// takeDown kills or stops a node: its restart is journaled, and its state
// set to down, before signal runs, so that its death is expected. signal
// returns the PID it acted on.
func (in *Injector) takeDown(ctx context.Context, a Action, node int32, rec *Record, signal func() (int, error)) error {
	id, err := in.Journal.Add(Undo{Kind: UndoStart, Node: node, Why: fmt.Sprintf("%s of node %d", a, node)})
	if err != nil {
		return err
	}
	in.setState(node, nodeDown)
	// At is the signal's time, stamped after the journal's fsync: on a
	// busy machine that took milliseconds, during which a leader still
	// acked messages sent "after" the kill; those acks then passed for
	// the first acks after it (a NATS stream that stalled 6 s showed a
	// first ack 7 ms after the kill and no stall).
	rec.At = time.Now()
	rec.PID, err = signal()
	if err != nil && rec.PID == 0 {
		in.Journal.Done(id) // nothing was running: nothing to undo
		in.setState(node, nodeUp)
	}
	return err
}

// powerLoss SIGKILLs every node in ids as close together as it can, waits
// for each process to be gone, loses each one's unsynced writes, and
// starts each again. Each node's restart is journaled before its kill.
func (in *Injector) powerLoss(ctx context.Context, ids []int32, rec *Record) error {
	pl, ok := in.Nodes.(PowerLosser)
	if !ok {
		return fmt.Errorf("power-loss needs data dirs that can lose unsynced writes: start the local cluster with --lazyfs, or give each node a lose_command in the cluster file (%s)", in.Nodes.Where())
	}
	rec.Nodes, rec.PIDs, rec.Restarted, rec.Lost = ids, map[int32]int{}, map[int32]int{}, map[int32]string{}
	journal := map[int32]int{}
	for _, id := range ids {
		pid, err := in.Nodes.PID(ctx, id)
		if err != nil {
			return err
		}
		if pid == 0 {
			return fmt.Errorf("node %d does not run: a power loss needs a running broker", id)
		}
		j, err := in.Journal.Add(Undo{Kind: UndoStart, Node: id, Why: fmt.Sprintf("power-loss of node %d", id)})
		if err != nil {
			return err
		}
		journal[id] = j
	}
	in.mu.Lock()
	for _, id := range ids {
		in.state[id] = nodeDown // before the signal: its death is expected
	}
	in.mu.Unlock()
	rec.At = time.Now()
	for _, id := range ids {
		pid, err := in.Nodes.Signal(ctx, id, syscall.SIGKILL)
		if err != nil {
			return err
		}
		rec.PIDs[id] = pid
	}
	if len(ids) == 1 {
		rec.PID = rec.PIDs[ids[0]]
	}
	// The loss must come after the last write the dead process made: wait
	// for each process to be gone (lazyfs then waits for its files to be
	// closed).
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			pid, err := in.Nodes.PID(ctx, id)
			if err == nil && pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d's process did not die within 30s of SIGKILL", id)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
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
		in.logf("power-loss node %d: %s", id, lost[i])
	}
	for _, id := range ids {
		if err := in.Nodes.Start(ctx, id); err != nil {
			return fmt.Errorf("start node %d after the power loss: %w", id, err)
		}
	}
	for _, id := range ids {
		rec.Restarted[id] = in.waitPID(ctx, id)
		in.mu.Lock()
		in.state[id] = nodeUp
		in.mu.Unlock()
		if err := in.Journal.Done(journal[id]); err != nil {
			return err
		}
	}
	return nil
}

// waitPID waits briefly for a just-started node's process to show.
func (in *Injector) waitPID(ctx context.Context, node int32) int {
	for i := 0; i < 50; i++ {
		if pid, _ := in.Nodes.PID(ctx, node); pid != 0 {
			return pid
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0
}

// switchMode turns a broker-wide mode on or off (drivers.Switcher),
// journaling the value it had first.
func (in *Injector) switchMode(ctx context.Context, st Step) error {
	name, on, _ := st.Action.Switch()
	sw, ok := in.Driver.(drivers.Switcher)
	if !ok {
		return fmt.Errorf("the %s driver has no broker-wide modes to switch", in.Driver.Name())
	}
	was, err := sw.Switch(ctx, name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	id, undo, pending := in.Journal.FindSwitch(name)
	if !pending {
		v := onOff(was)
		if _, err := in.Journal.Add(Undo{Kind: UndoSwitch, Key: name, Value: &v, Why: string(st.Action)}); err != nil {
			return err
		}
	}
	if err := sw.SetSwitch(ctx, name, on); err != nil {
		return err
	}
	if pending && undo.Value != nil && *undo.Value == onOff(on) {
		return in.Journal.Done(id) // back to what it was: nothing left to undo
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// fsyncRecord applies a setting (an fsync toggle, a broker-wide mode) with
// apply and records it, with what an ack means afterwards as the running
// cluster says.
func (in *Injector) fsyncRecord(ctx context.Context, st Step, rec Record, apply func(context.Context, Step) error) Record {
	rec.At = time.Now()
	if err := apply(ctx, st); err != nil {
		rec.Result, rec.Error = Failed, err.Error()
		in.logf("fault %s %s failed: %v", st.Action, st.Target, err)
	} else {
		rec.Result = Applied
		if ad, ok := in.Driver.(drivers.AckDescriber); ok {
			if m, err := ad.AckMeaning(ctx, in.Topic); err == nil {
				rec.AckMeaning = m
			}
		}
		in.logf("fault %s %s: %s", st.Action, st.Target, rec.AckMeaning)
	}
	in.add(rec)
	return rec
}

// fsyncTopic switches fsync-before-ack on or off for a topic through the
// admin API, journaling the topic's own value first.
func (in *Injector) fsyncTopic(ctx context.Context, st Step) error {
	tc, ok := in.Driver.(drivers.TopicConfigurer)
	if !ok {
		return fmt.Errorf("the %s driver cannot change topic settings; use fsync-on brokers", in.Driver.Name())
	}
	key, onV, offV := tc.FsyncSetting()
	orig, err := tc.TopicConfig(ctx, st.Target.Topic, key)
	if err != nil {
		return err
	}
	if !in.Journal.HasTopicConfig(st.Target.Topic, key) {
		if _, err := in.Journal.Add(Undo{Kind: UndoTopicConfig, Topic: st.Target.Topic, Key: key, Value: orig,
			Why: fmt.Sprintf("%s %s", st.Action, st.Target)}); err != nil {
			return err
		}
	}
	v := offV
	if st.Action == FsyncOn {
		v = onV
	}
	return tc.SetTopicConfig(ctx, st.Target.Topic, key, &v)
}

// fsyncBrokers switches fsync-before-ack in every node's configuration
// file and restarts each node it changed, one at a time, journaling each
// file's content first.
func (in *Injector) fsyncBrokers(ctx context.Context, st Step) error {
	ce, ok := in.Nodes.(ConfigEditor)
	if !ok || in.Nodes == nil {
		return fmt.Errorf("broker-level fsync needs nodes described in a cluster file (config_file of each node)")
	}
	bf := in.ConfigFsync
	if bf == nil {
		return fmt.Errorf("the %s driver knows no fsync setting in its servers' configuration files", in.Driver.Name())
	}
	for _, id := range in.Nodes.IDs() {
		orig, err := ce.ReadConfig(ctx, id)
		if err != nil {
			return err
		}
		edited, err := bf.Edit(orig, st.Action == FsyncOn)
		if err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		if edited == orig {
			continue
		}
		if !in.Journal.HasNodeConfig(id) {
			if _, err := in.Journal.Add(Undo{Kind: UndoNodeConfig, Node: id, Content: &orig, Restart: true,
				Why: fmt.Sprintf("%s: %s", st.Action, bf.Setting)}); err != nil {
				return err
			}
		}
		if err := ce.WriteConfig(ctx, id, edited); err != nil {
			return err
		}
		if err := in.restartAndWait(ctx, id); err != nil {
			return err
		}
	}
	return nil
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
			up := func() bool {
				in.mu.Lock()
				defer in.mu.Unlock()
				return in.state[id] != nodeDown
			}
			expectedUp := up()
			pid, err := in.Nodes.PID(ctx, id)
			// A fault may take the node down while its PID is read (a
			// busy machine makes that read slow): its death is then
			// expected, and only a node up before and after the read
			// died unexpectedly.
			expectedUp = expectedUp && up()
			if err != nil || !expectedUp {
				dead[id] = false
				continue
			}
			if pid == 0 && !dead[id] {
				dead[id] = true
				in.add(Record{Action: UnexpectedDeath, Target: fmt.Sprintf("node:%d", id), Node: id,
					At: time.Now(), Result: Observed, Error: "the node's process is gone and no fault killed it"})
				in.logf("node %d died and no fault killed it", id)
			} else if pid != 0 {
				dead[id] = false
			}
		}
	}
}

// Heal undoes, newest first, everything the journal holds as still
// applied: it resumes paused nodes, starts nodes left down, restores
// topic settings and config files. It returns what it did, a line each.
// Every undo is idempotent, so Heal may run again after a failure or after
// a crash of ackcheck (ackcheck heal).
func (in *Injector) Heal(ctx context.Context) ([]string, error) {
	in.init()
	var done []string
	var errs []error
	ids, undos := in.Journal.Pending()
	for i, u := range undos {
		if err := in.undo(ctx, u); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if err := in.Journal.Done(ids[i]); err != nil {
			errs = append(errs, err)
		}
		done = append(done, u.String()+" (after "+u.Why+")")
		if u.Kind == UndoStart || u.Kind == UndoResume {
			in.mu.Lock()
			in.state[u.Node] = nodeUp
			in.mu.Unlock()
		}
	}
	return done, errors.Join(errs...)
}

func (in *Injector) undo(ctx context.Context, u Undo) error {
	switch u.Kind {
	case UndoResume, UndoStart, UndoNodeConfig:
		if in.Nodes == nil {
			return fmt.Errorf("no cluster to act on: give --cluster-dir or --cluster-file")
		}
	}
	switch u.Kind {
	case UndoResume:
		pid, err := in.Nodes.PID(ctx, u.Node)
		if err != nil || pid == 0 {
			return err // not running: nothing is paused
		}
		_, err = in.Nodes.Signal(ctx, u.Node, syscall.SIGCONT)
		return err
	case UndoStart:
		pid, err := in.Nodes.PID(ctx, u.Node)
		if err != nil || pid != 0 {
			return err
		}
		return in.Nodes.Start(ctx, u.Node)
	case UndoTopicConfig:
		tc, ok := in.Driver.(drivers.TopicConfigurer)
		if !ok {
			return fmt.Errorf("the driver cannot change topic settings")
		}
		return tc.SetTopicConfig(ctx, u.Topic, u.Key, u.Value)
	case UndoSwitch:
		sw, ok := in.Driver.(drivers.Switcher)
		if !ok {
			return fmt.Errorf("the driver cannot switch %s", u.Key)
		}
		return sw.SetSwitch(ctx, u.Key, u.Value != nil && *u.Value == "on")
	case UndoNodeConfig:
		ce, ok := in.Nodes.(ConfigEditor)
		if !ok || u.Content == nil {
			return fmt.Errorf("cannot restore node %d's config here", u.Node)
		}
		cur, err := ce.ReadConfig(ctx, u.Node)
		if err != nil {
			return err
		}
		if cur == *u.Content {
			return nil
		}
		if err := ce.WriteConfig(ctx, u.Node, *u.Content); err != nil {
			return err
		}
		if u.Restart {
			return in.restartAndWait(ctx, u.Node)
		}
		return nil
	}
	return fmt.Errorf("unknown undo %q", u.Kind)
}

// WaitRecovery waits for the recovery measurements to finish, at most
// until ctx ends.
func (in *Injector) WaitRecovery(ctx context.Context) {
	done := make(chan struct{})
	go func() { in.watchers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
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
		parts = append(parts, undos[i].Why)
	}
	return strings.Join(parts, "; ")
}
