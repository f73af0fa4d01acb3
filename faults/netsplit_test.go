package faults

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

func TestSplitSides(t *testing.T) {
	tests := []struct {
		kind     TargetKind
		ids      []int32
		leader   int32
		minority []int32
		majority []int32
	}{
		{Minority, []int32{1, 2, 3}, 2, []int32{2}, []int32{1, 3}},
		{Majority, []int32{1, 2, 3}, 2, []int32{1}, []int32{2, 3}},
		{Majority, []int32{1, 2, 3}, 1, []int32{2}, []int32{1, 3}},
		{Minority, []int32{1, 2, 3, 4, 5}, 3, []int32{1, 3}, []int32{2, 4, 5}},
		{Majority, []int32{1, 2, 3, 4, 5}, 1, []int32{2, 3}, []int32{1, 4, 5}},
		{Minority, []int32{1, 2, 3, 4}, 4, []int32{4}, []int32{1, 2, 3}},
	}
	for _, tc := range tests {
		sides, err := splitSides(tc.kind, tc.ids, tc.leader)
		if err != nil || !slices.Equal(sides[0].IDs(), tc.minority) || !slices.Equal(sides[1].IDs(), tc.majority) {
			t.Errorf("%s of %v around %d: %v | %v (%v), want %v | %v", tc.kind, tc.ids, tc.leader,
				sides[0].IDs(), sides[1].IDs(), err, tc.minority, tc.majority)
		}
	}
	if _, err := splitSides(Minority, []int32{1, 2}, 1); err == nil {
		t.Error("a minority split of 2 nodes was accepted")
	}
}

func TestMinorityMajorityParse(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		ok       bool
	}{
		{"at=1s partition minority:orders", true},
		{"at=1s partition majority:orders", true},
		{"at=1s partition minority", false},
		{"at=1s kill minority:orders", false},
		{"at=1s loss 10% majority:orders", false},
	} {
		steps, err := ParseSchedule(tc.schedule)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.schedule, err, tc.ok)
			continue
		}
		if tc.ok {
			if got := steps[0].String(); got != "at=1s "+tc.schedule[len("at=1s "):] {
				t.Errorf("%s reads back as %s", tc.schedule, got)
			}
		}
	}
}

// fixedTopology is a broker whose topic is led mostly by one node.
type fixedTopology struct {
	drivers.Driver
	topo drivers.Topology
}

func (d fixedTopology) Name() string { return "fixed" }

func (d fixedTopology) Topology(context.Context, string) (drivers.Topology, error) {
	t := d.topo
	t.At = time.Now()
	return t, nil
}

// A minority or majority split picks its sides when it fires, around the
// node leading the most partitions, and cuts exactly the paths between
// the sides (real namespaces, real nft rules, probed).
func TestMinorityMajorityFromSchedule(t *testing.T) {
	n := testNet(t)
	c := newNetCluster(t, n)
	d := fixedTopology{topo: drivers.Topology{Controller: 1,
		Nodes: []drivers.Node{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []drivers.PartitionState{
			{Partition: 0, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			{Partition: 1, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			{Partition: 2, Leader: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		}}}
	for _, tc := range []struct {
		schedule string
		cut      []string
		node     int32
	}{
		{"at=0s partition minority:t", paths("node 1 -> node 2", "node 2 -> node 1", "node 2 -> node 3", "node 3 -> node 2"), 2},
		{"at=0s partition majority:t", paths("node 1 -> node 2", "node 2 -> node 1", "node 1 -> node 3", "node 3 -> node 1"), 1},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			steps, err := ParseSchedule(tc.schedule + "; at=100ms heal-network")
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Nodes: Local{Cluster: c}, Driver: d}
			if err := Preflight(context.Background(), env, steps); err != nil {
				t.Fatal(err)
			}
			j, err := OpenJournal(filepath.Join(t.TempDir(), "heal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			in := &Injector{Nodes: env.Nodes, Driver: d, Topic: "t", Journal: j, Logf: t.Logf}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			in.Run(ctx, time.Now(), steps)
			recs := in.Records()
			if len(recs) != 2 || recs[0].Result != Applied || recs[1].Result != Applied {
				t.Fatalf("records %+v", recs)
			}
			f := recs[0]
			if f.Node != tc.node {
				t.Errorf("isolated side starts with node %d, want %d", f.Node, tc.node)
			}
			p := f.NetworkProof
			if p == nil || p.After == nil || p.Healed == nil {
				t.Fatalf("proof incomplete: %+v", p)
			}
			seen := slices.Clone(p.After.Cut)
			slices.Sort(seen)
			if !slices.Equal(seen, tc.cut) {
				t.Errorf("after: cut %v, want %v", seen, tc.cut)
			}
			if len(p.Healed.Cut) != 0 {
				t.Errorf("after the heal: %s", p.Healed)
			}
		})
	}
}
