package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ackcheck/ackcheck/faults"
)

// A scenario file's fault list carries the network faults' syntax through
// YAML unchanged ('|', '->', '%' and ':' inside plain values), and the
// schedule it gives parses to the typed steps.
func TestScenarioFileNetworkFaults(t *testing.T) {
	file := `fault:
  - at=10s partition most-leaders:orders
  - at=12s partition split:1|2,3
  - at=14s partition one-way:1->2
  - at=16s loss 30% pair:1-2
  - at=18s bandwidth 1mbit node:2
  - at=20s partition-client follower:orders/0
  - at=40s heal-network
`
	path := filepath.Join(t.TempDir(), "net.yaml")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newRunCmd()
	if err := cmd.ParseFlags([]string{"-f", path}); err != nil {
		t.Fatal(err)
	}
	if err := applyScenarioFile(cmd, path); err != nil {
		t.Fatal(err)
	}
	steps, err := faults.ParseSchedule(cmd.Flags().Lookup("fault").Value.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		a faults.Action
		k faults.TargetKind
	}{
		{faults.Partition, faults.MostLeaders}, {faults.Partition, faults.Split}, {faults.Partition, faults.OneWayPath},
		{faults.Loss, faults.Pair}, {faults.Bandwidth, faults.Node}, {faults.PartitionClient, faults.Follower}, {faults.HealNetwork, faults.Cluster},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps: %v", len(steps), steps)
	}
	for i, w := range want {
		if steps[i].Action != w.a || steps[i].Target.Kind != w.k {
			t.Errorf("step %d: %s, want %s on a %s target", i, steps[i], w.a, w.k)
		}
	}
	if steps[3].Amount.Percent != 30 || steps[4].Amount.RateBits != 1_000_000 {
		t.Errorf("amounts: %v, %v", steps[3].Amount, steps[4].Amount)
	}
}
