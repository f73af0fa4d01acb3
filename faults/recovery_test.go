package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// topo builds a topology of nodes and partitions given as
// leader/epoch/replicas/ISR.
func topo(nodes []int32, parts ...drivers.PartitionState) drivers.Topology {
	t := drivers.Topology{Controller: -1, Partitions: parts}
	for _, n := range nodes {
		t.Nodes = append(t.Nodes, drivers.Node{ID: n})
	}
	return t
}

func part(p, leader, epoch int32, replicas, isr []int32) drivers.PartitionState {
	return drivers.PartitionState{Partition: p, Leader: leader, Epoch: epoch, Replicas: replicas, ISR: isr}
}

// The rejoin rules, each on a sequence of topologies polled after a fault
// on node 2: the last one is judged.
func TestRejoin(t *testing.T) {
	all := []int32{1, 2, 3}
	full := []int32{1, 2, 3}
	shrunk := []int32{1, 3}
	cases := []struct {
		name         string
		nodes        []int32
		before       *drivers.Topology
		needEvidence bool
		polls        []drivers.Topology
		want         bool
		why          string // part of the reason when not in sync
		evidence     string // part of the evidence when in sync
	}{
		{
			// The bug of issue 11: a restart before the session timeout
			// finds every ISR still full; that is not a rejoin.
			name: "kill, ISR never shrank", needEvidence: true,
			polls: []drivers.Topology{topo(all, part(0, 1, 5, full, full), part(1, 2, 3, full, full))},
			want:  false, why: "not yet seen out of sync",
		},
		{
			name: "kill, fenced (left the node list), back", needEvidence: true,
			polls: []drivers.Topology{
				topo(all, part(0, 1, 5, full, full), part(1, 2, 3, full, full)),
				topo([]int32{1, 3}, part(0, 1, 5, full, shrunk), part(1, 1, 4, full, shrunk)),
				topo(all, part(0, 1, 5, full, full), part(1, 1, 4, full, full)),
			},
			want: true, evidence: "node 2 back in the cluster's node list after leaving it",
		},
		{
			// Leaving the node list is evidence for every partition the
			// node replicates, even when no in-sync set ever shrank.
			name: "kill, fenced and back before any ISR shrank", needEvidence: true,
			polls: []drivers.Topology{
				topo([]int32{1, 3}, part(0, 1, 5, full, full)),
				topo(all, part(0, 1, 5, full, full)),
			},
			want: true, evidence: "node 2 back in the cluster's node list after leaving it",
		},
		{
			// NATS describes a partition without a leader by an error:
			// that is judged, as the lack of a leader it is.
			name: "kill of the leader, seen without a leader as an error", needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 2, 5, full, full)}},
			polls: []drivers.Topology{
				topo(all, drivers.PartitionState{Partition: 0, Leader: -1, Epoch: 5, Replicas: full, ISR: full, Err: "no leader"}),
				topo(all, part(0, 2, 5, full, full)),
			},
			want: true, evidence: "after the partition went without a leader",
		},
		{
			// A partition described with an error and a leader (node 0)
			// is not judged: its epoch, which the next read without the
			// error does not confirm, is no evidence.
			name: "kill of node 0, an erroring partition's epoch is no evidence", nodes: []int32{0}, needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 0, 5, []int32{0, 1, 2}, []int32{0, 1, 2})}},
			polls: []drivers.Topology{
				topo([]int32{0, 1, 2}, drivers.PartitionState{Partition: 0, Leader: 0, Epoch: 6, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}, Err: "stale metadata"}),
				topo([]int32{0, 1, 2}, part(0, 0, 5, []int32{0, 1, 2}, []int32{0, 1, 2})),
			},
			want: false, why: "not yet seen out of sync",
		},
		{
			// Node 0 leading is a leader: no sign of an absence, where
			// the broker gives no epochs to show an election.
			name: "kill of the leader, node 0 leads next, no epochs", needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 2, -1, []int32{0, 1, 2}, []int32{0, 1, 2})}},
			polls:  []drivers.Topology{topo([]int32{0, 1, 2}, part(0, 0, -1, []int32{0, 1, 2}, []int32{0, 1, 2}))},
			want:   false, why: "not yet seen out of sync",
		},
		{
			// A topic's first leader epoch is 0: an election from it is one.
			name: "kill of the leader, elected again from epoch 0", needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 2, 0, full, full)}},
			polls:  []drivers.Topology{topo(all, part(0, 1, 1, full, full))},
			want:   true, evidence: "new leader epoch",
		},
		{
			name: "pause, node 0 leads, never left the ISR", needEvidence: false,
			polls: []drivers.Topology{topo([]int32{0, 1, 2}, part(0, 0, 5, []int32{0, 1, 2}, []int32{0, 1, 2}))},
			want:  true, evidence: "kept its process",
		},
		{
			name: "kill, back in the node list but one ISR not yet", needEvidence: true,
			polls: []drivers.Topology{
				topo([]int32{1, 3}, part(0, 1, 5, full, shrunk), part(1, 1, 4, full, shrunk)),
				topo(all, part(0, 1, 5, full, full), part(1, 1, 4, full, shrunk)),
			},
			want: false, why: "partition 1",
		},
		{
			name: "kill, each partition's ISR shrank once", needEvidence: true,
			polls: []drivers.Topology{
				topo(all, part(0, 1, 5, full, shrunk), part(1, 2, 3, full, full)),
				topo(all, part(0, 1, 5, full, full), part(1, 1, 4, full, shrunk)),
				topo(all, part(0, 1, 5, full, full), part(1, 1, 4, full, full)),
			},
			want: true, evidence: "back in the in-sync set after leaving it in 2 partition(s)",
		},
		{
			name: "kill, only one partition seen shrunk", needEvidence: true,
			polls: []drivers.Topology{
				topo(all, part(0, 1, 5, full, shrunk), part(1, 3, 3, full, full)),
				topo(all, part(0, 1, 5, full, full), part(1, 3, 3, full, full)),
			},
			want: false, why: "partition 1: node 2 not yet seen",
		},
		{
			name: "kill, reported offline (NATS) while still current", needEvidence: true,
			polls: []drivers.Topology{
				topo(all, drivers.PartitionState{Partition: 0, Leader: 1, Epoch: -1, Replicas: full, ISR: full, Offline: []int32{2}}),
				topo(all, part(0, 1, -1, full, full)),
			},
			want: true, evidence: "back in sync after being reported offline",
		},
		{
			name: "kill of a leader, new leader epoch", needEvidence: true,
			polls: []drivers.Topology{
				topo(all, part(0, 2, 7, full, full)),
				topo(all, part(0, 2, 8, full, full)),
			},
			want: true, evidence: "new leader epoch",
		},
		{
			// A power loss of every node: Kafka elects every partition's
			// leader again (an unclean election) and the restarted brokers
			// may all be back before any of them answers, so neither the
			// node list nor an ISR shows the absence; the epochs do.
			name: "power loss of all, every partition re-elected", nodes: all, needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 1, 5, full, full), part(1, 3, 2, full, full)}},
			polls:  []drivers.Topology{topo(all, part(0, 2, 6, full, full), part(1, 3, 3, full, full))},
			want:   true, evidence: "went through a leader election",
		},
		{
			name: "power loss of all, one partition kept its epoch", nodes: all, needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 1, 5, full, full), part(1, 3, 2, full, full)}},
			polls:  []drivers.Topology{topo(all, part(0, 2, 6, full, full), part(1, 3, 2, full, full))},
			want:   false, why: "partition 1: node 1 not yet seen",
		},
		{
			name: "power loss of all (NATS): a later leader-since", nodes: all, needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{{Partition: 0, Leader: 1, Epoch: -1, Replicas: full, ISR: full, ElectedAt: time.Unix(100, 0)}}},
			polls:  []drivers.Topology{topo(all, drivers.PartitionState{Partition: 0, Leader: 2, Epoch: -1, Replicas: full, ISR: full, ElectedAt: time.Unix(130, 0)})},
			want:   true, evidence: "new leader since",
		},
		{
			name: "kill of a follower: another leader's election is no evidence", needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 1, 5, full, full)}},
			polls:  []drivers.Topology{topo(all, part(0, 3, 6, full, full))},
			want:   false, why: "not yet seen out of sync",
		},
		{
			name: "kill of the leader, partition seen without a leader", needEvidence: true,
			before: &drivers.Topology{Partitions: []drivers.PartitionState{part(0, 2, 5, full, full)}},
			polls:  []drivers.Topology{topo(all, part(0, -1, 5, full, []int32{2})), topo(all, part(0, 2, 5, full, full))},
			want:   true, evidence: "after the partition went without a leader",
		},
		{
			name: "kill, sole replica (Pulsar owner)", needEvidence: true,
			polls: []drivers.Topology{topo([]int32{2}, part(0, 2, -1, []int32{2}, []int32{2}))},
			want:  true, evidence: "replicates no partition that has another replica",
		},
		{
			name: "pause that never left the ISR", needEvidence: false,
			polls: []drivers.Topology{topo(all, part(0, 1, 5, full, full))},
			want:  true, evidence: "kept its process",
		},
		{
			name: "partition without a leader", needEvidence: false,
			polls: []drivers.Topology{topo(all, part(0, -1, 5, full, shrunk))},
			want:  false, why: "leader -1",
		},
		{
			name: "no partitions", needEvidence: false,
			polls: []drivers.Topology{topo(all)},
			want:  false, why: "no partitions",
		},
	}
	for _, c := range cases {
		if c.nodes == nil {
			c.nodes = []int32{2}
		}
		t.Run(c.name, func(t *testing.T) {
			r := newRejoin(c.nodes, c.needEvidence, c.before)
			for _, p := range c.polls {
				r.observe(p)
			}
			ok, why := r.inSync(c.polls[len(c.polls)-1])
			if ok != c.want {
				t.Fatalf("in sync %v (%s), want %v", ok, why, c.want)
			}
			if !ok && !strings.Contains(why, c.why) {
				t.Errorf("reason %q does not say %q", why, c.why)
			}
			if ok && !strings.Contains(r.evidence(), c.evidence) {
				t.Errorf("evidence %q does not say %q", r.evidence(), c.evidence)
			}
		})
	}
}

// advance: nothing is in sync before the node answers, and in sync is
// judged on a read after the one that found it ready.
func TestRejoinAdvance(t *testing.T) {
	all := []int32{1, 2, 3}
	r := newRejoin([]int32{2}, true, nil)
	left := topo([]int32{1, 3}, part(0, 1, 5, all, []int32{1, 3}))
	back := topo(all, part(0, 1, 5, all, all))
	answers := false
	answer := func(drivers.Topology) bool { return answers }
	r.observe(left)
	if ready, inSync, _ := r.advance(left, answer); ready || inSync {
		t.Fatal("ready or in sync while the node does not answer")
	}
	answers = true
	r.observe(back)
	if ready, inSync, _ := r.advance(back, answer); !ready || inSync {
		t.Fatalf("first read with the node answering: ready %v, in sync %v; want ready only", ready, inSync)
	}
	if ready, inSync, why := r.advance(back, answer); ready || !inSync {
		t.Fatalf("next read: ready again %v, in sync %v (%s)", ready, inSync, why)
	}
}
