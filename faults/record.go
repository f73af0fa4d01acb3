package faults

import (
	"slices"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// Result is what became of a fault.
type Result string

const (
	// Applied: the action was carried out.
	Applied Result = "applied"
	// Skipped: its target could not be found; the run went on.
	Skipped Result = "skipped"
	// Failed: the action itself failed.
	Failed Result = "failed"
	// Observed: not an action but something seen (UnexpectedDeath).
	Observed Result = "observed"
)

// SlipNote is the slip (At after Due) above which reports print both
// times, and SlipWarn the one above which the verdict warns that the run
// was a different experiment from the one scheduled.
const (
	SlipNote = 100 * time.Millisecond
	SlipWarn = time.Second
)

// Slip is how late the fault fired after it was due; 0 when it had no due
// time. Negative values (early) are reported as they are.
func (r Record) Slip() time.Duration {
	if r.Due.IsZero() {
		return 0
	}
	return r.At.Sub(r.Due)
}

// MetaKey is the ledger metadata name of the run's []Record, which the
// injector rewrites as each fault changes.
const MetaKey = "faults"

// Record is one fault as it happened: what was asked, which node it
// hit at that moment, the result, and what was measured around it. Times
// are wall-clock; a zero time means "not observed".
type Record struct {
	Seq    int    `json:"seq"`
	Action Action `json:"action"`
	Target string `json:"target"`
	Node   int32  `json:"node"`
	// At is when the action itself began (the signal was sent); Due is
	// when the schedule wanted it (zero for a fault applied outside a
	// schedule, and for what was observed rather than done).
	At  time.Time `json:"at"`
	Due time.Time `json:"due,omitzero"`
	// AtWithinMs, for a signal sent to another machine (SSH), or a
	// network rule (installed locally or there): At is when the command
	// that sent it came back, and the signal (the rule) went out at most
	// this long before At. Zero for a local signal, whose At is stamped
	// just before it.
	AtWithinMs float64 `json:"at_within_ms,omitempty"`
	// TopologyAgeMs, for a target chosen by role: how long before the
	// fault the read of the topology it was chosen from began.
	TopologyAgeMs float64 `json:"topology_age_ms,omitempty"`
	// Result is "applied", "skipped" (the target could not be found; the
	// run went on) or "failed" (the action itself failed).
	Result Result `json:"result"`
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

	// Oracle is the brokers' own account of the node's return, read from
	// their logs after the load (Injector.ReadOracle); nil when they could
	// not be read.
	Oracle *drivers.LogAccount `json:"oracle,omitempty"`

	// NetworkProof, for network faults: the rules installed (or, for
	// heal-network, removed) and every path probed before, after and
	// after the heal.
	NetworkProof *NetworkProof `json:"network_proof,omitempty"`

	// AckMeaning, for fsync toggles: what an ack meant once it applied.
	AckMeaning string `json:"ack_meaning,omitempty"`

	// Power loss: every node it hit (one, or all at once), each one's PID
	// before and after, and what each node's filesystem lost.
	Nodes     []int32          `json:"nodes,omitempty"`
	PIDs      map[int32]int    `json:"pids,omitempty"`
	Restarted map[int32]int    `json:"restarted,omitempty"`
	Lost      map[int32]string `json:"lost,omitempty"`

	// File faults (bitflip, truncate, stale, snapshot): the seed their
	// choices came from and every file they changed or saved, with its
	// checksums before and after.
	Seed  int64        `json:"seed,omitempty"`
	Files []FileChange `json:"files,omitempty"`

	// Disk, for disk-error and disk-ok: the error put in force, or what
	// the errors did (calls failed of calls seen), as lazyfs counted.
	Disk string `json:"disk,omitempty"`
}

// recordLog holds a run's records in the order they were made, and
// rewrites them into the ledger (MetaKey) at every change, so that a run
// cut short keeps what its faults did.
type recordLog struct {
	mu       sync.Mutex
	records  []Record
	ledger   *ledger.Ledger // nil: kept in memory only
	logf     func(format string, args ...any)
	onChange func() // Injector.OnChange
}

// list returns a copy of the records so far.
func (l *recordLog) list() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// add appends r, numbered by its place, persists the records, and
// returns r's place.
func (l *recordLog) add(r Record) int {
	l.mu.Lock()
	r.Seq = len(l.records)
	l.records = append(l.records, r)
	l.mu.Unlock()
	l.persist()
	return r.Seq
}

// update changes record i in place and persists the records.
func (l *recordLog) update(i int, fn func(*Record)) {
	l.mu.Lock()
	fn(&l.records[i])
	l.mu.Unlock()
	l.persist()
}

func (l *recordLog) persist() {
	if l.ledger != nil {
		if err := l.ledger.PutMeta(MetaKey, l.list()); err != nil && l.logf != nil {
			l.logf("warning: could not record faults in the ledger: %v", err)
		}
	}
	if l.onChange != nil {
		l.onChange()
	}
}
