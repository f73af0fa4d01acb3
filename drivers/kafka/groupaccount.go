package kafka

import (
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// GroupAccount is the brokers' own account, from their logs, of how a
// consumer group's coordinator moved after its node died: the figure a
// group stall ackcheck measures is held against. Each time is the first
// such line in the window, zero when no log has one.
type GroupAccount struct {
	// Fenced: the controller's "Fencing broker N at epoch E because its
	// session has timed out" (broker.session.timeout.ms after the last
	// heartbeat): until then Kafka keeps naming the dead node coordinator.
	Fenced time.Time
	// Loaded: the new coordinator's "Loaded classic group G with N
	// members." once it has read the group's __consumer_offsets partition.
	Loaded time.Time
	// LoadedBy is the node whose log has the Loaded line (-1: none).
	LoadedBy int32
	// Stabilized: the coordinator's "Stabilized group G generation N"
	// after the members joined it again.
	Stabilized time.Time
}

// ReadGroupAccount reads the logs for group's coordinator failover after
// node died at since (until: zero for no bound).
func ReadGroupAccount(logs []NodeLog, group string, node int32, since, until time.Time) (GroupAccount, error) {
	a := GroupAccount{LoadedBy: -1}
	fenced := fmt.Sprintf("Fencing broker %d at epoch ", node)
	loaded := "Loaded classic group " + group + " with "
	stable := "Stabilized group " + group + " generation "
	first := func(dst *time.Time, at time.Time) bool {
		if dst.IsZero() || at.Before(*dst) {
			*dst = at
			return true
		}
		return false
	}
	err := LogLines(logs, since, until, func(n int32, at time.Time, line string) {
		switch {
		case strings.Contains(line, fenced) && strings.Contains(line, "session has timed out"):
			first(&a.Fenced, at)
		case strings.Contains(line, loaded):
			if first(&a.Loaded, at) {
				a.LoadedBy = n
			}
		case strings.Contains(line, stable):
			first(&a.Stabilized, at)
		}
	})
	return a, err
}

// GroupAccount is ReadGroupAccount on the local cluster's logs.
func (k *Cluster) GroupAccount(group string, node int32, since, until time.Time) (GroupAccount, error) {
	return onLocalLogs(k, func(logs []NodeLog) (GroupAccount, error) { return ReadGroupAccount(logs, group, node, since, until) })
}

// GroupRecovery implements drivers.GroupLogOracle: the first "Loaded
// classic group" line after the kill, with the controller's fencing of the
// dead node, which Kafka waits for before it names a new coordinator.
func (k *Cluster) GroupRecovery(group string, node int32, since, until time.Time) (*drivers.LogEvent, error) {
	a, err := k.GroupAccount(group, node, since, until)
	if err != nil || a.Loaded.IsZero() {
		return nil, err
	}
	what := fmt.Sprintf("node %d loaded group %s from __consumer_offsets", a.LoadedBy, group)
	if !a.Fenced.IsZero() {
		what += fmt.Sprintf(" (the controller fenced node %d %s after the kill)", node, a.Fenced.Sub(since).Round(time.Millisecond))
	}
	return &drivers.LogEvent{At: a.Loaded, What: what}, nil
}

// Explains says whether a group stall that ended stallMs after the kill
// at since lies within the account: not before the new coordinator had
// loaded the group (the members could not have committed earlier). A
// zero Loaded explains nothing.
func (a GroupAccount) Explains(since time.Time, untilProgressMs float64) (bool, string) {
	if a.Loaded.IsZero() {
		return false, "no log shows a coordinator loading the group after the kill"
	}
	loadMs := float64(a.Loaded.Sub(since.Truncate(time.Millisecond))) / 1e6
	msg := fmt.Sprintf("first progress %.0f ms after the kill; the logs: fenced at %s, group loaded by node %d at %.0f ms, stabilized at %s",
		untilProgressMs, msAfter(a.Fenced, since), a.LoadedBy, loadMs, msAfter(a.Stabilized, since))
	return untilProgressMs >= loadMs, msg
}

func msAfter(t, since time.Time) string {
	if t.IsZero() {
		return "(no line)"
	}
	return fmt.Sprintf("%.0f ms", float64(t.Sub(since.Truncate(time.Millisecond)))/1e6)
}
