package scenarios

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/nats"
)

// natsAccount is what a restarted nats-server's own log says about its
// return: when the new process started, when it last failed a health check
// and why, and which of its streams caught up from a leader. /healthz
// (which ackcheck's readiness probe calls) fails until the server is
// current with the meta leader and every stream replica it holds is
// current, and the server logs each failure with its reason; so the end of
// those lines is the server's own statement that it is back and in sync.
type natsAccount struct {
	Started       time.Time // "Starting nats-server" of the new PID
	LastUnhealthy time.Time // its last "Healthcheck failed"
	Reasons       map[string]int
	Catchups      map[string]time.Time // "Catchup for stream '...' complete"
}

// Healthy is when the logs put the server back: its last failed health
// check, or its start if it never failed one.
func (a natsAccount) Healthy() time.Time {
	if a.LastUnhealthy.After(a.Started) {
		return a.LastUnhealthy
	}
	return a.Started
}

var (
	natsLogLine  = regexp.MustCompile(`^\[(\d+)\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{6}) \[\w+\] (.*)$`)
	natsCatchup  = regexp.MustCompile(`Catchup for stream '(.+)' complete`)
	natsHealthRe = regexp.MustCompile(`Healthcheck failed: "(.*)"`)
)

func readNATSAccount(t *testing.T, n *nats.Cluster, node int32, pid int) natsAccount {
	t.Helper()
	a := natsAccount{Reasons: map[string]int{}, Catchups: map[string]time.Time{}}
	f, err := os.Open(n.LogFile(node))
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	prefix := fmt.Sprint(pid)
	for sc.Scan() {
		m := natsLogLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != prefix {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000000", m[2], time.Local)
		if err != nil {
			continue
		}
		switch msg := m[3]; {
		case strings.HasPrefix(msg, "Starting nats-server") && a.Started.IsZero():
			a.Started = at
		case natsHealthRe.MatchString(msg):
			a.LastUnhealthy = at
			reason := natsHealthRe.FindStringSubmatch(msg)[1]
			a.Reasons[reason]++
		case natsCatchup.MatchString(msg):
			a.Catchups[natsCatchup.FindStringSubmatch(msg)[1]] = at
		}
	}
	return a
}

// checkAgainstNATSLog asserts that the kill's ready and in-sync figures
// agree, within 2 s, with the restarted server's own log: not before it
// started, and not later than 2 s after its last failed health check.
func checkAgainstNATSLog(t *testing.T, n *nats.Cluster, kill killFigures, newPID int) {
	t.Helper()
	a := readNATSAccount(t, n, kill.Nodes[0], newPID)
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
