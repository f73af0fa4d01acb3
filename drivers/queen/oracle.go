package queen

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
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

// LastLine finds the time of the last line of log that contains what and
// is not after before; zero when there is none.
func LastLine(log io.Reader, what string, before time.Time) (time.Time, error) {
	var last time.Time
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, what) {
			continue
		}
		m := logTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", m[1], time.UTC)
		if err == nil && !at.After(before) {
			last = at
		}
	}
	if err := sc.Err(); err != nil {
		return last, fmt.Errorf("read the log: %w", err)
	}
	return last, nil
}

// LastLine is LastLine on node's own log in the local cluster.
func (q *Cluster) LastLine(node int32, what string, before time.Time) (time.Time, error) {
	f, err := os.Open(q.LogFile(node))
	if err != nil {
		return time.Time{}, fmt.Errorf("the log oracle reads node %d's log: %w", node, err)
	}
	defer f.Close()
	return LastLine(f, what, before)
}
