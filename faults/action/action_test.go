package action

import "testing"

// What each action is, for the code that reads records: network or not,
// written with an amount or not, measured for recovery or not, and every
// one with an expectation the reports quote.
func TestActionKinds(t *testing.T) {
	tests := []struct {
		a                         Action
		network, amount, takesAwy bool
	}{
		{Kill, false, false, true},
		{Pause, false, false, true},
		{FsyncOn, false, false, false},
		{Partition, true, false, true},
		{PartitionClient, true, false, true},
		{Loss, true, true, false},
		{Bandwidth, true, true, false},
		{Delay, true, true, false},
		{HealNetwork, true, false, false},
	}
	for _, tc := range tests {
		if tc.a.IsNetwork() != tc.network || tc.a.TakesAmount() != tc.amount || tc.a.TakesNodeAway() != tc.takesAwy {
			t.Errorf("%s: network %v, amount %v, takes a node away %v; want %v, %v, %v",
				tc.a, tc.a.IsNetwork(), tc.a.TakesAmount(), tc.a.TakesNodeAway(), tc.network, tc.amount, tc.takesAwy)
		}
		if tc.a.Expectation() == "" {
			t.Errorf("%s has no expectation", tc.a)
		}
		if tc.a.ReplacesProcess() && tc.network {
			t.Errorf("%s replaces the node's process", tc.a)
		}
		if _, _, ok := tc.a.Switch(); ok {
			t.Errorf("%s reads as a broker mode switch", tc.a)
		}
	}
}
