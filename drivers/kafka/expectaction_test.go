package kafka

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.FaultExpecter = Profile{}

// Kafka's profile says what a fault does to a Kafka broker, matched on
// the typed node fault, and leaves the generic text where it holds (a kill
// under acks=all, a fault it has nothing to add to).
func TestExpectFaultByAcks(t *testing.T) {
	acks1 := &Driver{cfg: Config{Acks: "1"}.WithDefaults()}
	for _, tc := range []struct {
		f    drivers.NodeFault
		d    drivers.Driver
		want string // a part of the text; "" means none
	}{
		{drivers.NodeKilled, nil, ""},
		{drivers.NodeKilled, acks1, "with acks=1"},
		{drivers.NodePaused, nil, "broker.session.timeout.ms"},
		{drivers.NodeRestarted, acks1, "return to the ISR"},
		{drivers.NodePowerLost, nil, ""},
	} {
		got := Profile{}.ExpectFault(tc.f, tc.d)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExpectFault(%s, %T) = %q, want one containing %q", tc.f, tc.d, got, tc.want)
		}
	}
	// The scenario expectation does not answer for faults.
	if _, e := (Profile{}).Expect(drivers.Scenario(drivers.NodePaused), nil); e != "" {
		t.Errorf("Expect answered a fault as a scenario: %q", e)
	}
}
