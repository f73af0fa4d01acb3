package pulsar

// Consumer groups (drivers.GroupConsumer) on a Shared subscription named
// after the group. Every member subscribes to the run's partitioned topic
// (one client consumer, a partition consumer under it per partition), and
// the broker hands each entry to one member at a time; a member acks each
// message by itself, and the broker answers each ack (AckWithResponse).
//
// Why Shared and not Failover: Failover gives each partition to one member
// (Kafka-like), but the broker moves a partition to another member on its
// own clock (activeConsumerFailoverDelayTimeMillis, 1 s, after any member
// joins or leaves), rewinding the cursor to its mark-delete position,
// without waiting for the member that had it to commit: the seam's
// promise that a partition is not taken away between a Poll and its Commit
// would not hold, and restart-consumers would wait on that delay. Shared
// has no assignment to move: a member that leaves has what it held unacked
// given to the others at once, and the group's progress on a partition is
// one number the broker keeps, the subscription's mark-delete position
// (every entry up to it acked, by any member).
//
// How the Kafka-shaped seam maps onto Pulsar:
//
//   - A delivery's position is its message ID packed (Pack), as the
//     produce side and the read-back number it.
//   - Commit(next) acks, in one request per partition that the broker
//     answers, every message the member was delivered below next[p].
//     Members share a partition, so the member's acks alone do not make
//     "every record below next processed": the answer's Offset is what the
//     broker then reports for the subscription on that partition, its
//     mark-delete position (admin internal stats, markDeletePosition),
//     mapped to the first position after that entry (committedFloor). It
//     is below next while another member holds earlier entries unacked,
//     and may be past it when others acked later ones.
//   - Without batch index acks (the client's default), the broker takes an
//     entry only when every message of its batch is acked: Poll returns
//     whole entries where it can, so that a commit does not stop mid-entry.
//   - Close acks nothing: the broker gives what the member held unacked to
//     the other members as soon as its consumer closes.
//   - The group's committed position (drivers.GroupOffsetReader) is the
//     same mark-delete position, per partition.
//
// What an acknowledged ack promises (CommitPromise): the broker answers an
// ack once it has applied it to the subscription's cursor in its memory,
// before anything is written. The cursor's mark-delete position is written
// to the cursor's own ledger in BookKeeper (the metadata store only when
// that ledger cannot be written) at most managedLedgerDefaultMarkDeleteRateLimit
// times a second per subscription; what the rate limit held back is
// written every managedLedgerCursorPositionFlushSeconds, or when the topic
// is closed cleanly. A broker that crashes reopens the cursor at its last
// written position, and the group is given again what it had acked since:
// commits lost. So an ack is never durable in ackcheck's sense (it does
// not survive the loss of the one broker that holds it), and a commit lost
// is counted, not failed.
//
// The read-back needs the topic's entries, and Pulsar deletes a ledger
// once every durable subscription has acked past it (with the default
// retention, none). The group acks everything, so JoinGroup also makes a
// second subscription, "<group>-ackcheck-readback" (ReadbackSubscription),
// at the group's start, that nothing ever consumes or acks: it holds every
// entry from the run's start for the read-back and for a later `ackcheck
// verify`. It is left in place; it keeps the topic's backlog until it is
// removed (pulsar-admin topics unsubscribe).
//
// Where the seam does not fit: CommitPromise and GroupCoordinator are
// asked with a group alone. CommitPromise needs no topic (it reads the
// broker's configuration); GroupCoordinator answers for the topic the
// group was joined on through this driver: the broker that owns the
// topic's first partition, which holds that partition's subscription
// cursor (a standalone's one broker), or, when the broker does not answer
// in time, the owner found when the group joined.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// ReadbackSuffix names the subscription that holds a group's topic for the
// read-back: group + ReadbackSuffix.
const ReadbackSuffix = "-ackcheck-readback"

// ReadbackSubscription is the subscription JoinGroup makes beside group's,
// never consumed, so that the broker keeps every entry from the group's
// start.
func ReadbackSubscription(group string) string { return group + ReadbackSuffix }

