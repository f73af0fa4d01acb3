package nats

// Consumer groups (drivers.GroupConsumer) on JetStream durable consumers.
// A group is one durable pull consumer named after it on each partition's
// stream (explicit acks, AckWait GroupAckWait, never giving up on a
// message); every member of the group pulls from all of them, so the
// members share each partition's consumer and JetStream hands each
// message to one of them at a time.
//
// How the Kafka-shaped seam maps onto JetStream:
//
//   - A delivery's position is the message's stream sequence, as the
//     produce side and read.go number them.
//   - Commit(next) acks, each waiting for the server's answer
//     (DoubleAck), every message the member was delivered below next[p].
//     Members share a partition, so the member's acks alone do not make
//     "every record below next processed": the answer's Offset is what
//     the consumer's leader then says, its ack floor (every sequence up
//     to it acked, by any member) plus one. It is below next while
//     another member holds earlier messages unacked, and past next when
//     other members acked later ones: not capped at next, so that the
//     member whose ack completed a stretch reports the whole of it (with
//     a cap, the group's last answers could stay one short of the end
//     the broker holds: two members each acking the other's neighbour).
//   - Close acks nothing: what the member held unacked is delivered to
//     the group again once GroupAckWait passed since its delivery.
//   - The group's committed position (drivers.GroupOffsetReader) is each
//     consumer's ack floor plus one, as its leader reports it.
//
// Where the seam does not fit: CommitPromise and GroupCoordinator are
// asked with a group alone, and a NATS group is consumers on a topic's
// streams. The driver answers for the topic the group was joined on (or,
// before any member joined, the last topic EnsureTopic was given). A
// group has a consumer, so a Raft leader, per partition: GroupCoordinator
// names the leader of the consumer on the topic's first partition.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/nats-io/nats.go/jetstream"
)

// GroupAckWait is the AckWait of a group's consumers: how long a message
// delivered to a member and not acked waits before the group is given it
// again. JetStream's default is 30 s; 5 s keeps a member that left
// without acking (Close, restart-consumers, a client that died) from
// holding its messages long, and is well past a member's poll-to-commit
// time (milliseconds). A commit that comes later than this acks messages
// that were already given out again: they are then delivered twice.
const GroupAckWait = 5 * time.Second

// Pull parameters of a member.
const (
	groupFetch     = 250                    // most messages one pull takes from one partition
	groupPull      = 250 * time.Millisecond // how long one pull waits for messages
	groupIdle      = 100 * time.Millisecond // pause after a round that gave nothing
	groupAcksAtOne = 16                     // acks in flight at once in a commit
	groupFailing   = 30 * time.Second       // how long Poll goes on while every pull fails
)

var (
	_ drivers.GroupConsumer          = (*Driver)(nil)
	_ drivers.GroupOffsetReader      = (*Driver)(nil)
	_ drivers.GroupCoordinatorFinder = (*Driver)(nil)
)

// checkGroup refuses group names that cannot name a durable consumer.
func checkGroup(group string) error {
	if group == "" || strings.ContainsAny(group, ".*> \t\r\n/\\") {
		return fmt.Errorf("group %q: a NATS consumer group name cannot be empty or hold '.', '*', '>', '/', '\\' or spaces (it names durable consumers)", group)
	}
	return nil
}

// groupTopic is the topic group was joined on, else the last topic
// EnsureTopic was given.
func (d *Driver) groupTopic(group string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.groups[group]; ok {
		return t, nil
	}
	if d.lastTopic != "" {
		return d.lastTopic, nil
	}
	return "", fmt.Errorf("group %s: no member joined it and no topic was made through this driver yet, so its streams are not known", group)
}

// groupConsumerConfig is the durable consumer of group on a stream: it
// begins at start (a stream sequence; 1 or less: the stream's first).
func groupConsumerConfig(group string, start int64) jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		Durable:       group,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       GroupAckWait,
		MaxDeliver:    -1,
		MaxAckPending: 10000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if start > 1 {
		c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, uint64(start)
	}
	return c
}

