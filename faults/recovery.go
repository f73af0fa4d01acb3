package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Recovery after a fault that takes nodes away is two moments, each
// stamped when the check that proves it succeeded:
//
//   - ready: every node taken away answers as a broker again (it is in the
//     cluster's node list and serves a request itself);
//   - in sync: every partition of the topic has a leader and its full
//     replica set in its in-sync set, and each node taken away is back in
//     the in-sync set of every partition it replicates *as the process that
//     came back*.
//
// The second condition is the one a bare "ISR is full" check gets wrong: a
// broker restarted before the cluster noticed it was gone (Kafka's
// broker.session.timeout.ms, 9 s by default) is still listed in every ISR,
// so the first full ISR after the restart says nothing about whether the
// new process has caught up. A rejoin therefore needs evidence that the
// cluster went through the node's absence, seen after the fault:
//
//   - the node missing from the cluster's node list (Kafka drops a fenced
//     broker, and a broker that re-registers is fenced until it caught up),
//     which counts for every partition it replicates;
//   - the node missing from one partition's in-sync set, or reported
//     offline by its leader (NATS), for that partition;
//   - a partition the node led at the fault (or whose every replica the
//     fault took away) without a leader, or with a new leader epoch or a
//     later leader-since time than just before the fault.
//
// A partition whose only replica is the node (Pulsar's owner, a
// replication factor of 1) needs none: there is no other replica to be in
// sync with, so serving again is being in sync. A pause keeps the node's
// process, so it needs none either; if the node never left, the report says
// so. Ready must come first: a node cannot be in sync before it serves.
//
// State machine per fault, driven by polls that begin right after the
// fault and continue while the node is away:
//
//	away --node back (restarted/resumed)--> back --answers--> ready
//	ready --evidence for every partition, full ISR with the node--> in sync
type rejoin struct {
	nodes []int32
	// needEvidence: the fault replaced the node's process (kill, stop,
	// power loss), so only a rejoin after its absence counts.
	needEvidence bool
	// before: partition -> its state just before the fault, when it could
	// be read (leader and leader epoch); else the first look after it.
	before map[int32]drivers.PartitionState
	// left: evidence per node and partition (partition -1: the node was
	// missing from the node list, which covers all its partitions).
	left map[int32]map[int32]string
	// seen is set once any topology was read.
	seen bool
	// ready is set once the nodes answered as brokers again (advance).
	ready bool
}

// newRejoin starts tracking nodes; before is the topology read just before
// the fault, or nil when it could not be read.
func newRejoin(nodes []int32, needEvidence bool, before *drivers.Topology) *rejoin {
	r := &rejoin{nodes: slices.Clone(nodes), needEvidence: needEvidence, before: map[int32]drivers.PartitionState{}, left: map[int32]map[int32]string{}}
	for _, n := range nodes {
		r.left[n] = map[int32]string{}
	}
	if before != nil {
		for _, p := range before.Partitions {
			if p.Err == "" {
				r.before[p.Partition] = p
			}
		}
	}
	return r
}

// allAway reports whether every replica of p was taken away by the fault.
func (r *rejoin) allAway(p drivers.PartitionState) bool {
	for _, x := range p.Replicas {
		if !slices.Contains(r.nodes, x) {
			return false
		}
	}
	return len(p.Replicas) > 0
}

