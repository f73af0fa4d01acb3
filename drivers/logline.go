package drivers

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// LineTime reads the time a broker's log line was written; false when the
// line carries none (a continuation, a stack trace).
type LineTime func(line string) (time.Time, bool)

// scanLines calls each with the time of every line of log that contains
// what and has a time, in order, until each returns false. A line may be
// long: a Pulsar broker logs every setting it has on one line.
func scanLines(log io.Reader, what string, at LineTime, each func(time.Time) bool) error {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, what) {
			continue
		}
		if t, ok := at(line); ok && !each(t) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	return nil
}

// FirstLogLine is the time of the first line of log that contains what,
// at or after since (to the millisecond: logs keep no finer) and not after
// until (zero: no bound); zero when there is none.
func FirstLogLine(log io.Reader, what string, at LineTime, since, until time.Time) (time.Time, error) {
	var first time.Time
	err := scanLines(log, what, at, func(t time.Time) bool {
		if t.Before(since.Truncate(time.Millisecond)) || (!until.IsZero() && t.After(until)) {
			return true
		}
		first = t
		return false
	})
	return first, err
}

// LastLogLine is the time of the last line of log that contains what and
// is not after before; zero when there is none.
func LastLogLine(log io.Reader, what string, at LineTime, before time.Time) (time.Time, error) {
	var last time.Time
	err := scanLines(log, what, at, func(t time.Time) bool {
		if !t.After(before) {
			last = t
		}
		return true
	})
	return last, err
}
