package drivers

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// LineTime reads the time a broker's log line was written; false when the
// line carries none (a continuation, a stack trace).
type LineTime func(line string) (time.Time, bool)

// TimeAt is the LineTime of logs whose lines carry their time where re's
// first group matches, written as layout in loc.
func TimeAt(re *regexp.Regexp, layout string, loc *time.Location) LineTime {
	return func(line string) (time.Time, bool) {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return time.Time{}, false
		}
		at, err := time.ParseInLocation(layout, m[1], loc)
		return at, err == nil
	}
}

// scanLines calls each with the time of every line of log that contains
// what and has a time, and the line, in order, until each returns false.
// A line may be long: a Pulsar broker logs every setting it has on one
// line. The error is the reader's, unwrapped.
func scanLines(log io.Reader, what string, at LineTime, each func(time.Time, string) bool) error {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, what) {
			continue
		}
		if t, ok := at(line); ok && !each(t, line) {
			return nil
		}
	}
	return sc.Err()
}

// inWindow reports whether t is at or after since (to the millisecond:
// logs keep no finer) and not after until (zero: no bound).
func inWindow(t, since, until time.Time) bool {
	return !t.Before(since.Truncate(time.Millisecond)) && (until.IsZero() || !t.After(until))
}

// LogWindow calls each with every line of log that has a time inside the
// window of since and until (as FirstLogLine bounds it), with that time,
// in order. The error is the reader's, unwrapped: the caller names the log.
func LogWindow(log io.Reader, at LineTime, since, until time.Time, each func(t time.Time, line string)) error {
	return scanLines(log, "", at, func(t time.Time, line string) bool {
		if inWindow(t, since, until) {
			each(t, line)
		}
		return true
	})
}

// readTheLog names the error of a log read.
func readTheLog(err error) error {
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	return nil
}

// FirstLogLine is the time of the first line of log that contains what,
// at or after since (to the millisecond: logs keep no finer) and not after
// until (zero: no bound); zero when there is none.
func FirstLogLine(log io.Reader, what string, at LineTime, since, until time.Time) (time.Time, error) {
	var first time.Time
	err := scanLines(log, what, at, func(t time.Time, _ string) bool {
		if !inWindow(t, since, until) {
			return true
		}
		first = t
		return false
	})
	return first, readTheLog(err)
}

// LastLogLine is the time of the last line of log that contains what and
// is not after before; zero when there is none.
func LastLogLine(log io.Reader, what string, at LineTime, before time.Time) (time.Time, error) {
	var last time.Time
	err := scanLines(log, what, at, func(t time.Time, _ string) bool {
		if !t.After(before) {
			last = t
		}
		return true
	})
	return last, readTheLog(err)
}
