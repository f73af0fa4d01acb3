package ledger

import "time"

// MetaRun is the metadata name under which RunInfo is stored.
const MetaRun = "run"

// RunInfo describes the run whose events a ledger holds. The runner writes
// it before the load, and again (with LoadEnd and Clean) after it.
type RunInfo struct {
	RunID     uint64 `json:"run_id"`
	Driver    string `json:"driver"`
	Topic     string `json:"topic"`
	Producers int    `json:"producers"`
	// StartOffsets are the partitions' end offsets before the load: the
	// read-back starts there, so older records in a reused topic are skipped.
	StartOffsets map[int32]int64 `json:"start_offsets"`
	LoadStart    time.Time       `json:"load_start"`
	// LoadEnd is zero until the load finished.
	LoadEnd time.Time `json:"load_end"`
	// Clean is set once every send and outcome of the load is committed.
	// A ledger without it comes from a run that died (see the package doc).
	Clean bool `json:"clean"`
	// Shed counts scheduled sends dropped because max-in-flight was reached.
	Shed int64 `json:"shed"`
	// Errors counts failed outcomes by error text.
	Errors map[string]int64 `json:"errors,omitempty"`
	// AckMeaning is what an ack meant when the load started, as read from
	// the running cluster's settings ("" if the driver cannot say).
	AckMeaning string `json:"ack_meaning,omitempty"`
	// BrokerVersions are what each broker reported running at the start.
	BrokerVersions map[int32]string `json:"broker_versions,omitempty"`
	// Notes are facts a report must state (e.g. an SSH host key accepted
	// without being in known_hosts).
	Notes []string `json:"notes,omitempty"`
}

// MetaFaults is the metadata name of the run's []FaultRecord.
const MetaFaults = "faults"

// FaultRecord is one fault as it happened: what was asked, which node it
// hit at that moment, the result, and what was measured around it. Times
// are wall-clock; a zero time means "not observed".
type FaultRecord struct {
	Seq    int       `json:"seq"`
	Action string    `json:"action"`
	Target string    `json:"target"`
	Node   int32     `json:"node"`
	At     time.Time `json:"at"`
	// Result is "applied", "skipped" (the target could not be found; the
	// run went on) or "failed" (the action itself failed).
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
	// Expect is what should happen, quoted by reports.
	Expect string `json:"expect,omitempty"`

	// Kill proof: the PID the action hit (or started), the data dir's inode
	// when it acted, and the other nodes' PIDs at that moment.
	PID       int           `json:"pid,omitempty"`
	Inode     uint64        `json:"inode,omitempty"`
	Survivors map[int32]int `json:"survivors,omitempty"`

	// Recovery, for actions that take a node away (kill, stop, pause,
	// power loss): when the node answered as a broker again after coming
	// back, and when every partition of the topic had its full replica set
	// in sync again with the node back in it as its new process.
	ReadyAt  time.Time `json:"ready_at,omitempty"`
	InSyncAt time.Time `json:"in_sync_at,omitempty"`
	// InSyncEvidence says what showed that the node went out of sync and
	// came back as the process that replaced it (a fenced broker leaving
	// the node list, a shrunk in-sync set), or that it never left.
	InSyncEvidence string `json:"in_sync_evidence,omitempty"`

	// AckMeaning, for fsync toggles: what an ack meant once it applied.
	AckMeaning string `json:"ack_meaning,omitempty"`

	// Power loss: every node it hit (one, or all at once), each one's PID
	// before and after, and what each node's filesystem lost.
	Nodes     []int32          `json:"nodes,omitempty"`
	PIDs      map[int32]int    `json:"pids,omitempty"`
	Restarted map[int32]int    `json:"restarted,omitempty"`
	Lost      map[int32]string `json:"lost,omitempty"`
}