// observe takes one topology read after the fault and notes every sign of
// the nodes' absence it shows.
func (r *rejoin) observe(t drivers.Topology) {
	first := !r.seen
	r.seen = true
	for _, n := range r.nodes {
		if !slices.ContainsFunc(t.Nodes, func(x drivers.Node) bool { return x.ID == n }) {
			r.note(n, -1, "left the cluster's node list")
		}
	}
	for _, p := range t.Partitions {
		// A partition the broker describes with an error is judged only
		// by its lack of a leader (NATS says "no leader" that way).
		if len(p.Replicas) == 0 || (p.Err != "" && p.Leader >= 0) {
			continue
		}
		b, known := r.before[p.Partition]
		if !known && first {
			r.before[p.Partition], b = p, p // nothing read before the fault
		}
		for _, n := range r.nodes {
			if !slices.Contains(p.Replicas, n) {
				continue
			}
			if !slices.Contains(p.ISR, n) {
				r.note(n, p.Partition, "left the in-sync set")
			}
			if slices.Contains(p.Offline, n) {
				r.note(n, p.Partition, "was reported offline")
			}
			// A partition without a leader, or with a new leader epoch,
			// went through an election. That proves the absence of the old
			// leader, and of every replica when all of them were taken
			// away (a power loss of every node), since then none kept
			// serving; not of a follower whose leader lived.
			if b.Leader != n && !r.allAway(p) {
				continue
			}
			if p.Leader < 0 {
				r.note(n, p.Partition, "saw the partition without a leader")
			}
			if b.Epoch >= 0 && p.Epoch > b.Epoch {
				r.note(n, p.Partition, "went through a leader election (new leader epoch)")
			}
			if !b.ElectedAt.IsZero() && p.ElectedAt.After(b.ElectedAt) {
				r.note(n, p.Partition, "went through a leader election (new leader since)")
			}
		}
	}
}

func (r *rejoin) note(n, p int32, why string) {
	if _, ok := r.left[n][p]; !ok {
		r.left[n][p] = why
	}
}

// inSync reports whether topology t shows every partition led, fully in
// sync, and each node back in every in-sync set it belongs to after
// evidence of its absence. When it is not, why says what is missing.
func (r *rejoin) inSync(t drivers.Topology) (ok bool, why string) {
	if len(t.Partitions) == 0 {
		return false, "no partitions described"
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return false, fmt.Sprintf("partition %d: leader %d, in sync %v of %v", p.Partition, p.Leader, p.ISR, p.Replicas)
		}
		for _, n := range r.nodes {
			if !slices.Contains(p.Replicas, n) {
				continue
			}
			if !slices.Contains(p.ISR, n) {
				return false, fmt.Sprintf("partition %d: node %d not in sync", p.Partition, n)
			}
			if r.needEvidence && !r.absent(n, p) {
				return false, fmt.Sprintf("partition %d: node %d not yet seen out of sync since the fault", p.Partition, n)
			}
		}
	}
	for _, n := range r.nodes {
		if !slices.ContainsFunc(t.Nodes, func(x drivers.Node) bool { return x.ID == n }) {
			return false, fmt.Sprintf("node %d is not in the cluster's node list", n)
		}
	}
	return true, ""
}

func (r *rejoin) absent(n int32, p drivers.PartitionState) bool {
	if len(p.Replicas) == 1 {
		return true // the sole replica: nobody else to be in sync with
	}
	_, all := r.left[n][-1]
	_, one := r.left[n][p.Partition]
	return all || one
}

// advance takes one topology read made while the nodes are back (restarted
// or resumed): first they must answer as brokers (answer), then, on a
// later read, be in sync. It reports the moment each is first reached, and
// while not in sync, why.
func (r *rejoin) advance(t drivers.Topology, answer func(drivers.Topology) bool) (becameReady, inSync bool, why string) {
	if !r.ready {
		if r.ready = answer(t); !r.ready {
			return false, false, fmt.Sprintf("node(s) %v do not answer as brokers yet", r.nodes)
		}
		return true, false, "in sync is judged on a read after ready"
	}
	inSync, why = r.inSync(t)
	return false, inSync, why
}

