// Package drivers defines the seam between ackcheck and a message broker.
//
// A driver publishes opaque values asynchronously and reports, for each, one
// of three outcomes (Acked, Rejected, Unknown); it reads partitions back
// between two positions; and it describes the cluster's topology as the
// broker sees it at the moment it is asked. Everything broker-specific lives
// behind Driver; the load, the ledger and the verifier never see a client
// library.
//
// The outcome model follows franz-go's own warning that a client "cannot
// know if the broker actually processed the request": only Acked is a
// promise. Rejected means the broker refused the write with an error that the
// driver believes was raised before anything was stored; Unknown covers
// every other failure (timeouts, lost connections, errors after retries).
// The verifier treats Rejected and Unknown alike (a read of either is
// "indeterminate"), so a driver that misclassifies one as the other can skew
// counts but never the verdict. A driver must never report Acked for a write
// the broker did not acknowledge.
package drivers

import (
	"context"
	"errors"
	"time"
)

// Status is the outcome of one publish.
type Status uint8

const (
	// Acked: the broker acknowledged the write at Outcome.Pos under the
	// durability the run asked for (e.g. acks=all).
	Acked Status = iota + 1
	// Rejected: the broker answered with an error before storing the write.
	Rejected
	// Unknown: no definite answer (timeout, disconnect, retries exhausted,
	// an error that may come after the write was stored).
	Unknown
)

func (s Status) String() string {
	switch s {
	case Acked:
		return "acked"
	case Rejected:
		return "rejected"
	case Unknown:
		return "unknown"
	}
	return "invalid"
}

// Position locates a record: partition and offset. Brokers whose positions
// are not one integer map them to an Offset that increases along the
// partition's log. Offset is -1 when the broker gives none (Kafka acks=0).
type Position struct {
	Partition int32
	Offset    int64
}

// Message is one value to publish. Partition >= 0 pins the partition;
// Partition < 0 lets the driver choose by Key (as the broker's default
// partitioner would).
type Message struct {
	Key       []byte
	Value     []byte
	Partition int32
	// SentAt is when the load handed the message over (zero: unknown). A
	// driver may use it as the record's timestamp rather than read the
	// clock again.
	SentAt time.Time
}

// Outcome is the broker's answer to one publish.
type Outcome struct {
	Status Status
	Pos    Position // meaningful when Status == Acked
	Err    error    // nil when Status == Acked
}

// Producer publishes messages for one load producer.
type Producer interface {
	// Publish hands m to the broker and returns without waiting for its
	// answer. done is called exactly once per Publish, from any goroutine,
	// and must not block. REQUIRES: m.Value and m.Key stay unmodified until
	// done is called.
	Publish(ctx context.Context, m Message, done func(Outcome))
	// Close waits until every outstanding done has been called or ctx ends;
	// then it abandons what is left (reporting it Unknown) and releases the
	// producer.
	Close(ctx context.Context) error
}

// ValueReuser is implemented by a driver whose producers keep no reference
// to a Message's Value or Key once they have called its done: the load
// then writes a later message into the same memory, instead of allocating
// a value per message. A driver that may still read the value after done
// (to resend it, say) must not implement it.
type ValueReuser interface {
	ReusesValues()
}

// Record is one record read back.
type Record struct {
	Pos       Position
	Key       []byte
	Value     []byte
	Timestamp time.Time // broker or producer timestamp, if any
	// Damaged: the broker served this record in a unit whose own
	// checksum does not match, or whose header is damaged (a Kafka record
	// batch whose CRC fails, or whose magic byte is not 2), so none of its
	// bytes can be trusted, even when its value still decodes: the
	// read-back counts it corrupt, never as a good copy.
	Damaged bool
}

// ReadSpec says which records Read delivers.
type ReadSpec struct {
	Topic string
	// From is the first offset to read per partition (inclusive): the
	// partitions read are From's.
	From Offsets
	// To is the end per partition (exclusive). Unset (the zero value):
	// follow the partitions until ctx ends (a live consumer).
	To Offsets
	// IdleTimeout ends the read when no record arrived for this long and
	// the broker could not confirm that more exist. Zero: 60s.
	IdleTimeout time.Duration
}

// PartitionRead reports how far Read got on one partition. It is small
// and holds no pointer: a read of a million partitions is one slice of
// 32-byte elements that the garbage collector never scans (issue 37);
// what few partitions have, a note and damaged spans, is in ReadReport's
// maps.
type PartitionRead struct {
	Asked    bool  // the partition is one of ReadSpec.From's
	Complete bool  // Next reached Target, or the broker confirmed nothing more exists
	Records  int64 // records delivered
	Next     int64 // the offset after the last delivered record
	Target   int64 // ReadSpec.To for this partition
}

// DamagedSpan is a run of offsets a broker served in one damaged unit (a
// Kafka record batch whose stored CRC differs from the one computed over
// its bytes, or whose magic byte is not 2).
type DamagedSpan struct {
	First int64 `json:"first"` // first offset of the unit, as its header claims
	Last  int64 `json:"last"`  // last offset, inclusive
	// Records is how many of its records could still be parsed and were
	// delivered (Damaged); the others' IDs are unknown.
	Records int `json:"records"`
	// Why is the mismatch as found ("stored CRC 1a2b3c4d, computed ...").
	Why string `json:"why"`
}