// Poll parameters of a member.
const (
	groupReceiverQueue = 500                    // messages a partition consumer prefetches
	groupGather        = 50 * time.Millisecond  // how long a poll goes on taking what arrives after its first message
	groupMaxPoll       = 2000                   // most messages one poll returns (then it still completes its last entries)
	groupWholeEntry    = 500 * time.Millisecond // longest a poll waits for the rest of a batch it has part of
	groupAdminTimeout  = 10 * time.Second       // bounds one admin call of a commit or a join
	groupJoinRetry     = 300 * time.Millisecond // pause between tries of a join while the broker does not answer
)

var (
	_ drivers.GroupConsumer          = (*Driver)(nil)
	_ drivers.GroupOffsetReader      = (*Driver)(nil)
	_ drivers.GroupCoordinatorFinder = (*Driver)(nil)
)

// checkGroup refuses group names that cannot name a subscription in a
// REST path.
func checkGroup(group string) error {
	if group == "" || strings.ContainsAny(group, "/\\?#% \t\r\n") {
		return fmt.Errorf("group %q: a Pulsar consumer group name cannot be empty or hold '/', '\\', '?', '#', '%%' or spaces (it names a subscription)", group)
	}
	return nil
}

// committedFloor maps a cursor's mark-delete position ("ledger:entry", as
// the admin API's internal stats print it) to ackcheck's positions: the
// first position after every message of that entry (every message below
// it is acked). An entry of -1 (nothing of that ledger acked yet, as a
// new subscription's cursor or one moved to a fresh ledger says) maps to
// the ledger's first position.
func committedFloor(markDelete string) (int64, error) {
	ls, es, ok := strings.Cut(strings.TrimSpace(markDelete), ":")
	l, err1 := strconv.ParseInt(ls, 10, 64)
	e, err2 := strconv.ParseInt(es, 10, 64)
	if !ok || err1 != nil || err2 != nil || e < -1 {
		return -1, fmt.Errorf("mark-delete position %q is not ledger:entry", markDelete)
	}
	if e == -1 {
		return Pack(l, 0, 0)
	}
	return afterEntry(l, e)
}

// startID is where a new subscription of a group begins, from the run's
// start position on that partition (0 or less: the partition's first
// message).
func startID(start int64, p int32) utils.MessageID {
	if start <= 0 {
		return utils.Earliest
	}
	l, e, _ := Unpack(start)
	return utils.MessageID{LedgerID: l, EntryID: e, PartitionIndex: int(p), BatchIndex: -1}
}

// partitionCount is how many partitions topic has.
func (d *Driver) partitionCount(ctx context.Context, topic string) (*utils.TopicName, int, error) {
	tn, n, err := d.describe(ctx, topic)
	if isStatus(err, 404) {
		return nil, 0, fmt.Errorf("%s: %w", tn, drivers.ErrTopicMissing)
	}
	if err != nil {
		return nil, 0, err
	}
	if n < 1 {
		return nil, 0, fmt.Errorf("topic %s is not partitioned: give a topic ackcheck made", tn)
	}
	return tn, n, nil
}

// ensureSubscription makes subscription sub on partition pt at start,
// unless it exists (then it keeps its position). It asks again while the
// broker does not answer, until ctx ends.
func (d *Driver) ensureSubscription(ctx context.Context, pt *utils.TopicName, sub string, start utils.MessageID) error {
	for {
		actx, cancel := context.WithTimeout(ctx, groupAdminTimeout)
		err := d.admin.Subscriptions().CreateWithContext(actx, *pt, sub, start)
		cancel()
		switch {
		case err == nil || isStatus(err, 409):
			return nil
		case isStatus(err, 404):
			return fmt.Errorf("subscription %s on %s: %w", sub, pt, drivers.ErrTopicMissing)
		case isStatus(err, 400) || isStatus(err, 403) || isStatus(err, 401):
			return fmt.Errorf("create subscription %s on %s at %d:%d: %w (a group needs the admin API to make subscriptions: check the role's permissions on the namespace)", sub, pt, start.LedgerID, start.EntryID, err)
		}
		select {
		case <-ctx.Done():
			return d.unreachable(fmt.Sprintf("create subscription %s on %s", sub, pt), errors.Join(ctx.Err(), err))
		case <-time.After(groupJoinRetry):
		}
	}
}

