package faults

import (
	"os"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
)

// Every network step parses to typed values and prints back as written
// (in canonical form); every malformed one is refused with the form.
func TestParseNetworkSchedule(t *testing.T) {
	tests := []struct {
		in, want string
		check    func(Step) bool
	}{
		{"at=20s partition most-leaders:orders", "at=20s partition most-leaders:orders",
			func(s Step) bool { return s.Action == Partition && s.Target.Kind == MostLeaders }},
		{"at=20s partition-client node:2", "at=20s partition-client node:2",
			func(s Step) bool { return s.Action == PartitionClient && s.Target.Node == 2 }},
		{"at=20s partition split:1|2,3", "at=20s partition split:1|2,3",
			func(s Step) bool {
				return s.Target.Kind == Split && s.Target.Sides[0].Has(1) && s.Target.Sides[1].Has(3) && !s.Target.Sides[0].Has(2)
			}},
		{"at=20s partition split:3,1|2", "at=20s partition split:1,3|2", nil},
		{"at=20s partition one-way:1->2", "at=20s partition one-way:1->2",
			func(s Step) bool { return s.Target.Kind == OneWayPath && s.Target.Node == 1 && s.Target.Peer == 2 }},
		{"at=20s partition follower:orders/3", "at=20s partition follower:orders/3",
			func(s Step) bool { return s.Target.Kind == Follower && s.Target.Partition == 3 }},
		{"at=20s loss 30% node:2", "at=20s loss 30% node:2",
			func(s Step) bool { return s.Action == Loss && s.Amount.Percent == 30 }},
		{"at=20s loss 100% pair:1-2", "at=20s loss 100% pair:1-2",
			func(s Step) bool { return s.Target.Kind == Pair && s.Target.Node == 1 && s.Target.Peer == 2 }},
		{"at=20s bandwidth 1mbit node:2", "at=20s bandwidth 1mbit node:2",
			func(s Step) bool { return s.Action == Bandwidth && s.Amount.RateBits == 1_000_000 }},
		{"at=20s bandwidth 500kbit leader:t/0", "at=20s bandwidth 500kbit leader:t/0",
			func(s Step) bool { return s.Amount.RateBits == 500_000 }},
		{"at=20s delay 100ms node:2", "at=20s delay 100ms node:2",
			func(s Step) bool { return s.Action == Delay && s.Amount.Delay.Milliseconds() == 100 }},
		{"at=50s heal-network", "at=50s heal-network",
			func(s Step) bool { return s.Action == HealNetwork && s.Target.Kind == Cluster }},
		{"at=5s kill follower:orders/1", "at=5s kill follower:orders/1", nil},
	}
	for _, tc := range tests {
		steps, err := ParseSchedule(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if len(steps) != 1 || steps[0].String() != tc.want {
			t.Errorf("%q parsed as %v, want %q", tc.in, steps, tc.want)
			continue
		}
		if tc.check != nil && !tc.check(steps[0]) {
			t.Errorf("%q parsed as %+v", tc.in, steps[0])
		}
		// What prints parses back to the same step.
		again, err := ParseSchedule(steps[0].String())
		if err != nil || len(again) != 1 || again[0] != steps[0] {
			t.Errorf("%q printed as %q, which parses as %v, %v", tc.in, steps[0], again, err)
		}
	}
	for _, bad := range []string{
		"at=1s partition",                  // no target
		"at=1s partition topic:orders",     // not a node
		"at=1s partition all",              // not a node
		"at=1s partition-client split:1|2", // split is partition's
		"at=1s partition split:1|1",        // a node on both sides
		"at=1s partition split:1",          // one side
		"at=1s partition split:1|x",
		"at=1s partition one-way:1->1",
		"at=1s partition one-way:1-2",
		"at=1s kill split:1|2", // network targets only on network actions
		"at=1s kill one-way:1->2",
		"at=1s loss node:2", // no amount
		"at=1s loss 0% node:2",
		"at=1s loss 101% node:2",
		"at=1s loss 30 node:2",
		"at=1s loss 30% one-way:1->2",
		"at=1s bandwidth 1 node:2", // below 8 kbit
		"at=1s bandwidth fast node:2",
		"at=1s bandwidth 1mbit pair:1-2",
		"at=1s delay soon node:2",
		"at=1s heal-network node:2",
		"at=1s partition node:2 extra",
		"at=1s follower:t/1 kill",
		"at=1s kill follower:t",
	} {
		_, err := ParseSchedule(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), "at=<duration>") {
			t.Errorf("%q: error %q does not show the form", bad, err)
		}
	}
}

// follower:T/P picks, when it fires, a replica that is not the leader,
// an in-sync one first, the lowest ID among equals.
func TestResolveFollower(t *testing.T) {
	tests := []struct {
		name string
		p    drivers.PartitionState
		want int32
		err  bool
	}{
		{"lowest in-sync follower", drivers.PartitionState{Partition: 1, Leader: 2, Replicas: []int32{3, 2, 1}, ISR: []int32{1, 2, 3}}, 1, false},
		{"in sync before out of sync", drivers.PartitionState{Partition: 1, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}}, 3, false},
		{"out of sync when it is the only one", drivers.PartitionState{Partition: 1, Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}, 1, false},
		{"no follower", drivers.PartitionState{Partition: 1, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}}, -1, true},
		{"no such partition", drivers.PartitionState{Partition: 0, Leader: 2, Replicas: []int32{1, 2}}, -1, true},
	}
	tg, err := ParseTarget("follower:t/1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		got, err := tg.Resolve(drivers.Topology{Partitions: []drivers.PartitionState{tc.p}}, -1)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
	if !tg.needsTopology() {
		t.Error("follower resolves without reading the topology")
	}
}

// Every schedule line docs/faults.md shows for network faults parses:
// the documentation cannot drift from the parser.
func TestDocsNetworkExamplesParse(t *testing.T) {
	md, err := os.ReadFile("../docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(md), "\n") {
		if !strings.HasPrefix(line, "at=") {
			continue
		}
		step, _, _ := strings.Cut(line, "#")
		if _, err := ParseSchedule(step); err != nil {
			t.Errorf("docs/faults.md: %v", err)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d schedule lines found in docs/faults.md", n)
	}
}