// ReadReport is what Read achieved per partition.
type ReadReport struct {
	// Partitions is indexed by partition; a partition not asked for
	// (not in ReadSpec.From) has Asked false, or lies beyond the slice.
	Partitions []PartitionRead
	// Notes say, by partition, why a partition ended short of its
	// Target, if it did (SetNote, Note). Nil when none has one.
	Notes map[int32]string
	// Damaged are, by partition, the spans the broker served with a
	// checksum that does not match, in offset order: their records, if
	// any could be parsed, were delivered with Record.Damaged, and the
	// read went on past them (AddDamaged). Nil when none has one.
	Damaged map[int32][]DamagedSpan
}

// NewReadReport is the report of spec before anything is read: every
// partition of spec.From asked, at its From, its Target spec.To's (-1
// for a live read), and Complete when From is at or past To already.
// It is written field by field into the slice: a million partitions
// make no PartitionRead to copy each.
func NewReadReport(spec ReadSpec) ReadReport {
	rep := ReadReport{Partitions: make([]PartitionRead, spec.From.Slots())}
	live := !spec.To.IsSet()
	spec.From.All(func(p int32, from int64) bool {
		pr := &rep.Partitions[p]
		pr.Asked, pr.Next, pr.Target = true, from, -1
		if !live {
			pr.Target, _ = spec.To.Get(p)
			pr.Complete = from >= pr.Target
		}
		return true
	})
	return rep
}

// Note is partition p's note ("" when it has none).
func (r ReadReport) Note(p int32) string { return r.Notes[p] }

// SetNote sets partition p's note; "" takes it away.
func (r *ReadReport) SetNote(p int32, note string) {
	if note == "" {
		delete(r.Notes, p)
		return
	}
	if r.Notes == nil {
		r.Notes = map[int32]string{}
	}
	r.Notes[p] = note
}

// AddDamaged adds a damaged span to partition p's, after those it has.
func (r *ReadReport) AddDamaged(p int32, s DamagedSpan) {
	if r.Damaged == nil {
		r.Damaged = map[int32][]DamagedSpan{}
	}
	r.Damaged[p] = append(r.Damaged[p], s)
}

// Get returns partition p's figures and whether p was asked for.
func (r ReadReport) Get(p int32) (PartitionRead, bool) {
	if p < 0 || int(p) >= len(r.Partitions) || !r.Partitions[p].Asked {
		return PartitionRead{}, false
	}
	return r.Partitions[p], true
}

// At returns partition p's figures to update, nil when p was not asked
// for.
func (r ReadReport) At(p int32) *PartitionRead {
	if p < 0 || int(p) >= len(r.Partitions) || !r.Partitions[p].Asked {
		return nil
	}
	return &r.Partitions[p]
}

// Complete reports whether every partition was read to its end.
func (r ReadReport) Complete() bool {
	for _, p := range r.Partitions {
		if p.Asked && !p.Complete {
			return false
		}
	}
	return true
}

// TopicSpec is the topic a run wants.
type TopicSpec struct {
	Name              string
	Partitions        int
	ReplicationFactor int
	Configs           map[string]string
}

// TopicInfo is the topic a run got.
type TopicInfo struct {
	Name              string
	Partitions        []int32
	ReplicationFactor int
	// Created is false when the topic existed and is used as it is.
	Created bool
}

// Node is one broker as the cluster describes it.
type Node struct {
	ID   int32
	Host string
	Port int32
	Rack string
}

// PartitionState is one partition's leadership and replication.
type PartitionState struct {
	Partition int32
	Leader    int32 // -1 when it has none
	Epoch     int32 // leader epoch, -1 when the broker gives none
	// ElectedAt is when the current leader took over, by the broker's
	// clock, for brokers that say it instead of an epoch (NATS's
	// leader_since); zero otherwise. A later value means a new election.
	ElectedAt time.Time
	Replicas  []int32
	ISR       []int32
	// Offline lists replicas the broker reports unreachable now (NATS's
	// offline peers). It is a sign of absence for recovery tracking, not a
	// replication state: a replica may be in ISR and still listed here for
	// a while after it came back.
	Offline []int32
	Err     string // the broker's error for this partition, if any
}

// Topology is the cluster as one broker described it at At.
type Topology struct {
	At         time.Time
	Nodes      []Node
	Controller int32 // -1 when unknown
	Partitions []PartitionState
}