// JoinGroup implements drivers.GroupConsumer: it makes, on each partition
// that has none yet, the group's subscription and its read-back
// subscription (ReadbackSubscription) at spec.StartOffsets (a subscription
// that exists keeps its position), then subscribes a Shared consumer to
// the topic with acks the broker answers.
func (d *Driver) JoinGroup(ctx context.Context, spec drivers.GroupSpec) (drivers.GroupMember, error) {
	if err := checkGroup(spec.Group); err != nil {
		return nil, err
	}
	tn, n, err := d.partitionCount(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	for p := range n {
		pt, err := tn.GetPartition(p)
		if err != nil {
			return nil, err
		}
		at := startID(spec.StartOffsets[int32(p)], int32(p))
		// The read-back's first: from then on nothing the group acks can
		// let the broker delete an entry of the run.
		for _, sub := range []string{ReadbackSubscription(spec.Group), spec.Group} {
			if err := d.ensureSubscription(ctx, pt, sub, at); err != nil {
				return nil, fmt.Errorf("group %s: %w", spec.Group, err)
			}
		}
	}
	c, err := d.subscribe(ctx, tn, spec)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.groups[spec.Group] = spec.Topic
	_, known := d.coordinators[spec.Group]
	d.mu.Unlock()
	if !known {
		d.learnCoordinator(ctx, spec.Group, spec.Topic)
	}
	return &groupMember{d: d, group: spec.Group, topic: tn, c: c, pending: map[int32][]pulsar.Message{}}, nil
}

// subscribe makes the member's consumer, asking again until ctx ends
// while the broker does not answer (a member rejoining after a fault).
func (d *Driver) subscribe(ctx context.Context, tn *utils.TopicName, spec drivers.GroupSpec) (pulsar.Consumer, error) {
	for {
		type made struct {
			c   pulsar.Consumer
			err error
		}
		ch := make(chan made, 1)
		go func() {
			c, err := d.client.Subscribe(pulsar.ConsumerOptions{
				Topic: tn.String(), SubscriptionName: spec.Group, Type: pulsar.Shared,
				Name:              fmt.Sprintf("%s-%d", spec.Group, spec.Member),
				AckWithResponse:   true,
				ReceiverQueueSize: groupReceiverQueue,
				// The subscription exists (JoinGroup made it): this only
				// matters if it was deleted in between.
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			})
			ch <- made{c, err}
		}()
		select {
		case <-ctx.Done():
			go func() {
				if m := <-ch; m.c != nil {
					m.c.Close()
				}
			}()
			return nil, d.unreachable(fmt.Sprintf("group %s: member %d could not subscribe to %s", spec.Group, spec.Member, tn), ctx.Err())
		case m := <-ch:
			if m.err == nil {
				return m.c, nil
			}
			if strings.Contains(m.err.Error(), "TopicNotFound") {
				return nil, fmt.Errorf("group %s: %s: %w", spec.Group, tn, drivers.ErrTopicMissing)
			}
			select {
			case <-ctx.Done():
				return nil, d.unreachable(fmt.Sprintf("group %s: member %d could not subscribe to %s", spec.Group, spec.Member, tn), m.err)
			case <-time.After(groupJoinRetry):
			}
		}
	}
}

// groupMember is one member of a group. Used by one goroutine
// (drivers.GroupMember).
type groupMember struct {
	d     *Driver
	group string
	topic *utils.TopicName
	c     pulsar.Consumer
	// pending is what the member was delivered and has not acked, per
	// partition, in the order it came.
	pending map[int32][]pulsar.Message
}

// entryOpen reports whether msg is a message of a batch whose later
// messages have not come yet (it is not its batch's last).
func entryOpen(id pulsar.MessageID) bool {
	return id.BatchIdx() >= 0 && id.BatchSize() > 0 && id.BatchIdx() < id.BatchSize()-1
}

// Poll implements drivers.GroupMember: it waits for a first message,
// takes what else arrives within groupGather (at most groupMaxPoll), and
// then waits up to groupWholeEntry for the rest of any batch it holds part
// of (the broker dispatches an entry whole, so the rest is in the queue).
func (m *groupMember) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	ch := m.c.Chan()
	var out []drivers.Delivery
	open := map[int32]bool{} // partitions whose last message ends a batch not complete yet
	take := func(cm pulsar.ConsumerMessage) error {
		msg := cm.Message
		id := msg.ID()
		p := id.PartitionIdx()
		pos, err := Pack(id.LedgerID(), id.EntryID(), id.BatchIdx())
		if err != nil {
			return fmt.Errorf("group %s: a message of %s: %w", m.group, msg.Topic(), err)
		}
		out = append(out, drivers.Delivery{Pos: drivers.Position{Partition: p, Offset: pos}, Value: msg.Payload(), At: time.Now()})
		m.pending[p] = append(m.pending[p], msg)
		open[p] = entryOpen(id)
		return nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case cm, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("group %s: the member's consumer was closed", m.group)
		}
		if err := take(cm); err != nil {
			return out, err
		}
	}
	gather := time.NewTimer(groupGather)
	defer gather.Stop()
	for len(out) < groupMaxPoll {
		select {
		case <-ctx.Done():
			return out, nil
		case <-gather.C:
			return m.wholeEntries(ctx, ch, out, open, take)
		case cm, ok := <-ch:
			if !ok {
				return out, nil
			}
			if err := take(cm); err != nil {
				return out, err
			}
		}
	}
	return m.wholeEntries(ctx, ch, out, open, take)
}

