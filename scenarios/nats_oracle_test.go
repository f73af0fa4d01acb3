package scenarios

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/nats"
)

// The restarted server's own account is nats.Account, read from its log by
// the NATS log oracle (drivers/nats/oracle.go).

// checkAgainstNATSLog asserts that the kill's ready and in-sync figures
// agree, within 2 s, with the restarted server's own log: not before it
// started, and not later than 2 s after its last failed health check.
func checkAgainstNATSLog(t *testing.T, n *nats.Cluster, kill killFigures, newPID int) {
	t.Helper()
	a, err := n.Account(kill.Nodes[0], newPID)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	after := func(at time.Time) float64 { return float64(at.Sub(kill.At)) / float64(time.Millisecond) }
	t.Logf("oracle (nats-server log of node %d, PID %d): started %.0f ms, last failed health check %.0f ms after the kill (%v), %d stream catch-ups; ackcheck: ready %.0f ms, in sync %.0f ms (%s)",
		kill.Nodes[0], newPID, after(a.Started), after(a.LastUnhealthy), a.Reasons, len(a.Catchups), kill.ReadyMs, kill.InSyncMs, kill.Evidence)
	if a.Started.IsZero() {
		t.Fatalf("oracle: node %d's log has no start of PID %d", kill.Nodes[0], newPID)
	}
	started, healthy := after(a.Started), after(a.Healthy())
	for name, v := range map[string]float64{"ready": kill.ReadyMs, "in sync": kill.InSyncMs} {
		if v < started || v > healthy+2000 {
			t.Errorf("%s %.0f ms after the kill, but the server started at %.0f ms and last failed a health check at %.0f ms", name, v, started, healthy)
		}
	}
}