// Driver is a connection to one broker cluster for one run.
type Driver interface {
	// Name is the driver's name as given to --driver.
	Name() string
	// EnsureTopic creates the topic, or describes it if it exists.
	EnsureTopic(ctx context.Context, spec TopicSpec) (TopicInfo, error)
	// NewProducer returns a producer to topic for load producer id. Producers are
	// independent (in Kafka, separate clients with their own producer IDs).
	NewProducer(ctx context.Context, topic string, id uint32) (Producer, error)
	// EndOffsets returns, per partition, the offset the next write would get
	// (what a consumer can read up to). ErrTopicMissing if the topic is gone.
	EndOffsets(ctx context.Context, topic string) (Offsets, error)
	// Read delivers the records of spec to fn from a single goroutine, in
	// offset order within each partition, then reports how far it got. An
	// error from fn stops the read and is returned.
	Read(ctx context.Context, spec ReadSpec, fn func(Record) error) (ReadReport, error)
	// Topology describes the cluster now (nodes, controller, per-partition
	// leader, replicas and in-sync replicas of topic).
	Topology(ctx context.Context, topic string) (Topology, error)
	// Close releases every connection.
	Close() error
}

// LogStarter is implemented by drivers whose broker can say where each
// partition's log now begins: the first offset still stored (Kafka's
// log-start offset, which DeleteRecords and retention move forward). No
// offset below it can be read again, so the read-back starts there, and an
// acked message whose acked offset lies below it is gone, not unread. A
// driver without it is read from the run's start offsets, as before: a
// partition deleted to its end then reads as not finished (incomplete),
// never as kept.
type LogStarter interface {
	// StartOffsets returns, per partition, the first offset still in the
	// log (the end offset when the log holds nothing). ErrTopicMissing
	// if the topic is gone.
	StartOffsets(ctx context.Context, topic string) (Offsets, error)
}

// ErrTopicMissing is returned (wrapped) when the topic does not exist.
var ErrTopicMissing = errors.New("topic does not exist")

// ErrUnreachable is returned (wrapped) when no broker answers.
var ErrUnreachable = errors.New("no broker answered")

// NodeProber is implemented by drivers that can ask one node directly
// whether it serves requests (used to time when a restarted node is ready).
type NodeProber interface {
	ProbeNode(ctx context.Context, id int32) error
}

// TopicConfigurer is implemented by drivers that can read and change a
// topic's settings through the broker's admin API (fsync toggles).
type TopicConfigurer interface {
	// TopicConfig returns key's value set on the topic itself; nil when the
	// topic has no override (the broker's default applies).
	TopicConfig(ctx context.Context, topic, key string) (*string, error)
	// SetTopicConfig sets key on the topic; nil removes the override.
	SetTopicConfig(ctx context.Context, topic, key string, value *string) error
	// FsyncSetting is the topic setting that makes every write fsynced
	// before it counts toward an ack, and its on and off values.
	FsyncSetting() (key, on, off string)
}

// AckDescriber is implemented by drivers that can say, from the running
// cluster's settings (not from assumptions), what an ack means for a
// topic now: who has the write and whether it was fsynced.
type AckDescriber interface {
	AckMeaning(ctx context.Context, topic string) (string, error)
}

// VersionReporter is implemented by drivers that can ask each broker what
// it runs (for reports).
type VersionReporter interface {
	BrokerVersions(ctx context.Context) (map[int32]string, error)
}

// SettingsDescriber is implemented by drivers that list their own settings
// for reports, as people write them: durations as "5ms" and "30s", flags as
// on or off, secrets left out. Each row is a name and a value.
type SettingsDescriber interface {
	SettingsRows() [][2]string
}

// OutcomeDeadliner is implemented by drivers whose sends have a deadline of
// their own (Kafka's delivery.timeout.ms, NATS's publish timeout, Pulsar's
// send timeout). The load enforces it too, a little later, whatever the
// client library does (load.Config.OutcomeTimeout).
type OutcomeDeadliner interface {
	OutcomeDeadline() time.Duration
}

// AckClasser is implemented by drivers whose broker acknowledges a write
// in more than one way (Queen: committed to PostgreSQL, or held in the
// server's file buffer to be replayed later). Every class is an ack; the
// counts, by class, go into the reports.
type AckClasser interface {
	AckClasses() map[string]int64
}

// Settler is implemented by drivers whose broker can acknowledge a write
// before a read can find it (Queen: a push answered "buffered" is in the
// server's file buffer, and reaches PostgreSQL when it is replayed). The
// read-back calls Settle before it reads where the partitions end.
//
// Settle returns once everything acknowledged is readable, with a note on
// what it waited for ("" when nothing). It returns an error when that did
// not happen while the broker made progress at least every idle (or it
// cannot make any, as Queen in maintenance mode): a read then cannot show
// that an acked message is gone, only that it is not there yet. While it
// waits it says what it is waiting for through progress (nil: silent),
// at most every SettleProgressEvery: a replay can take minutes.
type Settler interface {
	Settle(ctx context.Context, topic string, idle time.Duration, progress func(string)) (note string, err error)
}

// SettleProgressEvery is how often a Settler waiting reports it.
const SettleProgressEvery = 10 * time.Second

// Switcher is implemented by drivers that can turn a broker-wide mode on
// and off through the broker's own API (Queen's maintenance mode). Faults
// <name>-on and <name>-off act on it, journaled and healed like every
// other fault.
type Switcher interface {
	// Switches lists the modes by name.
	Switches() []string
	// Switch reads whether the mode is on now.
	Switch(ctx context.Context, name string) (bool, error)
	// SetSwitch turns the mode on or off.
	SetSwitch(ctx context.Context, name string, on bool) error
}
