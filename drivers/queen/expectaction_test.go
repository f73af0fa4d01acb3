package queen

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.FaultExpecter = Profile{}

// Queen's profile quotes its documentation for the faults it knows, on
// the typed node fault, and nothing for the others.
func TestExpectFault(t *testing.T) {
	for _, tc := range []struct {
		f    drivers.NodeFault
		want string
	}{
		{drivers.NodeKilled, "zero message loss"},
		{drivers.NodeStopped, "zero message loss"},
		{drivers.NodePowerLost, "synchronous_commit=on"},
		{drivers.NodePaused, ""},
	} {
		got := Profile{}.ExpectFault(tc.f, nil)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExpectFault(%s) = %q, want one containing %q", tc.f, got, tc.want)
		}
	}
}
