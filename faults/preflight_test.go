package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// picky is a PowerLosser whose listed nodes cannot lose unsynced writes.
type picky struct {
	*fakeNodes
	cannot map[int32]bool
}

func (p picky) CanLoseUnsynced(id int32) error {
	if p.cannot[id] {
		return fmt.Errorf("node %d is not on lazyfs", id)
	}
	return nil
}
func (p picky) LoseUnsynced(context.Context, int32) (string, error) { return "", nil }

// A schedule that cannot run where it is scheduled is refused before
// anything is applied; one that can passes quietly.
func TestPreflight(t *testing.T) {
	schedule := func(s string) []Step {
		steps, err := ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	down := newFakeNodes(1, 2, 3)
	down.die(2)
	tests := []struct {
		name  string
		nodes Nodes
		steps []Step
		want  string // "" passes
	}{
		{"all run, a kill", newFakeNodes(1, 2, 3), schedule("at=1s kill node:1"), ""},
		{"a node does not run", down, schedule("at=1s kill node:1"), "node 2: its broker does not run"},
		{"power loss without lazyfs", newFakeNodes(1, 2, 3), schedule("at=1s power-loss all"), "cannot lose unsynced writes"},
		{"power loss on lazyfs", picky{newFakeNodes(1, 2, 3), nil}, schedule("at=1s power-loss all"), ""},
		{"power loss of a node that is not on lazyfs", picky{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, schedule("at=1s power-loss node:2"), "node 2 is not on lazyfs"},
		{"power loss of another node", picky{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, schedule("at=1s power-loss node:1"), ""},
		{"power loss by role asks every node", picky{newFakeNodes(1, 2, 3), map[int32]bool{3: true}}, schedule("at=1s power-loss controller"), "node 3 is not on lazyfs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Preflight(context.Background(), tc.nodes, tc.steps)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
}
