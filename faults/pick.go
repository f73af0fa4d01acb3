package faults

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// What a fault picks its target from when it is due, without waiting on
// any node (see ontime.go for why), and what it picked.

// picked is what a fault chose to act on when it was due.
type picked struct {
	// nodes are the nodes the action touches: it runs after the earlier
	// actions on them, and, for an action that takes nodes away, these
	// are the nodes whose recovery is watched.
	nodes []int32
	// before is the newest topology read before the fault, for the
	// recovery watch; nil when none was read.
	before *drivers.Topology
	// sides, for a split chosen when it fires (minority, majority): the
	// two sides it picked; zero otherwise.
	sides [2]NodeSet
	// prep is what was prepared for the step before it was due; nil when
	// nothing was.
	prep *stepPrep
}

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
