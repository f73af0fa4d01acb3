package queen

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/faults"
)

var _ faults.ActionExpecter = Profile{}

// Queen's profile quotes its documentation for the actions it knows, on
// the typed action, and nothing for the others.
func TestExpectAction(t *testing.T) {
	for _, tc := range []struct {
		a    faults.Action
		want string
	}{
		{faults.Kill, "zero message loss"},
		{faults.Stop, "zero message loss"},
		{faults.PowerLoss, "synchronous_commit=on"},
		{faults.Pause, ""},
	} {
		got := Profile{}.ExpectAction(tc.a, nil)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExpectAction(%s) = %q, want one containing %q", tc.a, got, tc.want)
		}
	}
}
