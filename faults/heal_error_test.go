package faults

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Heal that undid a fault but could not mark it done in heal.jsonl says
// so: the next heal would undo it again, and the user must know why.
func TestHealReportsAJournalItCannotWrite(t *testing.T) {
	d, topic := kfakeDriver(t)
	nodes := newFakeNodes(1, 2, 3)
	j, err := OpenJournal(filepath.Join(t.TempDir(), "heal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d, Journal: j, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if rec := in.Apply(ctx, Step{Action: Pause, Target: Target{Kind: Node, Node: 1}}); rec.Result != Applied {
		t.Fatalf("pause: %+v", rec)
	}
	j.f.Close() // the journal's disk fails: no "done" line can be written
	healed, err := in.Heal(ctx)
	if len(healed) != 1 || nodes.paused[1] {
		t.Fatalf("healed %v, node 1 paused %v: want it resumed", healed, nodes.paused[1])
	}
	if err == nil {
		t.Fatal("Heal could not mark its undo done in the journal and said nothing")
	}
}
