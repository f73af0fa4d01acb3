package faults

import (
	"context"
	"slices"
	"sync"
	"time"
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
// just before the action itself (the signal), so At-Due is the slip. On
// nodes reached over SSH the action's own round trips are prepared three
// seconds ahead (prepare.go): a shell on each node, the PIDs, a network
// fault's probe before its rules.
//
// The reads in advance and the bounded read at the due time are the
// targets' (pick.go); the order of the actions on each node is chain's,
// and dispatch puts the two together.

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
// schedule wanted it (zero for a step applied outside a schedule); prep is
// what was prepared for it ahead (nil: nothing). The returned channel
// yields the final record.
func (in *Injector) dispatch(ctx context.Context, st Step, due time.Time, prep *stepPrep, wg *sync.WaitGroup) <-chan Record {
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
	on.prep = prep
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
