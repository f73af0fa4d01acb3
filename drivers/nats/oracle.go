package nats

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// The log oracle: what a restarted nats-server's own log says about its
// return, never anything ackcheck computed. /healthz (which ackcheck's
// readiness probe calls) fails until the server is current with the meta
// leader and every stream replica it holds is current, and the server
// logs each failure with its reason; so the end of those lines is the
// server's own statement that it is back and in sync. nats-server writes
// "[PID] 2006/01/02 15:04:05.000000 [LVL] message", in local time.

// Account is a restarted server's return as its log tells it.
type Account struct {
	Started       time.Time // "Starting nats-server" of the new PID
	LastUnhealthy time.Time // its last "Healthcheck failed"
	// Reasons counts the failed health checks by their reason.
	Reasons map[string]int
	// Catchups: per stream, "Catchup for stream '...' complete".
	Catchups map[string]time.Time
}

// Healthy is when the log puts the server back: its last failed health
// check, or its start if it never failed one.
func (a Account) Healthy() time.Time {
	if a.LastUnhealthy.After(a.Started) {
		return a.LastUnhealthy
	}
	return a.Started
}

var (
	logLine  = regexp.MustCompile(`^\[(\d+)\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{6}) \[\w+\] (.*)$`)
	catchup  = regexp.MustCompile(`Catchup for stream '(.+)' complete`)
	healthRe = regexp.MustCompile(`Healthcheck failed: "(.*)"`)
)

// ReadAccount reads the account of the server process pid from its log;
// lines of other processes (earlier runs of the node) are left out.
func ReadAccount(log io.Reader, pid int) (Account, error) {
	a := Account{Reasons: map[string]int{}, Catchups: map[string]time.Time{}}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	prefix := fmt.Sprint(pid)
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
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
		case healthRe.MatchString(msg):
			a.LastUnhealthy = at
			a.Reasons[healthRe.FindStringSubmatch(msg)[1]]++
		case catchup.MatchString(msg):
			a.Catchups[catchup.FindStringSubmatch(msg)[1]] = at
		}
	}
	if err := sc.Err(); err != nil {
		return a, fmt.Errorf("read the nats-server log: %w", err)
	}
	return a, nil
}

// Account is ReadAccount on node's log in the local cluster.
func (n *Cluster) Account(node int32, pid int) (Account, error) {
	f, err := os.Open(n.LogFile(node))
	if err != nil {
		return Account{}, fmt.Errorf("the log oracle reads node %d's log: %w", node, err)
	}
	defer f.Close()
	return ReadAccount(f, pid)
}