// JoinGroup implements drivers.GroupConsumer: it finds the group's
// durable consumer on each partition's stream, or makes it (the same
// configuration for every member: JetStream leaves an existing one as it
// is). A consumer that exists keeps its position; spec.StartOffsets only
// says where a new one begins. A consumer that cannot be reached now (a
// stream or consumer electing a leader after a fault) is left to the
// member's polls, which ask again: a join never waits on an election
// (restart-consumers rejoins while the load runs).
func (d *Driver) JoinGroup(ctx context.Context, spec drivers.GroupSpec) (drivers.GroupMember, error) {
	if err := checkGroup(spec.Group); err != nil {
		return nil, err
	}
	parts, err := d.partitions(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	m := &groupMember{d: d, group: spec.Group, topic: spec.Topic, parts: parts, start: spec.StartOffsets,
		cons: map[int32]jetstream.Consumer{}, pending: map[int32][]jetstream.Msg{}}
	for _, p := range parts {
		if err := m.ensure(ctx, p); errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("group %s: stream %s: %w", spec.Group, StreamName(spec.Topic, p), drivers.ErrTopicMissing)
		}
	}
	d.mu.Lock()
	d.groups[spec.Group] = spec.Topic
	d.mu.Unlock()
	return m, nil
}

// ensure gets the member a handle on partition p's consumer, finding it
// or making it, in one bounded try.
func (m *groupMember) ensure(ctx context.Context, p int32) error {
	name := StreamName(m.topic, p)
	c, err := call(ctx, func(ctx context.Context) (jetstream.Consumer, error) { return m.d.js.Consumer(ctx, name, m.group) })
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		c, err = call(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return m.d.js.CreateOrUpdateConsumer(ctx, name, groupConsumerConfig(m.group, m.start[p]))
		})
	}
	if err != nil {
		return err
	}
	m.cons[p] = c
	return nil
}

// groupMember is one member of a group. Used by one goroutine
// (drivers.GroupMember).
type groupMember struct {
	d            *Driver
	group, topic string
	parts        []int32
	start        map[int32]int64
	// cons are the partitions' consumers the member has a handle on; a
	// missing one is looked for again by the next poll.
	cons map[int32]jetstream.Consumer
	// pending is what the member was delivered and has not acked, per
	// partition, in stream order.
	pending map[int32][]jetstream.Msg
}

// Poll implements drivers.GroupMember: a pull from each partition's
// consumer at once, each bounded by groupPull (the server holds a pull
// open until then, and the client gives up then too: a consumer without
// a leader never holds a poll longer), repeated until some came or ctx
// ends. A consumer electing a leader answers nothing for seconds: its
// pulls fail and are made again, for up to groupFailing while every pull
// fails.
func (m *groupMember) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	var failing time.Time
	for {
		var lastErr error
		failed := 0
		for _, p := range m.parts {
			if m.cons[p] == nil {
				if err := m.ensure(ctx, p); err != nil {
					failed++
					lastErr = err
				}
			}
		}
		type pulled struct {
			msgs []jetstream.Msg
			err  error
		}
		got := make([]pulled, len(m.parts))
		var wg sync.WaitGroup
		for i, p := range m.parts {
			c := m.cons[p]
			if c == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				fctx, cancel := context.WithTimeout(ctx, groupPull)
				defer cancel()
				batch, err := c.Fetch(groupFetch, jetstream.FetchContext(fctx))
				if err != nil {
					got[i].err = err
					return
				}
				for msg := range batch.Messages() {
					got[i].msgs = append(got[i].msgs, msg)
				}
				if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) && fctx.Err() == nil {
					got[i].err = err
				}
			}()
		}
		wg.Wait()
		var out []drivers.Delivery
		at := time.Now()
		for i, p := range m.parts {
			if got[i].err != nil {
				failed++
				lastErr = got[i].err
			}
			for _, msg := range got[i].msgs {
				meta, err := msg.Metadata()
				if err != nil {
					return out, fmt.Errorf("group %s: a message of %s without JetStream metadata: %w", m.group, StreamName(m.topic, p), err)
				}
				out = append(out, drivers.Delivery{Pos: drivers.Position{Partition: p, Offset: int64(meta.Sequence.Stream)}, Value: msg.Data(), At: at})
				m.pending[p] = append(m.pending[p], msg)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if failed < len(m.parts) {
			failing = time.Time{}
			continue
		}
		if failing.IsZero() {
			failing = time.Now()
		} else if time.Since(failing) > groupFailing {
			return nil, m.d.unreachable(fmt.Sprintf("pull for group %s from the streams of %s (every pull failed for %s)", m.group, m.topic, groupFailing), lastErr)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(groupIdle):
		}
	}
}

