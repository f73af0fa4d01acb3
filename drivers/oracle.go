package drivers

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"
)

// LogOpener opens node's log for a log oracle to read: a local cluster's
// file (LocalLogs) or the bytes fetched from a node of a cluster file
// (FetchedLogs). Its error names the node and, for a file, the path.
type LogOpener func(node int32) (io.ReadCloser, error)

// LocalLogs opens the logs of a local cluster's nodes, at the paths file
// gives (a launcher's LogFile).
func LocalLogs(file func(node int32) string) LogOpener {
	return func(node int32) (io.ReadCloser, error) {
		f, err := os.Open(file(node))
		if err != nil {
			return nil, fmt.Errorf("the log oracle reads node %d's log %s: %w (is the cluster directory still there?)", node, file(node), err)
		}
		return f, nil
	}
}

// FetchedLogs opens, one node at a time, the logs fetched from the nodes
// of a cluster file (LogReader.RecoveryAccountFrom's logs, by node ID); a
// node whose log was not fetched is an error.
func FetchedLogs(logs map[int32][]byte) LogOpener {
	return func(node int32) (io.ReadCloser, error) {
		b, ok := logs[node]
		if !ok {
			return nil, fmt.Errorf("the log oracle has no log of node %d", node)
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
}

// ReadLog opens node's log with open, hands it to read (a broker's
// parser) and closes it. A read error is wrapped with the node; an open
// error is open's own. T is what the parser makes of the log.
func ReadLog[T any](open LogOpener, node int32, read func(log io.Reader) (T, error)) (T, error) {
	f, err := open(node)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return v, fmt.Errorf("node %d's log: %w", node, err)
	}
	return v, nil
}

// LogAccount is the brokers' own account of a node's return after a
// fault, read from their logs: the oracle ackcheck prints beside its own
// recovery figures. It is never computed from what ackcheck measured.
type LogAccount struct {
	// Source says whose logs were read ("Kafka's logs (nodes 1-3)").
	Source string `json:"source"`
	// Ready is when the logs say the node was back as a broker; InSync
	// when they say its replicas were all in sync again. Nil when the
	// logs do not say.
	Ready  *LogEvent `json:"ready,omitempty"`
	InSync *LogEvent `json:"in_sync,omitempty"`
	// NoInSync, when the broker has no notion of replicas in sync (one
	// server on one database), says so; InSync is then nil and no figure
	// is checked against the logs.
	NoInSync string `json:"no_in_sync,omitempty"`
	// Group, for a kill of a consumer group's coordinator, is when the
	// logs say another node took the group over (Kafka: "Loaded classic
	// group G"): the members cannot commit before it, so the group's
	// first progress after the kill comes no earlier. Nil when the logs
	// do not say, or the fault was not aimed at a group.
	Group *LogEvent `json:"group,omitempty"`
}

// LogEvent is one event a broker logged, with the log's own time.
type LogEvent struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
	// Bound is what the line proves of the event's time. The zero value
	// (Exact) means the line records the event itself. A log that shows
	// only that the event had not happened yet (a server logs each failed
	// health check but not the one that passes) gives NotBefore: the event
	// came at At or later, and the log cannot say how much later.
	// NotAfter: the event came at At or earlier.
	Bound Bound `json:"bound,omitempty"`
}

// Bound is what a log line proves of an event's time (LogEvent.Bound).
type Bound string

const (
	// Exact: the line records the event at its time.
	Exact Bound = ""
	// NotBefore: the event came at the line's time or later.
	NotBefore Bound = "not_before"
	// NotAfter: the event came at the line's time or earlier.
	NotAfter Bound = "not_after"
)

// Words is the bound as prose before a time: "", "no earlier than ",
// "no later than ".
func (b Bound) Words() string {
	switch b {
	case NotBefore:
		return "no earlier than "
	case NotAfter:
		return "no later than "
	}
	return ""
}

// LogOracle is implemented by clusters whose brokers' logs ackcheck can
// read (a local cluster it started). RecoveryAccount reads what the logs
// say of nodes' return after a fault at since; lines after until belong
// to a later fault and are left out.
type LogOracle interface {
	RecoveryAccount(topic string, nodes []int32, since, until time.Time) (LogAccount, error)
}

// GroupLogOracle is implemented by clusters whose brokers log a consumer
// group's coordinator moving: GroupRecovery reads when another node took
// group over after its coordinator, node, died at since (nil: the logs
// do not say).
type GroupLogOracle interface {
	GroupRecovery(group string, node int32, since, until time.Time) (*LogEvent, error)
}

// LogReader is implemented by broker profiles whose log oracle can read
// logs fetched from elsewhere (over SSH, for the nodes of a cluster file):
// the same account LogOracle gives for a local cluster, from each node's
// log as bytes (the whole file, or its tail when it is large).
type LogReader interface {
	// RecoveryAccountFrom is LogOracle.RecoveryAccount on logs, by node.
	// source names where they came from, for LogAccount.Source.
	RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (LogAccount, error)
}
