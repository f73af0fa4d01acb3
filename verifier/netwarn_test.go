package verifier

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/faults"
)

// A network fault that did not take effect is warned of beside the
// verdict; one that did, and a failed fault of another kind, are not.
func TestNetworkWarnings(t *testing.T) {
	tests := []struct {
		name string
		f    faults.Record
		want string
	}{
		{"partition without the cut", faults.Record{Action: faults.Partition, Target: "node:2", Result: faults.Failed, Error: "node 2 -> node 1 still answer"},
			"the partition node:2 at 0.0 s failed: node 2 -> node 1 still answer; the run did not test the network fault it was asked to"},
		{"partition skipped", faults.Record{Action: faults.Partition, Target: "follower:t/0", Result: faults.Skipped, Error: "no replica"}, "skipped: no replica"},
		{"partition applied", faults.Record{Action: faults.Partition, Target: "node:2", Result: faults.Applied}, ""},
		{"kill failed", faults.Record{Action: faults.Kill, Target: "node:2", Result: faults.Failed, Error: "x"}, ""},
	}
	for _, tc := range tests {
		res := &Result{Faults: []FaultReport{{Record: tc.f}}}
		applyVerdict(res, Options{}) // through the verdict, which must call it
		var net []string
		for _, w := range res.Warnings {
			if strings.Contains(w, "network fault") {
				net = append(net, w)
			}
		}
		got := strings.Join(net, "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.name, got, tc.want)
		}
	}
}
