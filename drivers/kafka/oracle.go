package kafka

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The log oracle: what the brokers' own logs say happened after a fault,
// read from every node's kafka.log and never from anything ackcheck
// computed. The recovery figures (ready, in sync, first ack) are checked
// against it. Kafka writes its log times in local time, to the
// millisecond, as "[2006-01-02 15:04:05,000] LEVEL message (logger)" (the
// layout of the launcher's log4j2.properties and of Kafka's default).

// Account is one broker's fate after a fault, as the brokers logged it:
// the active controller logs fencing and unfencing, each partition's
// leader its ISR changes.
type Account struct {
	Fenced      time.Time // "Fencing broker N at epoch E because its session has timed out"
	Incarnation time.Time // "Replayed RegisterBrokerRecord establishing a new incarnation of broker N"
	Unfenced    time.Time // "The request from broker N to unfence has been granted"
	// ISRBack: per partition of the topic, the first ISR line after the
	// unfencing whose set holds the broker again: a leader's "ISR updated
	// to", or the controller's "partition change ... isr: A -> B".
	ISRBack map[int32]time.Time
	// NotBack lists the partitions whose last ISR line in the window left
	// the broker out. The logs do not show every ISR expansion (after an
	// unclean election some partitions' ISRs came back full in every
	// broker's metadata with no line about it), so this is a gap in the
	// account, not proof.
	NotBack []int32
}

// InSync is when the logs show the broker back in every ISR that changed:
// the unfencing, or the last partition's ISR line after it.
func (a Account) InSync() time.Time {
	t := a.Unfenced
	for _, at := range a.ISRBack {
		if at.After(t) {
			t = at
		}
	}
	return t
}