// Commit implements drivers.GroupMember: it acks, waiting for each
// answer, every message delivered to the member below next[p], then asks
// the partition's consumer for its ack floor. A partition's answer is
// acknowledged when every ack was, at the ack floor plus one; a
// partition with nothing delivered below next[p] answers an error.
func (m *groupMember) Commit(ctx context.Context, next map[int32]int64) ([]drivers.CommitAnswer, error) {
	parts := make([]int32, 0, len(next))
	for p := range next {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	out := make([]drivers.CommitAnswer, 0, len(parts))
	for _, p := range parts {
		a := drivers.CommitAnswer{Partition: p, Offset: next[p]}
		var acks, keep []jetstream.Msg
		for _, msg := range m.pending[p] {
			if meta, err := msg.Metadata(); err == nil && int64(meta.Sequence.Stream) < next[p] {
				acks = append(acks, msg)
			} else {
				keep = append(keep, msg)
			}
		}
		m.pending[p] = keep
		c, ok := m.cons[p]
		ok = ok && c != nil
		switch {
		case !ok:
			a.Err = fmt.Errorf("group %s has no consumer on partition %d of %s", m.group, p, m.topic)
		case len(acks) == 0:
			a.Err = fmt.Errorf("member of group %s was delivered nothing of stream %s below sequence %d to ack", m.group, StreamName(m.topic, p), next[p])
		default:
			a.Err = ackAll(ctx, acks)
		}
		if a.Err == nil {
			info, err := call(ctx, c.Info)
			switch {
			case err != nil:
				a.Err = fmt.Errorf("every ack of group %s below %d in %s was answered, but its consumer's ack floor could not be read: %w", m.group, next[p], StreamName(m.topic, p), err)
			default:
				a.Offset = int64(info.AckFloor.Stream) + 1
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// ackAll acks msgs, groupAcksAtOne at a time, each waiting for the
// server's answer; it returns the first failure.
func ackAll(ctx context.Context, msgs []jetstream.Msg) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, groupAcksAtOne)
	)
	for _, msg := range msgs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := msg.DoubleAck(actx)
			cancel()
			if err != nil {
				mu.Lock()
				if first == nil {
					meta, _ := msg.Metadata()
					seq := uint64(0)
					if meta != nil {
						seq = meta.Sequence.Stream
					}
					first = fmt.Errorf("the ack of sequence %d got no answer: %w", seq, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// Close implements drivers.GroupMember: it acks nothing; what the member
// held unacked is delivered to the group again after GroupAckWait. The
// consumers stay: they are the group's.
func (m *groupMember) Close(ctx context.Context) error {
	m.pending = map[int32][]jetstream.Msg{}
	return nil
}

// CommitPromise implements drivers.GroupConsumer: an ack of a replicated
// consumer is answered once the consumer's Raft group (as many replicas
// as its stream: the consumers inherit it) committed it; an R1
// consumer's at once. Durable when there is more than one replica: an
// acknowledged ack then survives the loss of any one server. Whether it
// was fsynced first is groupCommitFsync's (commitfsync.go), from the
// consumer's replicas and storage and the servers' sync_interval.
func (d *Driver) CommitPromise(ctx context.Context, group string) (drivers.CommitPromise, error) {
	topic, err := d.groupTopic(group)
	if err != nil {
		return drivers.CommitPromise{}, err
	}
	si, err := d.streamInfo(ctx, topic, 0)
	if err != nil {
		return drivers.CommitPromise{}, err
	}
	r, mem := si.Config.Replicas, false
	if ci, err := call(ctx, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
		return d.consumerInfo(ctx, topic, 0, group)
	}); err == nil {
		mem = ci.Config.MemoryStorage
		if ci.Config.Replicas > 0 {
			r = ci.Config.Replicas
		}
	}
	if r <= 1 && si.Config.Replicas > 1 {
		// A consumer kept from before (the driver uses one it finds) made
		// R1 on a replicated stream: were the group's other consumers
		// replicated, their lost commits would be counted as this one's
		// promise allows rather than fail the run. Read them all (a case
		// rare enough to pay a request a partition).
		if _, err := d.groupShape(ctx, group, topic); err != nil {
			return drivers.CommitPromise{}, err
		}
	}
	return groupPromise(r, mem, d.readSync(ctx)), nil
}

// groupPromise says what an ack means on consumers of r replicas (mem:
// mem_storage), with the servers' sync settings ns (none: not known).
func groupPromise(r int, mem bool, ns []nodeSync) drivers.CommitPromise {
	s := fmt.Sprintf("an ack is applied by the durable consumer's leader and replicated to its R%d Raft group", r)
	if r <= 1 {
		s = "an ack is applied by the durable consumer's one server (R1): the loss of that server loses it"
	}
	if _, err := commitFsyncOf(ns); err == nil {
		on, why := groupCommitFsync(r, mem, ns)
		s += fmt.Sprintf("; fsynced before its answer: %s (%s)", onOff(on), why)
	}
	return drivers.CommitPromise{Meaning: s, Durable: r > 1}
}

func onOff(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// consumerInfo asks partition p's stream for group's consumer now.
func (d *Driver) consumerInfo(ctx context.Context, topic string, p int32, group string) (*jetstream.ConsumerInfo, error) {
	c, err := d.js.Consumer(ctx, StreamName(topic, p), group)
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
}

// CommittedOffsets implements drivers.GroupOffsetReader: each partition's
// consumer's ack floor (a stream sequence: it and every one below are
// acked), plus one, as the consumer's leader reports it. A partition
// whose stream has no consumer of the group, or whose consumer acked
// nothing, is missing.
func (d *Driver) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range parts {
		ci, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
			ci, err := d.consumerInfo(ctx, topic, p, group)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				return nil, nil
			}
			return ci, err
		})
		if err != nil {
			return nil, d.unreachable(fmt.Sprintf("read consumer %s of stream %s", group, StreamName(topic, p)), err)
		}
		if ci != nil && ci.AckFloor.Stream > 0 {
			out[p] = int64(ci.AckFloor.Stream) + 1
		}
	}
	return out, nil
}

// GroupCoordinator implements drivers.GroupCoordinatorFinder: the Raft
// leader of the group's consumer on the first partition of the topic it
// was joined on (each partition's consumer has a leader of its own).
func (d *Driver) GroupCoordinator(ctx context.Context, group string) (int32, error) {
	topic, err := d.groupTopic(group)
	if err != nil {
		return -1, err
	}
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return -1, err
	}
	if len(parts) == 0 {
		return -1, fmt.Errorf("topic %s has no streams", topic)
	}
	var missing error
	ci, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
		ci, err := d.consumerInfo(ctx, topic, parts[0], group)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			missing = err
			return nil, nil // no consumer: no point asking again
		}
		return ci, err
	})
	if missing != nil {
		return -1, fmt.Errorf("group %s has no consumer on stream %s: no member joined it on topic %s", group, StreamName(topic, parts[0]), topic)
	}
	if err != nil {
		return -1, d.unreachable(fmt.Sprintf("read consumer %s of stream %s", group, StreamName(topic, parts[0])), err)
	}
	if ci.Cluster == nil || ci.Cluster.Leader == "" {
		return -1, fmt.Errorf("consumer %s of stream %s has no leader now", group, StreamName(topic, parts[0]))
	}
	d.learnNames(ctx)
	id, ok := d.nodeID(ci.Cluster.Leader)
	if !ok {
		return -1, fmt.Errorf("consumer %s of stream %s is led by %s, which is not among --servers", group, StreamName(topic, parts[0]), ci.Cluster.Leader)
	}
	return id, nil
}
