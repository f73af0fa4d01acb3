package matrix

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Kafka brokers' own account of a killed broker's return, read from
// the node logs of a local cluster (ackcheck cluster kafka up: every node
// writes <dir>/node<N>/kafka.log). It is the figure the scorecard shows
// beside ackcheck's own "all replicas in sync": the controller's
// unfencing of the broker, then, per partition of the run's topic, the
// first ISR line after it that holds the broker again (a leader's "ISR
// updated to", or the controller's "partition change ... isr: A -> B").
// Not every ISR expansion is logged, so a partition without such a line
// leaves the account at the unfencing for it. Kafka writes local time to
// the millisecond.

var (
	kafkaLogTime    = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] `)
	kafkaISRLine    = regexp.MustCompile(`\[Partition (\S+)-(\d+) broker=\d+\] ISR updated to ([\d,]+) `)
	kafkaChangeLine = regexp.MustCompile(`partition change for (\S+)-(\d+) with topic ID \S+: isr: \[[\d, ]*\] -> \[([\d, ]*)\]`)
)

// KafkaLogInSync is when, by the brokers' logs in clusterDir, broker node
// (killed at at) was unfenced and back in every ISR of topic that a line
// shows changing: the latest of the first unfencing after at and, per
// partition, the first ISR line after that unfencing that holds node.
// Lines after until (the run's end) are left out: a later run's kill of
// the same broker shrinks and grows this topic's ISRs too, and its lines
// would stand in for an expansion this run's logs did not show. ok is
// false when the logs show no unfencing between at and until (or there
// are no logs).
func KafkaLogInSync(clusterDir, topic string, node int32, at, until time.Time) (back time.Time, ok bool, err error) {
	logs, _ := filepath.Glob(filepath.Join(clusterDir, "node*", "kafka.log"))
	if len(logs) == 0 {
		return time.Time{}, false, nil
	}
	type isrLine struct {
		at   time.Time
		part int
		isr  []int32
	}
	var (
		unfenced time.Time
		isrs     []isrLine
	)
	granted := fmt.Sprintf("The request from broker %d to unfence has been granted", node)
	since := at.Truncate(time.Millisecond)
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("read the broker log %s: %w", path, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			m := kafkaLogTime.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			t, err := time.ParseInLocation("2006-01-02 15:04:05,000", m[1], time.Local)
			if err != nil || t.Before(since) || t.After(until) {
				continue
			}
			if strings.Contains(line, granted) {
				if unfenced.IsZero() || t.Before(unfenced) {
					unfenced = t
				}
				continue
			}
			im := kafkaISRLine.FindStringSubmatch(line)
			if im == nil {
				im = kafkaChangeLine.FindStringSubmatch(line)
			}
			if im != nil && im[1] == topic {
				p, _ := strconv.Atoi(im[2])
				isrs = append(isrs, isrLine{t, p, parseISR(im[3])})
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return time.Time{}, false, fmt.Errorf("read the broker log %s: %w", path, err)
		}
	}
	if unfenced.IsZero() {
		return time.Time{}, false, nil
	}
	first := map[int]time.Time{}
	for _, l := range isrs {
		if l.at.Before(unfenced) || !slices.Contains(l.isr, node) {
			continue
		}
		if cur, seen := first[l.part]; !seen || l.at.Before(cur) {
			first[l.part] = l.at
		}
	}
	back = unfenced
	for _, t := range first {
		if t.After(back) {
			back = t
		}
	}
	return back, true, nil
}

func parseISR(s string) []int32 {
	var isr []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err == nil {
			isr = append(isr, int32(n))
		}
	}
	return isr
}
