package drivers

import "time"

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
}

// LogEvent is one event a broker logged, with the log's own time.
type LogEvent struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// LogOracle is implemented by clusters whose brokers' logs ackcheck can
// read (a local cluster it started). RecoveryAccount reads what the logs
// say of nodes' return after a fault at since; lines after until belong
// to a later fault and are left out.
type LogOracle interface {
	RecoveryAccount(topic string, nodes []int32, since, until time.Time) (LogAccount, error)
}
