package faults

import (
	"context"
	"testing"
	"time"
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
