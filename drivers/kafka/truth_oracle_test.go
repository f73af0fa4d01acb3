package kafka_test

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// The brokers' own account of a fault is kafka.Account, read from every
// node's log by kafka's log oracle (drivers/kafka/oracle.go).

// checkAgainstKafkaLogs asserts that a fault's ready and in-sync figures
// agree with the brokers' own account within 2 s, and that neither comes
// before the last of its nodes was unfenced: a broker is in no ISR, and
// answers as a broker to nobody, before the controller unfences it. For a
// fault that took several nodes away (a power loss of all), the account is
// that of the last node back. With acks=all it also checks the slowest
// partition's first ack against the moment the ISR had to shrink (the
// node fenced, or its new incarnation registered): every partition waits
// for that, so the first ack of a message sent after the kill cannot come
// before it.
//
// Ready's upper bound counts from the later of the controller's grant and
// the first leader's ISR line holding the node again: ackcheck reads the
// node list from the brokers, which learn of the grant through the
// metadata log. On a loaded machine that took up to 1.3 s (CI, run1 of
// the acks=1 runs: granted at 35,798 ms, the 16 ISR lines holding the node
// again by 37,089 ms, ready 37,859 ms), so a bound on the grant alone
// measured the brokers' metadata lag as much as ackcheck.
func checkAgainstKafkaLogs(t *testing.T, k *kafka.Cluster, topic string, f scenariotest.KillFigures) {
	t.Helper()
	after := func(at time.Time) float64 {
		if at.IsZero() {
			return -1
		}
		return float64(at.Sub(f.At)) / float64(time.Millisecond)
	}
	var unfenced, inSync, shrink, known float64 = -1, -1, -1, -1
	for _, node := range f.Nodes {
		a, err := k.Account(topic, node, f.At, f.Until)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		t.Logf("oracle (brokers' logs) for node %d: fenced %.0f ms, new incarnation %.0f ms, unfenced %.0f ms, ISR back in %d partitions by %.0f ms; ackcheck: ready %.0f ms, in sync %.0f ms, slowest first ack %.0f ms (%s)",
			node, after(a.Fenced), after(a.Incarnation), after(a.Unfenced), len(a.ISRBack), after(a.InSync()), f.ReadyMs, f.InSyncMs, f.FirstAckMs, f.Evidence)
		if a.Unfenced.IsZero() {
			t.Fatalf("oracle: the logs show no unfencing of broker %d after the fault", node)
		}
		if a.Fenced.IsZero() && a.Incarnation.IsZero() {
			t.Fatalf("oracle: the logs show neither fencing nor a new incarnation of broker %d after the fault", node)
		}
		if len(a.NotBack) > 0 {
			// Not an error: not every ISR expansion is logged. After an
			// unclean election some partitions' ISRs came back full in
			// every broker's metadata with no line about it (seen here).
			// Those partitions are left unchecked, and said so.
			t.Logf("oracle: partitions %v of %s: the logs' last ISR in the window leaves broker %d out, and no later line says otherwise; not checked", a.NotBack, topic, node)
		}
		unfenced, inSync = max(unfenced, after(a.Unfenced)), max(inSync, after(a.InSync()))
		known = max(known, after(a.Unfenced), after(firstISRBack(a)))
		s := after(a.Incarnation)
		if s < 0 || (!a.Fenced.IsZero() && after(a.Fenced) < s) {
			s = after(a.Fenced)
		}
		shrink = max(shrink, s)
	}
	const tolerance = 2000.0
	if f.ReadyMs < unfenced-200 || f.ReadyMs > known+tolerance {
		t.Errorf("ready %.0f ms after the fault, but the controller unfenced the last of %v at %.0f ms and the leaders acted on it (first ISR line holding it) by %.0f ms",
			f.ReadyMs, f.Nodes, unfenced, known)
	}
	if f.InSyncMs < unfenced-200 || f.InSyncMs < inSync-tolerance || f.InSyncMs > inSync+tolerance {
		t.Errorf("in sync %.0f ms after the fault, but the logs show %v unfenced by %.0f ms and back in every changed ISR by %.0f ms",
			f.InSyncMs, f.Nodes, unfenced, inSync)
	}
	if f.AcksAll && (f.FirstAckMs < shrink-500 || f.FirstAckMs > shrink+5000) {
		t.Errorf("slowest first ack %.0f ms after the kill, but with acks=all every partition waited for the ISR to drop the broker, which the logs put at %.0f ms",
			f.FirstAckMs, shrink)
	}
}

// firstISRBack is the earliest moment a leader's or the controller's ISR
// line held the node again after its unfencing, or zero when none did.
func firstISRBack(a kafka.Account) time.Time {
	var first time.Time
	for _, at := range a.ISRBack {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}
