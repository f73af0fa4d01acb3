package nats

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
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
	return drivers.ReadLog(drivers.LocalLogs(n.LogFile), node, func(log io.Reader) (Account, error) { return ReadAccount(log, pid) })
}

// Window is what a node's log says of its return after a fault, from the
// lines between the fault and the next one.
type Window struct {
	// PID is the process the lines below belong to: the one that logged
	// the last "Starting nats-server" in the window (a restart), or 0 when
	// none started in it (a paused server resumed) and every line counts.
	PID     int
	Started time.Time
	// LastUnhealthy is the last failed /healthz, of any reason; Reason is
	// its reason.
	LastUnhealthy time.Time
	Reason        string
	// TopicBehind is the last failed /healthz saying a stream of the topic
	// was not current on this server; TopicCaughtUp the last "Catchup for
	// stream ... complete" of such a stream.
	TopicBehind   time.Time
	TopicCaughtUp time.Time
}

// ReadWindow reads node's log lines at or after since and not after until
// (zero: no bound). A restart inside the window starts the account over:
// only the last process's lines count. Streams of topic are topic's
// partitions (StreamName), shown in the log as "'ACCOUNT > NAME'".
func ReadWindow(log io.Reader, topic string, since, until time.Time) (Window, error) {
	var w Window
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ofTopic := func(stream string) bool {
		if i := strings.LastIndex(stream, " > "); i >= 0 {
			stream = stream[i+3:]
		}
		rest, ok := strings.CutPrefix(stream, topic+"-")
		if !ok || rest == "" {
			return false
		}
		return strings.Trim(rest, "0123456789") == ""
	}
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000000", m[2], time.Local)
		if err != nil || at.Before(since.Truncate(time.Microsecond)) || (!until.IsZero() && at.After(until)) {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		msg := m[3]
		if strings.HasPrefix(msg, "Starting nats-server") {
			w = Window{PID: pid, Started: at}
			continue
		}
		if w.PID != 0 && pid != w.PID {
			continue // the killed process's last lines, written before the restart
		}
		if h := healthRe.FindStringSubmatch(msg); h != nil {
			w.LastUnhealthy, w.Reason = at, h[1]
			if s := streamRe.FindStringSubmatch(h[1]); s != nil && ofTopic(s[1]) {
				w.TopicBehind = at
			}
		} else if c := catchup.FindStringSubmatch(msg); c != nil && ofTopic(c[1]) {
			w.TopicCaughtUp = at
		}
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("read the nats-server log: %w", err)
	}
	return w, nil
}

// streamRe is the stream a failed health check names.
var streamRe = regexp.MustCompile(`stream '([^']+)' is not current`)

// RecoveryAccount implements drivers.LogOracle from each node's own log.
// nats-server logs no line when it becomes healthy: it logs its start,
// each failed /healthz (the probe ackcheck's ready figure waits on, which
// also fails while any stream replica the server holds is behind) and
// some stream catch-ups. So the log bounds both moments from below and
// never pins them: ready is no earlier than the last of the start and the
// failed health checks; every replica of topic in sync is no earlier than
// the start, the last failed health check naming a stream of topic, and
// the last catch-up of one. With several nodes the latest bound holds. A
// node whose log has no line in the window gives no account.
func (n *Cluster) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return recoveryAccount(fmt.Sprintf("nats-server's logs (nodes %v)", nodes), topic, nodes, since, until, drivers.LocalLogs(n.LogFile))
}

// RecoveryAccountFrom implements drivers.LogReader: RecoveryAccount on
// logs fetched from the nodes of a cluster file.
func (Profile) RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return recoveryAccount(fmt.Sprintf("nats-server's logs (nodes %v, %s)", nodes, source), topic, nodes, since, until, drivers.FetchedLogs(logs))
}

// recoveryAccount is RecoveryAccount on the logs open opens, one per node.
func recoveryAccount(source, topic string, nodes []int32, since, until time.Time, open drivers.LogOpener) (drivers.LogAccount, error) {
	acc := drivers.LogAccount{Source: source}
	var ready, inSync drivers.LogEvent
	later := func(e *drivers.LogEvent, at time.Time, what string) {
		if at.After(e.At) {
			*e = drivers.LogEvent{At: at, What: what, Bound: drivers.NotBefore}
		}
	}
	for _, node := range nodes {
		w, err := drivers.ReadLog(open, node, func(log io.Reader) (Window, error) { return ReadWindow(log, topic, since, until) })
		if err != nil {
			return acc, err
		}
		if w.Started.IsZero() && w.LastUnhealthy.IsZero() && w.TopicCaughtUp.IsZero() {
			return acc, nil // the log says nothing of this node's return
		}
		proc := fmt.Sprintf("node %d", node)
		if w.PID != 0 {
			proc = fmt.Sprintf("node %d (PID %d)", node, w.PID)
		}
		later(&ready, w.Started, proc+" started")
		later(&inSync, w.Started, proc+" started")
		later(&ready, w.LastUnhealthy, fmt.Sprintf("%s last failed /healthz (%q)", proc, w.Reason))
		later(&inSync, w.TopicBehind, fmt.Sprintf("%s last failed /healthz for a stream of %s not current", proc, topic))
		later(&inSync, w.TopicCaughtUp, fmt.Sprintf("%s last logged catch-up of a stream of %s", proc, topic))
	}
	if !ready.At.IsZero() {
		acc.Ready = &ready
	}
	if !inSync.At.IsZero() {
		acc.InSync = &inSync
	}
	return acc, nil
}

var (
	_ drivers.LogOracle = (*Cluster)(nil)
	_ drivers.LogReader = Profile{}
)