var (
	logTime = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] `)
	isrLine = regexp.MustCompile(`\[Partition (\S+)-(\d+) broker=\d+\] ISR updated to ([\d,]+) `)
	// The controller's record of a partition change (an unclean election
	// after every replica went down sets the ISR to the new leader alone),
	// logged by every controller as it replays it.
	changeLine = regexp.MustCompile(`partition change for (\S+)-(\d+) with topic ID \S+: isr: \[[\d, ]*\] -> \[([\d, ]*)\]`)
	// "UNCLEAN partition change for T-P with topic ID X: ..., isr: [3] -> [1], leader: -1 -> 1, ...,
	// elr: ..., lastKnownElr: ...": the fields a change logs are the ones
	// that changed, so each is optional.
	// Any partition change, clean (DEBUG) or UNCLEAN (INFO): m[1] is
	// "UNCLEAN " or "", then topic, partition and the changed fields.
	anyChangeLine = regexp.MustCompile(`(UNCLEAN )?partition change for (\S+)-(\d+) with topic ID \S+: (.*)`)
	uncleanLine   = regexp.MustCompile(`UNCLEAN partition change for (\S+)-(\d+) with topic ID \S+: (.*)`)
	fieldChange   = regexp.MustCompile(`(\w+): (\[[\d, ]*\]|-?\d+) -> (\[[\d, ]*\]|-?\d+)`)
	// A field that did not change, "lastKnownElr: [3]": followed by a
	// comma, or, last in the message, by the " (logger)" that the log
	// layout appends (the test before it moved here matched only a comma
	// or the end of the line, and so missed it there).
	fieldOld = regexp.MustCompile(`(\w+): (\[[\d, ]*\])(?:,|\s|$)`)
	// The old leader, back, truncating its log to the new leader's end.
	truncLine = regexp.MustCompile(`Truncating partition (\S+)-(\d+) with TruncationState\(offset=(\d+)`)
)

// parseISR reads "1,2,3" or "1, 2, 3".
func parseISR(s string) []int32 {
	var isr []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, _ := strconv.Atoi(f)
		isr = append(isr, int32(n))
	}
	return isr
}

// NodeLog is one node's log.
type NodeLog struct {
	Node int32
	Log  io.Reader
}

// LogLines calls fn with every timed line of every log at or after since
// and not after until (zero: no bound), with its time.
func LogLines(logs []NodeLog, since, until time.Time, fn func(node int32, at time.Time, line string)) error {
	for _, l := range logs {
		if err := drivers.LogWindow(l.Log, lineTime, since, until, func(at time.Time, line string) { fn(l.Node, at, line) }); err != nil {
			return fmt.Errorf("read node %d's log: %w", l.Node, err)
		}
	}
	return nil
}

// lineTime is a Kafka log line's time, written in the machine's time
// zone to the millisecond.
var lineTime = drivers.TimeAt(logTime, "2006-01-02 15:04:05,000", time.Local)

// ReadAccount reads broker node's fate from every node's log, between
// since and until (zero: no bound): lines after until belong to a later
// fault (a later power loss of every broker changes the topic's ISRs too).
func ReadAccount(logs []NodeLog, topic string, node int32, since, until time.Time) (Account, error) {
	a := Account{ISRBack: map[int32]time.Time{}}
	type isrAt struct {
		at   time.Time
		part int32
		isr  []int32
	}
	var isrs []isrAt
	first := func(dst *time.Time, at time.Time) {
		if dst.IsZero() || at.Before(*dst) {
			*dst = at
		}
	}
	fenced := fmt.Sprintf("Fencing broker %d at epoch", node)
	incarnation := fmt.Sprintf("establishing a new incarnation of broker %d:", node)
	unfenced := fmt.Sprintf("The request from broker %d to unfence has been granted", node)
	err := LogLines(logs, since, until, func(_ int32, at time.Time, line string) {
		switch {
		case strings.Contains(line, fenced):
			first(&a.Fenced, at)
		case strings.Contains(line, incarnation):
			first(&a.Incarnation, at)
		case strings.Contains(line, unfenced):
			first(&a.Unfenced, at)
		default:
			m := isrLine.FindStringSubmatch(line)
			if m == nil {
				m = changeLine.FindStringSubmatch(line)
			}
			if m != nil && m[1] == topic {
				p, _ := strconv.Atoi(m[2])
				isrs = append(isrs, isrAt{at, int32(p), parseISR(m[3])})
			}
		}
	})
	if err != nil {
		return a, err
	}
	sort.SliceStable(isrs, func(i, j int) bool { return isrs[i].at.Before(isrs[j].at) })
	last := map[int32][]int32{}
	for _, l := range isrs {
		last[l.part] = l.isr
		if !a.Unfenced.IsZero() && !l.at.Before(a.Unfenced) && slices.Contains(l.isr, node) {
			if cur, ok := a.ISRBack[l.part]; !ok || l.at.Before(cur) {
				a.ISRBack[l.part] = l.at
			}
		}
	}
	for p, isr := range last {
		if !slices.Contains(isr, node) {
			a.NotBack = append(a.NotBack, p)
		}
	}
	sort.Slice(a.NotBack, func(i, j int) bool { return a.NotBack[i] < a.NotBack[j] })
	return a, nil
}

// UncleanElection is one partition's unclean election as the controller
// logged it: the new leader was not in the ISR (nor the eligible leader
// replicas) before the change.
type UncleanElection struct {
	At        time.Time
	OldISR    []int32
	NewLeader int32
}

// Unclean is what the logs say of unclean elections of a topic.
type Unclean struct {
	// Elections: each partition's first unclean election, by time.
	Elections map[int32]UncleanElection
	// TruncatedTo: per partition with an election, the lowest offset any
	// replica truncated its log to afterwards.
	TruncatedTo map[int32]int64
	// Lines are the log lines read, "node N at HH:MM:SS.mmm: line", for
	// the evidence.
	Lines []string
}

// ReadUnclean reads, from every node's log after since, each partition of
// topic that went through an unclean election and the lowest offset any
// replica of it truncated to afterwards. A line that says UNCLEAN but
// whose new leader was in the old ISR or the eligible leader replicas
// (Kafka 4.3 logs "isr: [] -> [3] ... lastKnownElr: [3]" when the last
// leader comes back with unclean election off) is no unclean election and
// is left out.
func ReadUnclean(logs []NodeLog, topic string, since time.Time) (Unclean, error) {
	u := Unclean{Elections: map[int32]UncleanElection{}, TruncatedTo: map[int32]int64{}}
	type trunc struct {
		at     time.Time
		offset int64
	}
	truncs := map[int32][]trunc{}
	evidence := func(node int32, at time.Time, what string) {
		u.Lines = append(u.Lines, fmt.Sprintf("node %d at %s: %s", node, at.Format("15:04:05.000"), strings.TrimSpace(what)))
	}
	err := LogLines(logs, since, time.Time{}, func(node int32, at time.Time, line string) {
		if m := uncleanLine.FindStringSubmatch(line); m != nil && m[1] == topic {
			p, _ := strconv.Atoi(m[2])
			var oldISR, elr []int32
			newLeader := int32(-2)
			for _, f := range fieldChange.FindAllStringSubmatch(m[3], -1) {
				switch f[1] {
				case "isr":
					oldISR = parseISR(strings.Trim(f[2], "[]"))
				case "leader":
					n, _ := strconv.Atoi(f[3])
					newLeader = int32(n)
				case "elr", "lastKnownElr":
					elr = append(elr, parseISR(strings.Trim(f[2], "[]"))...)
				}
			}
			for _, f := range fieldOld.FindAllStringSubmatch(m[3], -1) {
				if f[1] == "elr" || f[1] == "lastKnownElr" {
					elr = append(elr, parseISR(strings.Trim(f[2], "[]"))...)
				}
			}
			evidence(node, at, m[0])
			if newLeader < 0 || slices.Contains(oldISR, newLeader) || slices.Contains(elr, newLeader) {
				return // the new leader had all acked data: a clean election
			}
			if e, ok := u.Elections[int32(p)]; !ok || at.Before(e.At) {
				u.Elections[int32(p)] = UncleanElection{At: at, OldISR: oldISR, NewLeader: newLeader}
			}
		}
		if m := truncLine.FindStringSubmatch(line); m != nil && m[1] == topic {
			p, _ := strconv.Atoi(m[2])
			off, _ := strconv.ParseInt(m[3], 10, 64)
			truncs[int32(p)] = append(truncs[int32(p)], trunc{at, off})
			evidence(node, at, m[0])
		}
	})
	if err != nil {
		return u, err
	}
	for p, e := range u.Elections {
		for _, tr := range truncs[p] {
			if tr.at.Before(e.At) {
				continue
			}
			if cur, ok := u.TruncatedTo[p]; !ok || tr.offset < cur {
				u.TruncatedTo[p] = tr.offset
			}
		}
	}
	return u, nil
}

// Election is one partition's change of leader away from a broker, as
// the KRaft controller logged it: "partition change for T-P with topic ID
// X: ..., leader: 2 -> 1, ..." (every controller logs the change as it
// replays it; the launcher's log4j2.properties logs
// ReplicationControlManager at DEBUG, where Kafka writes the clean ones;
// unclean ones it writes at INFO, prefixed UNCLEAN).
type Election struct {
	At        time.Time // the first controller's line
	NewLeader int32     // -1: none (no replica in the ISR could lead)
	Unclean   bool
}

// Elections is what the controllers logged of a broker's partitions after
// a fault: which lost it as their leader, and when, and which dropped it
// from their ISR.
type Elections struct {
	// Moved: per partition of the topic whose leader was the broker, the
	// first change of leader away from it.
	Moved map[int32]Election
	// Shrunk: per partition of the topic, the first change of its ISR
	// that dropped the broker (as leader or follower).
	Shrunk map[int32]time.Time
}

// ReadElections reads, from every node's log between since and until
// (zero: no bound), each partition of topic that the controller moved
// away from broker node: its new leader and when, and when each ISR that
// held the broker dropped it.
func ReadElections(logs []NodeLog, topic string, node int32, since, until time.Time) (Elections, error) {
	e := Elections{Moved: map[int32]Election{}, Shrunk: map[int32]time.Time{}}
	err := LogLines(logs, since, until, func(_ int32, at time.Time, line string) {
		m := anyChangeLine.FindStringSubmatch(line)
		if m == nil || m[2] != topic {
			return
		}
		p64, _ := strconv.ParseInt(m[3], 10, 32)
		p := int32(p64)
		for _, f := range fieldChange.FindAllStringSubmatch(m[4], -1) {
			switch f[1] {
			case "leader":
				from, _ := strconv.Atoi(f[2])
				to, _ := strconv.Atoi(f[3])
				if int32(from) != node || int32(to) == node {
					continue
				}
				if cur, ok := e.Moved[p]; !ok || at.Before(cur.At) {
					e.Moved[p] = Election{At: at, NewLeader: int32(to), Unclean: m[1] != ""}
				}
			case "isr":
				old, now := parseISR(strings.Trim(f[2], "[]")), parseISR(strings.Trim(f[3], "[]"))
				if !slices.Contains(old, node) || slices.Contains(now, node) {
					continue
				}
				if cur, ok := e.Shrunk[p]; !ok || at.Before(cur) {
					e.Shrunk[p] = at
				}
			}
		}
	})
	return e, err
}

// openLogs opens every node's kafka.log; close closes them.
func (k *Cluster) openLogs() (logs []NodeLog, close func(), err error) {
	var files []*os.File
	close = func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, id := range k.Nodes() {
		f, err := os.Open(k.LogFile(id))
		if err != nil {
			close()
			return nil, nil, fmt.Errorf("the log oracle reads every node's log: %w", err)
		}
		files = append(files, f)
		logs = append(logs, NodeLog{Node: id, Log: f})
	}
	return logs, close, nil
}

// onLocalLogs is read on the local cluster's logs, each node's opened for
// the read and closed after it.
func onLocalLogs[T any](k *Cluster, read func([]NodeLog) (T, error)) (T, error) {
	logs, close, err := k.openLogs()
	if err != nil {
		var zero T
		return zero, err
	}
	defer close()
	return read(logs)
}

// Account is ReadAccount on the local cluster's logs.
func (k *Cluster) Account(topic string, node int32, since, until time.Time) (Account, error) {
	return onLocalLogs(k, func(logs []NodeLog) (Account, error) { return ReadAccount(logs, topic, node, since, until) })
}

// Elections is ReadElections on the local cluster's logs.
func (k *Cluster) Elections(topic string, node int32, since, until time.Time) (Elections, error) {
	return onLocalLogs(k, func(logs []NodeLog) (Elections, error) { return ReadElections(logs, topic, node, since, until) })
}

// Unclean is ReadUnclean on the local cluster's logs.
func (k *Cluster) Unclean(topic string, since time.Time) (Unclean, error) {
	return onLocalLogs(k, func(logs []NodeLog) (Unclean, error) { return ReadUnclean(logs, topic, since) })
}

// RecoveryAccount implements drivers.LogOracle: for the nodes a fault
// took away, the controller's unfencing of the last of them (ready), and
// the last ISR line that holds it again for a partition of topic (in
// sync; the unfencing when no ISR line changed). The logs do not show
// every ISR expansion (Account.NotBack), so in sync by the logs can be
// earlier than a partition's real return: a lower bound.
func (k *Cluster) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return recoveryAccount(fmt.Sprintf("Kafka's logs (nodes %v)", k.Nodes()), topic, nodes, func(node int32) (Account, error) {
		return k.Account(topic, node, since, until)
	})
}

// recoveryAccount is RecoveryAccount on the accounts account reads, for
// logs read locally or fetched from elsewhere (RecoveryAccountFrom).
func recoveryAccount(source, topic string, nodes []int32, account func(node int32) (Account, error)) (drivers.LogAccount, error) {
	acc := drivers.LogAccount{Source: source}
	var unfenced, inSync time.Time
	var whoU, whoS int32
	for _, node := range nodes {
		a, err := account(node)
		if err != nil {
			return acc, err
		}
		if a.Unfenced.IsZero() {
			return acc, nil // the logs do not say the node came back
		}
		if a.Unfenced.After(unfenced) {
			unfenced, whoU = a.Unfenced, node
		}
		if s := a.InSync(); s.After(inSync) {
			inSync, whoS = s, node
		}
	}
	acc.Ready = &drivers.LogEvent{At: unfenced, What: fmt.Sprintf("the controller unfenced broker %d", whoU)}
	what := fmt.Sprintf("broker %d back in the ISR of every partition of %s whose ISR the logs show changing", whoS, topic)
	if inSync.Equal(unfenced) {
		what = fmt.Sprintf("broker %d unfenced; no ISR change of %s logged after it", whoS, topic)
	}
	acc.InSync = &drivers.LogEvent{At: inSync, What: what}
	return acc, nil
}

var _ drivers.LogOracle = (*Cluster)(nil)
