package kafka

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
)

var _ faults.ActionExpecter = Profile{}

// Kafka's profile says what an action does to a Kafka broker, matched on
// the typed action, and leaves the generic text where it holds (a kill
// under acks=all, an action it has nothing to add to).
func TestExpectActionByAcks(t *testing.T) {
	acks1 := &Driver{cfg: Config{Acks: "1"}.WithDefaults()}
	for _, tc := range []struct {
		a    faults.Action
		d    drivers.Driver
		want string // a part of the text; "" means none
	}{
		{faults.Kill, nil, ""},
		{faults.Kill, acks1, "with acks=1"},
		{faults.Pause, nil, "broker.session.timeout.ms"},
		{faults.Restart, acks1, "return to the ISR"},
		{faults.FsyncOn, nil, ""},
	} {
		got := Profile{}.ExpectAction(tc.a, tc.d)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExpectAction(%s, %T) = %q, want one containing %q", tc.a, tc.d, got, tc.want)
		}
	}
	// The scenario expectation no longer answers for actions.
	if _, e := (Profile{}).Expect(drivers.Scenario(faults.Pause), nil); e != "" {
		t.Errorf("Expect answered an action as a scenario: %q", e)
	}
}