// evidence says, for the record, what the rejoin was seen as: each node
// back (in sync, in the node list) after the absence its notes show. It is
// read once the nodes are in sync, so it names the return, never the
// absence alone ("node 2 back in the cluster's node list after leaving
// it", not "node 2 left the cluster's node list").
func (r *rejoin) evidence() string {
	var parts []string
	for _, n := range r.nodes {
		if why, ok := r.left[n][-1]; ok {
			parts = append(parts, fmt.Sprintf("node %d %s", n, rejoinedAfter(why, 0)))
			continue
		}
		kinds := map[string]int{}
		for _, why := range r.left[n] {
			kinds[why]++
		}
		var ks []string
		for k, c := range kinds {
			ks = append(ks, rejoinedAfter(k, c))
		}
		slices.Sort(ks)
		switch {
		case len(ks) > 0:
			parts = append(parts, fmt.Sprintf("node %d %s", n, strings.Join(ks, ", ")))
		case !r.needEvidence:
			parts = append(parts, fmt.Sprintf("node %d kept its process and never left the in-sync sets", n))
		default:
			parts = append(parts, fmt.Sprintf("node %d replicates no partition that has another replica", n))
		}
	}
	return strings.Join(parts, "; ")
}

// rejoinedAfter says what a node back in sync was seen as, given a note of
// its absence (rejoin.note) seen in count partitions (0: in the node list).
func rejoinedAfter(why string, count int) string {
	in := fmt.Sprintf(" in %d partition(s)", count)
	switch why {
	case "left the cluster's node list":
		return "back in the cluster's node list after leaving it"
	case "left the in-sync set":
		return "back in the in-sync set after leaving it" + in
	case "was reported offline":
		return "back in sync after being reported offline" + in
	case "saw the partition without a leader":
		return "back in sync after the partition went without a leader" + in
	}
	// "went through a leader election (...)"
	return "back in sync after the partition " + why + in
}

// watchRecovery measures, for the nodes taken away by rec, when they
// answer as brokers again and when they are back in sync (see rejoin),
// and hands each moment to stamp as it is seen. It polls every poll from
// right after the fault, so that it sees the absence, and gives up when
// ctx ends.
func (w *world) watchRecovery(ctx context.Context, poll time.Duration, rec Record, nodes []int32, before *drivers.Topology, stamp func(func(*Record))) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	rj := newRejoin(nodes, rec.Action.ReplacesProcess(), before)
	var readyAt, inSyncAt time.Time
	for readyAt.IsZero() || inSyncAt.IsZero() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		topo, err := w.read(ctx)
		if err == nil {
			rj.observe(topo)
		}
		if err != nil || !w.states.are(nodeUp, nodes...) || w.net.isolates(nodes...) {
			continue
		}
		// Each moment is stamped when its check succeeded, not when the
		// poll began: a probe can wait up to its timeout.
		becameReady, inSync, _ := rj.advance(topo, func(t drivers.Topology) bool { return w.allAnswer(ctx, t, nodes) })
		now := time.Now()
		if becameReady {
			readyAt = now
			stamp(func(r *Record) { r.ReadyAt = now })
			w.logf("node(s) %v answer as brokers again, %s after the %s", nodes, now.Sub(rec.At).Round(time.Millisecond), rec.Action)
		}
		if inSync {
			inSyncAt = now
			ev := rj.evidence()
			stamp(func(r *Record) { r.InSyncAt, r.InSyncEvidence = now, ev })
			w.logf("all replicas of %s in sync again, %s after the %s (%s)", w.topic, now.Sub(rec.At).Round(time.Millisecond), rec.Action, ev)
		}
	}
}

// allAnswer reports whether every node is in topo's node list and serves
// a request itself.
func (w *world) allAnswer(ctx context.Context, topo drivers.Topology, nodes []int32) bool {
	for _, n := range nodes {
		if !slices.ContainsFunc(topo.Nodes, func(x drivers.Node) bool { return x.ID == n }) {
			return false
		}
		if p, ok := w.Driver.(drivers.NodeProber); ok {
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := p.ProbeNode(tctx, n)
			cancel()
			if err != nil {
				return false
			}
		}
	}
	return true
}
