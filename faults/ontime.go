package faults

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Faults on time.
//
// A fault that fires late is a different experiment: a kill due at 28 s
// that fires at 30 s gives the replicas left two more seconds alone. So
// nothing a fault does before its action may wait on a node the schedule
// has taken away. Two things used to:
//
//   - reading the topology (to pick a leader, and to remember the state
//     before the fault for the recovery watch): a broker's metadata read
//     asks every broker, and a paused one answers only when the read's
//     deadline (2 s) ends;
//   - the previous step: steps ran one after the other, so a step waited
//     for every earlier one to finish (a stop's grace, a restart's wait for
//     its PID, a rolling restart).
//
// Now the topology is read in advance (at due-3s, due-1.5s, due-0.5s, each
// read bounded by topologyTimeout) into a cache that keeps the newest read;
// at due, a target chosen by role gets a fresh read if one lands within
// ResolveWait, else the newest cached read, and the record says how old the
// topology it used was. Targets by node ID read nothing. Each step's target
// is resolved in schedule order at its due time (so "previous" is the node
// the previous step picked), and its action then runs on its own
// goroutine, after the earlier actions on the same nodes only (a restart
// still follows the stop of its node; a kill of node 3 does not wait for a
// stop of node 1).
//
// Every record of a scheduled step carries Due beside At; At is stamped
// just before the action itself (the signal), so At-Due is the slip.

// topologyTimeout bounds every topology read the injector makes.
const topologyTimeout = 2 * time.Second

// prefetchLeads are how long before a step's due time its topology reads
// start. The earliest ends (topologyTimeout) before the step is due even
// when a paused broker holds a read for its whole deadline.
var prefetchLeads = []time.Duration{3 * time.Second, 1500 * time.Millisecond, 500 * time.Millisecond}

// topoCache holds the newest topology read, by the time its read began
// (a read reflects the cluster at least as of its start).
type topoCache struct {
	mu   sync.Mutex
	t    drivers.Topology
	asOf time.Time
	ok   bool
}

func (c *topoCache) put(t drivers.Topology, asOf time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || asOf.After(c.asOf) {
		c.t, c.asOf, c.ok = t, asOf, true
	}
}

func (c *topoCache) get() (drivers.Topology, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t, c.asOf, c.ok
}

// targets is what faults pick their targets from when they are due: the
// topic's topology, read in advance into a cache and bounded at the due
// time, and the node the previous step picked ("previous").
type targets struct {
	driver drivers.Driver // nil: no topology to read
	topic  string
	// wait bounds how long a target chosen by role waits for a fresh read
	// at its due time (Injector.ResolveWait).
	wait  time.Duration
	cache topoCache

	mu   sync.Mutex
	prev int32 // -1: no step picked a node yet
}

func newTargets(d drivers.Driver, topic string, wait time.Duration) *targets {
	return &targets{driver: d, topic: topic, wait: wait, prev: -1}
}

func (t *targets) previous() int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prev
}

func (t *targets) setPrevious(node int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prev = node
}

// read reads the topic's topology with a short deadline of its own. Every
// successful read also fills the cache.
func (t *targets) read(ctx context.Context) (drivers.Topology, error) {
	if t.driver == nil {
		return drivers.Topology{}, errors.New("no driver to read the topology from")
	}
	tctx, cancel := context.WithTimeout(ctx, topologyTimeout)
	defer cancel()
	start := time.Now()
	topo, err := t.driver.Topology(tctx, t.topic)
	if err == nil {
		t.cache.put(topo, start)
	}
	return topo, err
}

// prefetch reads the topology at each of prefetchLeads before due, each
// read on its own goroutine, until ctx ends. The reads fill the cache.
func (t *targets) prefetch(ctx context.Context, due time.Time, wg *sync.WaitGroup) {
	if t.driver == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for _, lead := range prefetchLeads {
			at := due.Add(-lead)
			if time.Until(at) < -lead/2 {
				continue // long past: a later lead is fresher
			}
			timer.Reset(time.Until(at))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.read(ctx) //nolint:errcheck // fills the cache or not
			}()
		}
	}()
}

// resolve is the topology a target chosen by role is resolved from at
// the moment it is due: a read started now if it answers within wait,
// else the newest read in the cache. Only when nothing was ever read does
// it wait for the fresh read to its deadline. age is how long before now
// the topology's read began.
func (t *targets) resolve(ctx context.Context) (topo drivers.Topology, age time.Duration, err error) {
	type result struct {
		t     drivers.Topology
		start time.Time
		err   error
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		topo, err := t.read(ctx)
		ch <- result{topo, start, err}
	}()
	wait := time.NewTimer(t.wait)
	defer wait.Stop()
	select {
	case r := <-ch:
		if r.err == nil {
			return r.t, time.Since(r.start), nil
		}
		err = r.err
	case <-wait.C:
	}
	if topo, asOf, ok := t.cache.get(); ok {
		return topo, time.Since(asOf), nil
	}
	if err != nil {
		return drivers.Topology{}, 0, err
	}
	r := <-ch // nothing cached: this read is all there is (bounded by topologyTimeout)
	return r.t, time.Since(r.start), r.err
}

// cachedBefore is the newest topology read before a fault that takes
// nodes away, for the recovery watch; nil when none was read. It never
// waits.
func (t *targets) cachedBefore() *drivers.Topology {
	if topo, _, ok := t.cache.get(); ok {
		return &topo
	}
	return nil
}

// chain orders the actions on each node: an action waits for the earlier
// actions on the nodes it touches, and for nothing else.
type chain struct {
	mu    sync.Mutex
	tails map[int32]chan struct{}
}

// join registers an action on nodes and returns what it must wait for
// and the function that marks it finished.
func (c *chain) join(nodes []int32) (prev []chan struct{}, done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tails == nil {
		c.tails = map[int32]chan struct{}{}
	}
	ch := make(chan struct{})
	for _, n := range slices.Compact(slices.Sorted(slices.Values(nodes))) {
		if p := c.tails[n]; p != nil {
			prev = append(prev, p)
		}
		c.tails[n] = ch
	}
	return prev, func() { close(ch) }
}

// dispatch picks st's target now and starts its action on its own
// goroutine, after the earlier actions on the same nodes. due is when the
// schedule wanted it (zero for a step applied outside a schedule). The
// returned channel yields the final record.
func (in *Injector) dispatch(ctx context.Context, st Step, due time.Time, wg *sync.WaitGroup) <-chan Record {
	out := make(chan Record, 1)
	rec := Record{Action: st.Action, Target: st.Target.String(), Node: -1,
		At: time.Now(), Due: due, Expect: st.Action.Expectation()}
	if in.Expect != nil {
		if e := in.Expect(st.Action); e != "" {
			rec.Expect = e
		}
	}
	f, err := faultOf(st)
	if err != nil {
		rec.Result, rec.Error = Failed, err.Error()
		in.log.add(rec)
		out <- rec
		return out
	}
	on, err := f.pick(ctx, in.targets, in.w.Env, st, &rec)
	if err != nil {
		rec.Result, rec.Error = Skipped, err.Error()
		in.w.logf("fault %s %s skipped: %s", st.Action, st.Target, err)
		in.log.add(rec)
		out <- rec
		return out
	}
	prev, done := in.chain.join(on.nodes)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done()
		for _, ch := range prev {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			r := rec
			r.Result, r.Error = Skipped, "the run ended while an earlier fault on the same node was still acting"
			in.log.add(r)
			out <- r
			return
		}
		out <- in.apply(ctx, f, st, on, rec)
	}()
	return out
}
