package drivers

import (
	"context"
	"time"
)

// Group consumption: the consumer's half of "no message lost". A group
// member is delivered records, processes them, and acknowledges what it
// processed (Kafka: commits the offset after the last one; Queen: acks
// what it popped; NATS: acks each message of a durable consumer). An
// acknowledged commit is the broker's promise that the group will not be
// given those records again: a commit it forgets makes the group
// reprocess (commit lost), and a commit that runs past a record the group
// never got makes the group skip it for good (skipped).
//
// The seam is Kafka-shaped: a commit names, per partition, the offset
// after the last record processed, and covers every record below it.
// A broker whose acks are per message maps them onto that: the member
// acks every record it was delivered below the offset.

// GroupConsumer is implemented by drivers whose broker has consumer
// groups. It is optional: a run with --group on a driver without it is
// refused before the topic is made.
type GroupConsumer interface {
	// JoinGroup starts member spec.Member of group spec.Group on
	// spec.Topic. It returns once the member exists; it may not own any
	// partition yet (the group assigns them as members join).
	JoinGroup(ctx context.Context, spec GroupSpec) (GroupMember, error)
	// CommitPromise says what an acknowledged commit of group means on
	// the cluster now, read from its settings (not assumed): who holds it
	// and whether it is fsynced. Durable is true when the broker promises
	// that an acknowledged commit survives the loss of any one node
	// (Kafka: the offsets topic replicated to more than one broker); the
	// verdict then fails on a commit lost, and only counts it otherwise.
	CommitPromise(ctx context.Context, group string) (CommitPromise, error)
}

// CommitPromise is what an acknowledged commit promises (GroupConsumer).
type CommitPromise struct {
	// Meaning is one sentence for reports ("replicated to 3 brokers, from
	// memory").
	Meaning string `json:"meaning"`
	// Durable: an acknowledged commit survives the loss of any one node.
	Durable bool `json:"durable"`
}

// GroupSpec is one member of a group.
type GroupSpec struct {
	Group, Topic string
	// Member numbers the member within the run (0..N-1), for its client
	// name; the broker gives it an identity of its own.
	Member int
	// StartOffsets is where a group with no commit yet begins, per
	// partition (the run's start). A partition missing from it begins at
	// its log's start.
	StartOffsets map[int32]int64
}

// Delivery is one record a group member was given.
type Delivery struct {
	Pos   Position
	Value []byte
	// At is when the poll that gave it returned.
	At time.Time
}

// CommitAnswer is the broker's answer to a commit for one partition.
type CommitAnswer struct {
	Partition int32
	// Offset is the offset committed: every record below it is processed.
	Offset int64
	// Err is nil when the broker acknowledged the commit.
	Err error
}

// GroupMember is one member of a consumer group.
//
// Between a Poll and the Commit that follows it, the member keeps the
// partitions the Poll delivered from: the group does not take them away
// (a rebalance waits), so a commit never covers a partition another
// member has been given since. A member is used by one goroutine.
type GroupMember interface {
	// Poll waits until records are delivered or ctx ends (then it
	// returns ctx's error). It may return no deliveries without error
	// (a rebalance happened).
	Poll(ctx context.Context) ([]Delivery, error)
	// Commit commits, per partition, the offset after the last record
	// processed, and returns the broker's answer per partition; err is
	// for a commit that got no answer at all. Then it lets the group
	// rebalance again.
	Commit(ctx context.Context, next map[int32]int64) ([]CommitAnswer, error)
	// Close stops the member without committing anything more: what it
	// was delivered since its last acknowledged commit is given to the
	// group again.
	Close(ctx context.Context) error
}

// GroupCoordinatorFinder is implemented by drivers whose broker has a
// node that coordinates a group (Kafka: the leader of the group's
// __consumer_offsets partition), for the fault target coordinator:GROUP.
type GroupCoordinatorFinder interface {
	GroupCoordinator(ctx context.Context, group string) (int32, error)
}

// GroupOffsetReader is implemented by drivers that can read the offsets
// the broker holds committed for a group (an account ackcheck did not
// compute), per partition of topic; a partition without a commit is
// missing from the map.
type GroupOffsetReader interface {
	CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error)
}
