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
	StartOffsets Offsets   `json:"start_offsets"`
	LoadStart    time.Time `json:"load_start"`
	// LoadEnd is zero until the load finished.
	LoadEnd time.Time `json:"load_end"`
	// Clean is set once every send and outcome of the load is committed.
	// A ledger without it comes from a run that died (see the package doc).
	Clean bool `json:"clean"`
	// Shed counts scheduled sends dropped because max-in-flight was reached.
	// Like Reached, it is known only once LoadEnd is set.
	Shed int64 `json:"shed"`
	// Reached is how many of the schedule's sends the load got to (sent
	// or shed), written with LoadEnd: Plan.Scheduled when it ran to its
	// end.
	Reached int64 `json:"reached,omitempty"`
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
	// Plan is the experiment the run was asked for, written before its
	// load started; nil in ledgers written before it was kept.
	Plan *Plan `json:"plan,omitempty"`
	// Group is the consumer group that ran beside the load (run
	// --group); nil when none did.
	Group *GroupInfo `json:"group,omitempty"`
}

// GroupInfo is the consumer group of a run: its deliveries are the
// ledger's Delivery events, its acknowledged commits its Commit events.
type GroupInfo struct {
	Name    string `json:"name"`
	Members int    `json:"members"`
	// Promise is what an acknowledged commit meant when the load started,
	// read from the cluster (drivers.CommitPromise's Meaning); Durable:
	// the broker promised that an acknowledged commit survives the loss
	// of any one node, so a commit lost fails the verdict.
	Promise string `json:"promise,omitempty"`
	Durable bool   `json:"durable"`
	// Restarts counts the members' restarts (restart-consumers).
	Restarts int `json:"restarts,omitempty"`
	// Err is why the group stopped before the load's end, if it did.
	Err string `json:"error,omitempty"`
}

// Plan is the experiment a run was asked for: its load's schedule and
// the faults scheduled during it. The verifier holds the ledger to it: a
// run whose load did not reach the schedule's end, or whose planned
// faults did not all fire, is not the experiment asked for and is never
// judged a pass; and the schedule bounds which sends a crash of ackcheck
// can have kept out of the ledger (the crash window).
type Plan struct {
	// Scheduled is how many sends the schedule holds for this ledger's
	// producers: each is either sent (recorded) or shed at a clean end.
	Scheduled int64 `json:"scheduled"`
	// Rate is the schedule's rate over this ledger's producers, msg/s.
	Rate     float64       `json:"rate"`
	Duration time.Duration `json:"duration_ns"`
	// Unpaced: sends went as fast as the in-flight bound let them; their
	// intended times are their send times, not a schedule's.
	Unpaced     bool `json:"unpaced,omitempty"`
	MaxInFlight int  `json:"max_in_flight"`
	// FlushInterval is the ledger's (Options.FlushInterval): with the
	// ledger's FlushClock it bounds a crash's window.
	FlushInterval time.Duration `json:"flush_interval_ns"`
	// Faults are the steps of the fault schedule, in order. A sharded
	// load's faults are applied by a process of their own and are not
	// here (its fault timeline holds them).
	Faults []PlannedFault `json:"faults,omitempty"`
}

// PlannedFault is one step of a fault schedule as it was asked for.
type PlannedFault struct {
	// At is when the step was due, after the load's start.
	At     time.Duration `json:"at_ns"`
	Action string        `json:"action"`
	Target string        `json:"target"`
	// Step is the step as the schedule writes it ("at=20s kill leader:t/0").
	Step string `json:"step"`
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
