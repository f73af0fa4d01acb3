package ledger

import (
	"encoding/json"
	"time"
)

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
	// PacingLag is how late ackcheck handed sends to the driver after
	// their scheduled times (nil for runs recorded before it was kept).
	PacingLag *LagSummary `json:"pacing_lag,omitempty"`
	// CallbackTime is how long ackcheck's outcome callback ran per ack, on
	// the client library's callback path: every later ack of that client
	// waits behind it (nil for runs recorded before it was kept).
	CallbackTime *LagSummary `json:"callback_time,omitempty"`
	// StealPct is the share of the load machine's CPU time the hypervisor
	// took while the load sent (nil: not known).
	StealPct *float64 `json:"steal_pct,omitempty"`
	// AckClasses counts acks by how the broker stored them, for brokers
	// that ack in more than one way (drivers.AckClasser); nil otherwise.
	AckClasses map[string]int64 `json:"ack_classes,omitempty"`
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
	// Checks are the checks the run was judged by (verifier.Checks as
	// JSON; nil for runs recorded before they were kept here). run.json
	// saves them too, where a re-read takes them from; this copy, in a
	// ledger proven whole, is what run.json's is held to.
	Checks json.RawMessage `json:"checks,omitempty"`
	// Shard is set when the run is one shard of a load spread over
	// processes (ackcheck run --shard); nil for a run of its own.
	Shard *ShardInfo `json:"shard,omitempty"`
}

// ShardInfo places one shard's ledger in a load spread over Count
// processes. Every shard of the load has the same RunID and schedule
// start; shard Index's producers are numbered ProducerBase to
// ProducerBase+Producers-1 (RunInfo.Producers), a range no other shard
// uses, so its ledger holds only those producers' events and a merged
// verify chains the shards' sorted streams in shard order.
type ShardInfo struct {
	Index        int     `json:"index"`
	Count        int     `json:"count"`
	ProducerBase uint32  `json:"producer_base"`
	Rate         float64 `json:"rate"` // this shard's share, msg/s
}

// LagSummary summarises a lag histogram, in microseconds.
type LagSummary struct {
	Count int64 `json:"count"`
	P50Us int64 `json:"p50_us"`
	P99Us int64 `json:"p99_us"`
	MaxUs int64 `json:"max_us"`
}