// wholeEntries goes on taking messages while some partition's last one is
// part of a batch not complete yet, for at most groupWholeEntry.
func (m *groupMember) wholeEntries(ctx context.Context, ch <-chan pulsar.ConsumerMessage, out []drivers.Delivery,
	open map[int32]bool, take func(pulsar.ConsumerMessage) error) ([]drivers.Delivery, error) {
	anyOpen := func() bool {
		for _, o := range open {
			if o {
				return true
			}
		}
		return false
	}
	if !anyOpen() {
		return out, nil
	}
	limit := time.NewTimer(groupWholeEntry)
	defer limit.Stop()
	for anyOpen() {
		select {
		case <-ctx.Done():
			return out, nil
		case <-limit.C:
			return out, nil
		case cm, ok := <-ch:
			if !ok {
				return out, nil
			}
			if err := take(cm); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Commit implements drivers.GroupMember: it acks every message delivered
// to the member below next[p], in one request per partition that the
// broker answers, then reads the subscription's mark-delete position on
// each partition. A partition's answer is acknowledged when its acks
// were, at that position (committedFloor); a partition with nothing
// delivered below next[p] answers an error. err is for acks that got no
// answer before ctx ended.
func (m *groupMember) Commit(ctx context.Context, next map[int32]int64) ([]drivers.CommitAnswer, error) {
	parts := make([]int32, 0, len(next))
	for p := range next {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	acks := map[int32][]pulsar.Message{}
	var all []pulsar.MessageID
	for _, p := range parts {
		var keep []pulsar.Message
		for _, msg := range m.pending[p] {
			id := msg.ID()
			if pos, err := Pack(id.LedgerID(), id.EntryID(), id.BatchIdx()); err == nil && pos < next[p] {
				acks[p] = append(acks[p], msg)
				all = append(all, id)
			} else {
				keep = append(keep, msg)
			}
		}
		m.pending[p] = keep
	}
	// Messages whose ack did not go through stay the member's to ack: a
	// Shared subscription without an ack timeout keeps them with this
	// consumer, and the partition's mark-delete could not move past them.
	putBack := func(p int32) { m.pending[p] = append(acks[p], m.pending[p]...) }
	failed := map[int32]error{}
	if len(all) > 0 {
		done := make(chan error, 1)
		go func() { done <- m.c.AckIDList(all) }()
		select {
		case <-ctx.Done():
			for _, p := range parts {
				putBack(p)
			}
			return nil, fmt.Errorf("group %s: the acks of %d messages got no answer: %w", m.group, len(all), ctx.Err())
		case err := <-done:
			var ae pulsar.AckError
			switch {
			case errors.As(err, &ae):
				for id, e := range ae {
					if failed[id.PartitionIdx()] == nil {
						failed[id.PartitionIdx()] = fmt.Errorf("the ack of %v was refused: %w", id, e)
					}
				}
			case err != nil:
				for _, p := range parts {
					putBack(p)
				}
				return nil, fmt.Errorf("group %s: ack %d messages: %w", m.group, len(all), err)
			}
			for p := range failed {
				putBack(p)
			}
		}
	}
	out := make([]drivers.CommitAnswer, 0, len(parts))
	for _, p := range parts {
		a := drivers.CommitAnswer{Partition: p, Offset: next[p]}
		switch {
		case len(acks[p]) == 0:
			a.Err = fmt.Errorf("member of group %s was delivered nothing of partition %d of %s below %d to ack", m.group, p, m.topic, next[p])
		case failed[p] != nil:
			a.Err = failed[p]
		default:
			floor, ok, err := m.d.markDelete(ctx, m.topic, p, m.group)
			switch {
			case err != nil:
				a.Err = fmt.Errorf("every ack of group %s below %d on partition %d was answered, but its mark-delete position could not be read: %w", m.group, next[p], p, err)
			case !ok:
				a.Err = fmt.Errorf("every ack of group %s below %d on partition %d was answered, but the partition has no subscription %s now", m.group, next[p], p, m.group)
			default:
				a.Offset = floor
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// Close implements drivers.GroupMember: it acks nothing and closes the
// member's consumer; the broker gives what it held unacked to the other
// members. The subscriptions stay: they are the group's.
func (m *groupMember) Close(ctx context.Context) error {
	m.pending = map[int32][]pulsar.Message{}
	if err := drivers.Within(ctx, m.c.Close); err != nil {
		return fmt.Errorf("group %s: close the member's consumer: %w", m.group, err)
	}
	return nil
}

// markDelete reads sub's mark-delete position on partition p of tn from
// the owning broker's internal stats, as committedFloor maps it; ok is
// false when the partition has no such subscription.
func (d *Driver) markDelete(ctx context.Context, tn *utils.TopicName, p int32, sub string) (int64, bool, error) {
	floors, err := d.markDeletes(ctx, tn, p, sub)
	if err != nil {
		return -1, false, err
	}
	f, ok := floors[sub]
	return f, ok, nil
}

// markDeletes reads the mark-delete positions of subs on partition p of
// tn in one internal-stats call, as committedFloor maps them; a
// subscription the partition does not have is missing.
func (d *Driver) markDeletes(ctx context.Context, tn *utils.TopicName, p int32, subs ...string) (map[string]int64, error) {
	pt, err := tn.GetPartition(int(p))
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, groupAdminTimeout)
	defer cancel()
	st, err := d.admin.Topics().GetInternalStatsWithContext(actx, *pt)
	if err != nil {
		return nil, d.unreachable("read the internal stats of "+pt.String(), err)
	}
	out := map[string]int64{}
	for _, sub := range subs {
		cs, ok := st.Cursors[sub]
		if !ok {
			continue
		}
		floor, err := committedFloor(cs.MarkDeletePosition)
		if err != nil {
			return nil, fmt.Errorf("subscription %s on %s: %w", sub, pt, err)
		}
		out[sub] = floor
	}
	return out, nil
}

// CommittedOffsets implements drivers.GroupOffsetReader: per partition,
// the group's subscription's mark-delete position, as the broker that
// owns the partition reports it (committedFloor). A partition without the
// subscription is missing, and so is one where the group has acked
// nothing yet: its subscription is still where its read-back subscription
// (made at the same start, never acking) is.
func (d *Driver) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	tn, n, err := d.partitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	rb := ReadbackSubscription(group)
	for p := range n {
		floors, err := d.markDeletes(ctx, tn, int32(p), group, rb)
		if err != nil {
			return nil, err
		}
		f, ok := floors[group]
		if start, made := floors[rb]; ok && (!made || f > start) {
			out[int32(p)] = f
		}
	}
	return out, nil
}

// CommitPromise implements drivers.GroupConsumer from the broker's
// runtime configuration: the broker answers an ack before the cursor is
// written, so an acknowledged ack is never durable (see the package's
// group notes); the meaning says how soon it is written and where.
func (d *Driver) CommitPromise(ctx context.Context, _ string) (drivers.CommitPromise, error) {
	cfg, err := d.admin.Brokers().GetRuntimeConfigurationsWithContext(ctx)
	if err != nil {
		return drivers.CommitPromise{}, d.unreachable("read the broker's configuration", err)
	}
	return groupPromise(cfg), nil
}

// groupPromise says what an ack means under the broker's configuration
// cfg (runtime configuration names; a missing one is said to be unknown).
func groupPromise(cfg map[string]string) drivers.CommitPromise {
	get := func(k string) string {
		if v, ok := cfg[k]; ok && v != "" {
			return v
		}
		return "?"
	}
	rate := get("managedLedgerDefaultMarkDeleteRateLimit")
	when := fmt.Sprintf("at most %s times a second per subscription (managedLedgerDefaultMarkDeleteRateLimit=%s), what that holds back every %s s (managedLedgerCursorPositionFlushSeconds) or at a clean topic close",
		rate, rate, get("managedLedgerCursorPositionFlushSeconds"))
	if r, err := strconv.ParseFloat(rate, 64); err == nil && r <= 0 {
		when = "after each ack, asynchronously (managedLedgerDefaultMarkDeleteRateLimit=" + rate + ": no rate limit)"
	}
	s := fmt.Sprintf("an ack is answered once the broker applied it to the subscription's cursor in memory; the cursor's mark-delete position is written to its cursor ledger (write quorum %s, ack quorum %s) %s: a broker crash rolls the subscription back to the last written position",
		get("managedLedgerDefaultWriteQuorum"), get("managedLedgerDefaultAckQuorum"), when)
	return drivers.CommitPromise{Meaning: s, Durable: false}
}

// GroupCoordinator implements drivers.GroupCoordinatorFinder: the broker
// that owns the first partition of the topic the group was joined on
// through this driver, which holds that partition's subscription cursor
// (each partition's owner holds its own). It asks the broker (a lookup
// and the active brokers, at once); when the broker does not answer
// within ctx (the fault injector allows 2 s, and a loaded standalone's
// admin API can take longer), it answers the owner last found for the
// group, at its join or an earlier call: a partition's owner changes only
// when its bundle is unloaded or its broker dies.
func (d *Driver) GroupCoordinator(ctx context.Context, group string) (int32, error) {
	d.mu.Lock()
	topic, ok := d.groups[group]
	d.mu.Unlock()
	if !ok {
		return -1, fmt.Errorf("group %s: no member joined it through this driver, so the topic whose cursors it has is not known", group)
	}
	id, err := d.ownerOfFirst(ctx, topic)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.coordinators[group] = id
		return id, nil
	}
	if last, ok := d.coordinators[group]; ok {
		return last, nil
	}
	return -1, err
}

// learnCoordinator finds group's coordinator once, for GroupCoordinator to
// fall back on; a failure is left to GroupCoordinator's own call.
func (d *Driver) learnCoordinator(ctx context.Context, group, topic string) {
	ctx, cancel := context.WithTimeout(ctx, groupAdminTimeout)
	defer cancel()
	if id, err := d.ownerOfFirst(ctx, topic); err == nil {
		d.mu.Lock()
		d.coordinators[group] = id
		d.mu.Unlock()
	}
}

// ownerOfFirst is the node ID (as Topology numbers them) of the broker
// that owns partition 0 of topic.
func (d *Driver) ownerOfFirst(ctx context.Context, topic string) (int32, error) {
	pt, err := d.partition(topic, 0)
	if err != nil {
		return -1, err
	}
	var ids map[string]int32
	idsErr := make(chan error, 1)
	go func() {
		var err error
		ids, err = d.brokerIDs(ctx)
		idsErr <- err
	}()
	look, err := d.admin.Topics().LookupWithContext(ctx, *pt)
	if err2 := <-idsErr; err2 != nil {
		return -1, err2
	}
	if err != nil {
		return -1, d.unreachable("look up the owner of "+pt.String(), err)
	}
	u, err := url.Parse(look.HTTPURL)
	if err != nil {
		return -1, fmt.Errorf("the owner of %s: %q: %w", pt, look.HTTPURL, err)
	}
	id, ok := ids[u.Host]
	if !ok {
		return -1, fmt.Errorf("%s is owned by %s, which is not an active broker", pt, u.Host)
	}
	return id, nil
}
