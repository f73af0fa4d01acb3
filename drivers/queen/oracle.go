package queen

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The log oracle: when a node's own log says it was back, never anything
// ackcheck computed. PostgreSQL writes "2026-12-01 05:30:48.633 UTC [...]",
// the Queen server "[2026-12-01 05:30:48.580] [...]", both in UTC.

// Back lines: what each node logs once it serves again.
const (
	// ServerBack is the Queen server's banner, logged once it listens.
	ServerBack = "Queen C++ Message Queue Server"
	// DBBack is PostgreSQL's line once it accepts connections.
	DBBack = "database system is ready to accept connections"
)

var logTime = regexp.MustCompile(`^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})`)

// lineTime reads the time either log writes at the start of its lines.
var lineTime = drivers.TimeAt(logTime, "2006-01-02 15:04:05.000", time.UTC)

// LastLine finds the time of the last line of log that contains what and
// is not after before; zero when there is none.
func LastLine(log io.Reader, what string, before time.Time) (time.Time, error) {
	return drivers.LastLogLine(log, what, lineTime, before)
}

// LastLine is LastLine on node's own log in the local cluster.
func (q *Cluster) LastLine(node int32, what string, before time.Time) (time.Time, error) {
	return drivers.ReadLog(drivers.LocalLogs(q.LogFile), node, func(log io.Reader) (time.Time, error) { return LastLine(log, what, before) })
}

// Listening is the Queen server's line once its acceptor listens on its
// port: from then it serves requests, so its return to service is that
// line itself, not a bound. (Its banner, ServerBack, comes a second or
// more earlier, before the schema is loaded.)
const Listening = "Acceptor listening on "

// FirstLine finds the time of the first line of log that contains what,
// at or after since and not after until (zero: no bound); zero when there
// is none.
func FirstLine(log io.Reader, what string, since, until time.Time) (time.Time, error) {
	return drivers.FirstLogLine(log, what, lineTime, since, until)
}

// noInSync is what the oracle says instead of an in-sync account.
const noInSync = "Queen is one server on one PostgreSQL: no replicas, so its logs have no in-sync event"

// RecoveryAccount implements drivers.LogOracle: each node's first line
// after the fault saying it serves again, Listening for the Queen server
// and DBBack for PostgreSQL. Both record the event itself. With both
// nodes, the later one. Queen has no replicas: the account has no in
// sync and says why (LogAccount.NoInSync).
func (q *Cluster) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	source := "Queen's logs (" + strings.Join(q.logNames(nodes), ", ") + ")"
	return recoveryAccount(source, nodes, since, until, drivers.LocalLogs(q.LogFile))
}

// RecoveryAccountFrom implements drivers.LogReader: RecoveryAccount on
// logs fetched from the nodes of a cluster file (node 1 the Queen
// server's, node 2 PostgreSQL's, as in a local cluster).
func (Profile) RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return recoveryAccount(fmt.Sprintf("Queen's logs (nodes %v, %s)", nodes, source), nodes, since, until, drivers.FetchedLogs(logs))
}

// recoveryAccount is RecoveryAccount on the logs open opens, one per node.
func recoveryAccount(source string, nodes []int32, since, until time.Time, open drivers.LogOpener) (drivers.LogAccount, error) {
	acc := drivers.LogAccount{Source: source, NoInSync: noInSync}
	var ready drivers.LogEvent
	for _, node := range nodes {
		what, name := Listening, "the Queen server listens"
		if node == DBNode {
			what, name = DBBack, "PostgreSQL ready to accept connections"
		}
		at, err := drivers.ReadLog(open, node, func(log io.Reader) (time.Time, error) { return FirstLine(log, what, since, until) })
		if err != nil {
			return acc, err
		}
		if at.IsZero() {
			return acc, nil // the log does not say the node came back
		}
		if at.After(ready.At) {
			ready = drivers.LogEvent{At: at, What: name + " again"}
		}
	}
	if !ready.At.IsZero() {
		acc.Ready = &ready
	}
	return acc, nil
}

// logNames names the nodes' logs: "queen.log", "pg.log".
func (q *Cluster) logNames(nodes []int32) []string {
	var names []string
	for _, n := range nodes {
		names = append(names, filepath.Base(q.LogFile(n)))
	}
	return names
}

var (
	_ drivers.LogOracle = (*Cluster)(nil)
	_ drivers.LogReader = Profile{}
)
