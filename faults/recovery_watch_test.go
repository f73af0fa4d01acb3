package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// An applied fault that takes a node away gets its recovery watched: once
// the node is back and answers, and then is in sync, its record carries
// when (ReadyAt, InSyncAt). A fault that failed gets none.
func TestAppliedPauseGetsItsRecoveryStamped(t *testing.T) {
	d, topic := kfakeDriver(t)
	nodes := newFakeNodes(1, 2, 3)
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes.die(1) // a pause of node 1 fails: it does not run
	if rec := in.Apply(ctx, Step{Action: Pause, Target: Target{Kind: Node, Node: 1}}); rec.Result != Failed {
		t.Fatalf("pause of a node that does not run: %+v", rec)
	}
	if err := nodes.Start(ctx, 1); err != nil { // back, and answering
		t.Fatal(err)
	}
	if rec := in.Apply(ctx, Step{Action: Pause, Target: Target{Kind: Node, Node: 2}}); rec.Result != Applied {
		t.Fatalf("pause: %+v", rec)
	}
	if rec := in.Apply(ctx, Step{Action: Resume, Target: Target{Kind: Node, Node: 2}}); rec.Result != Applied {
		t.Fatalf("resume: %+v", rec)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if recs := in.Records(); !recs[1].ReadyAt.IsZero() && !recs[1].InSyncAt.IsZero() {
			time.Sleep(200 * time.Millisecond) // 10 polls more
			if recs := in.Records(); !recs[0].ReadyAt.IsZero() {
				t.Fatalf("the failed pause got a recovery: %+v", recs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pause's recovery was never stamped: %+v", in.Records())
		}
	}
}

// probeDriver answers probes after 10 ms, except for the nodes in down.
type probeDriver struct {
	drivers.Driver
	down map[int32]bool
}

func (d probeDriver) ProbeNode(ctx context.Context, id int32) error {
	select {
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if d.down[id] {
		return fmt.Errorf("node %d does not answer", id)
	}
	return nil
}

// allAnswer: every node is in the node list and answers its own probe,
// which gets time to (a broker under load answers in milliseconds).
func TestAllAnswer(t *testing.T) {
	list := topo([]int32{1, 2, 3})
	for _, tc := range []struct {
		name  string
		topo  drivers.Topology
		down  map[int32]bool
		nodes []int32
		want  bool
	}{
		{"listed and answering", list, nil, []int32{2, 3}, true},
		{"not in the node list", topo([]int32{1, 3}), nil, []int32{2}, false},
		{"listed, its probe fails", list, map[int32]bool{3: true}, []int32{2, 3}, false},
	} {
		w := &world{Env: Env{Driver: probeDriver{down: tc.down}}}
		if got := w.allAnswer(context.Background(), tc.topo, tc.nodes); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
