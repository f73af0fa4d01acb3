package nats_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
)

// The restarted server's own account is nats.Account, read from its log by
// the NATS log oracle (drivers/nats/oracle.go).

// checkAgainstNATSLog asserts that the kill's ready and in-sync figures
// agree, within 2 s, with the restarted server's own log: not before it
// started, and not later than 2 s after its last failed health check.
func checkAgainstNATSLog(t *testing.T, n *nats.Cluster, kill scenariotest.KillFigures, newPID int) {
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

// checkNATSProductOracle asserts that the run itself read the restarted
// server's log (result.json's oracle, Record.Oracle) as lower bounds, the
// same lines nats.Account reads here, that the summary prints them beside
// the figures, and that ackcheck's figures do not come before them.
func checkNATSProductOracle(t *testing.T, n *nats.Cluster, res *verifier.Result, newPID int) {
	t.Helper()
	f := res.Faults[0]
	if f.Oracle == nil || f.Oracle.Ready == nil || f.Oracle.InSync == nil || f.OracleReadyMs == nil || f.OracleInSyncMs == nil {
		t.Fatalf("the kill's result has no oracle from nats-server's log: %+v", f.Oracle)
	}
	if f.Oracle.Ready.Bound != drivers.NotBefore || f.Oracle.InSync.Bound != drivers.NotBefore {
		t.Errorf("nats-server logs no line when it is healthy, yet the oracle claims an instant: %+v %+v", f.Oracle.Ready, f.Oracle.InSync)
	}
	a, err := n.Account(f.Node, newPID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Oracle.Ready.At.Before(a.Started) || f.Oracle.Ready.At.After(a.Healthy()) || f.Oracle.InSync.At.Before(a.Started) {
		t.Errorf("result.json's oracle: ready no earlier than %s, in sync no earlier than %s; the log read here: PID %d started %s, last failed /healthz %s",
			f.Oracle.Ready.At, f.Oracle.InSync.At, newPID, a.Started, a.Healthy())
	}
	var b strings.Builder
	res.WriteSummary(&b)
	if !strings.Contains(b.String(), "(nats-server's logs (nodes [") || !strings.Contains(b.String(), ": no earlier than node ") {
		t.Errorf("the summary does not print the log's bounds:\n%s", b.String())
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "nats-server's logs") {
			t.Errorf("ackcheck's figure came before the server's own log allows: %s", w)
		}
	}
	t.Logf("oracle in the product: ready %.0f ms (log: no earlier than %.0f ms, %s), in sync %.0f ms (log: no earlier than %.0f ms, %s)",
		f.ReadyMs, *f.OracleReadyMs, f.Oracle.Ready.What, f.InSyncMs, *f.OracleInSyncMs, f.Oracle.InSync.What)
}
