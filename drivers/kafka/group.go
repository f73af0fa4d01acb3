package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The driver's consumer group (drivers.GroupConsumer): each member is a
// kgo client in the group with automatic commits off and rebalances held
// from a poll until the commit after it (kgo.BlockRebalanceOnPoll), so
// that a commit never names a partition the group has given to another
// member since. Commits are kgo's CommitOffsetsSync: the broker's answer
// per partition is what the ledger records.

// offsetsTopic is where Kafka keeps a group's commits; the leader of the
// group's partition of it is the group's coordinator.
const offsetsTopic = "__consumer_offsets"

// Group timings: short enough that a member that died unasked is noticed
// within a truth's time, long enough for a coordinator's failover.
const (
	groupSession   = 10 * time.Second
	groupHeartbeat = time.Second
	groupRebalance = 10 * time.Second
	maxPollRecords = 2000
)

// JoinGroup implements drivers.GroupConsumer. A group with no commit on
// the topic yet is first given the run's start offsets (kadm, before any
// member joins), so that it begins where the run does and not at the
// log's start of a reused topic.
func (d *Driver) JoinGroup(ctx context.Context, spec drivers.GroupSpec) (drivers.GroupMember, error) {
	if spec.Member == 0 && len(spec.StartOffsets) > 0 {
		if err := d.seedGroup(ctx, spec); err != nil {
			return nil, err
		}
	}
	opts, err := d.cfg.commonOpts()
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		kgo.ClientID(fmt.Sprintf("ackcheck-group-%d", spec.Member)),
		kgo.ConsumerGroup(spec.Group),
		kgo.ConsumeTopics(spec.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(groupSession),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalance),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka group %s member %d: %w", spec.Group, spec.Member, err)
	}
	return &member{cl: cl, topic: spec.Topic}, nil
}

// seedGroup commits the run's start offsets for a group that has none on
// the topic.
func (d *Driver) seedGroup(ctx context.Context, spec drivers.GroupSpec) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := d.seedGroupOnce(ctx, spec)
		if err == nil || !kerr.IsRetriable(err) {
			return err
		}
		// A coordinator just made (a new offsets topic) is still loading.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (d *Driver) seedGroupOnce(ctx context.Context, spec drivers.GroupSpec) error {
	if _, err := d.waitCoordinator(ctx, spec.Group); err != nil {
		return err
	}
	have, err := d.CommittedOffsets(ctx, spec.Group, spec.Topic)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		return nil
	}
	os := make(kadm.Offsets)
	for p, o := range spec.StartOffsets {
		os.Add(kadm.Offset{Topic: spec.Topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	resp, err := d.adm.CommitOffsets(ctx, spec.Group, os)
	if err != nil {
		return d.unreachable("commit the start offsets of group "+spec.Group, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("commit the start offsets of group %s on %s: %w", spec.Group, spec.Topic, err)
	}
	return nil
}

// member is one kgo client in the group.
type member struct {
	cl    *kgo.Client
	topic string
}

// Poll implements drivers.GroupMember.
func (m *member) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	m.cl.AllowRebalance() // a Poll without a Commit after the last one
	fs := m.cl.PollRecords(ctx, maxPollRecords)
	at := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fs.IsClientClosed() {
		return nil, kgo.ErrClientClosed
	}
	var out []drivers.Delivery
	fs.EachRecord(func(r *kgo.Record) {
		if r.Topic == m.topic {
			out = append(out, drivers.Delivery{Pos: drivers.Position{Partition: r.Partition, Offset: r.Offset}, Value: r.Value, At: at})
		}
	})
	return out, nil
}

// Commit implements drivers.GroupMember with CommitOffsetsSync, which
// retries what the broker answers retriably (a coordinator moving) until
// ctx ends.
func (m *member) Commit(ctx context.Context, next map[int32]int64) ([]drivers.CommitAnswer, error) {
	defer m.cl.AllowRebalance()
	if len(next) == 0 {
		return nil, nil
	}
	offs := make(map[int32]kgo.EpochOffset, len(next))
	for p, o := range next {
		offs[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var answers []drivers.CommitAnswer
	var cerr error
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.topic: offs}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		seen := map[int32]bool{}
		for _, t := range resp.Topics {
			if t.Topic != m.topic {
				continue
			}
			for _, p := range t.Partitions {
				if o, ok := next[p.Partition]; ok && !seen[p.Partition] {
					seen[p.Partition] = true
					answers = append(answers, drivers.CommitAnswer{Partition: p.Partition, Offset: o, Err: kerr.ErrorForCode(p.ErrorCode)})
				}
			}
		}
		for p, o := range next {
			if !seen[p] {
				answers = append(answers, drivers.CommitAnswer{Partition: p, Offset: o, Err: errors.New("the broker's answer did not name the partition")})
			}
		}
	})
	if cerr != nil {
		return nil, fmt.Errorf("commit: %w", cerr)
	}
	return answers, nil
}

// Close implements drivers.GroupMember: the member leaves the group
// without committing (automatic commits are off).
func (m *member) Close(ctx context.Context) error {
	if err := drivers.Within(ctx, m.cl.CloseAllowingRebalance); err != nil {
		return fmt.Errorf("kafka group member: leave the group: %w", err)
	}
	return nil
}

// CommitPromise implements drivers.GroupConsumer from the offsets
// topic's replication as the cluster reports it (its broker setting
// offsets.topic.replication.factor when the topic does not exist yet),
// and the brokers' flush setting for it.
func (d *Driver) CommitPromise(ctx context.Context, group string) (drivers.CommitPromise, error) {
	// The first lookup of a coordinator makes the offsets topic.
	if _, err := d.waitCoordinator(ctx, group); err != nil {
		return drivers.CommitPromise{}, err
	}
	rf := 0
	if tds, err := d.adm.ListTopicsWithInternal(ctx, offsetsTopic); err == nil {
		if td, ok := tds[offsetsTopic]; ok && td.Err == nil {
			for _, p := range td.Partitions {
				rf = max(rf, len(p.Replicas))
			}
		}
	}
	if rf == 0 {
		var ids []int32
		if bs, err := d.adm.ListBrokers(ctx); err == nil {
			ids = bs.NodeIDs()
		}
		rcs, err := d.adm.DescribeBrokerConfigs(ctx, ids...)
		if err != nil {
			return drivers.CommitPromise{}, d.unreachable("describe the brokers' configs", err)
		}
		for _, rc := range rcs {
			if v := effective(rc, "offsets.topic.replication.factor"); v != "" && v != "?" {
				fmt.Sscan(v, &rf)
				break
			}
		}
	}
	if rf == 0 {
		return drivers.CommitPromise{}, fmt.Errorf("the cluster reports neither the offsets topic nor offsets.topic.replication.factor")
	}
	flush := "?"
	if rc, err := d.topicConfigs(ctx, offsetsTopic); err == nil {
		flush = effective(rc, "flush.messages")
	}
	synced := "from memory (page cache): none fsyncs it before answering"
	if flush == "1" {
		synced = "fsynced"
	}
	return drivers.CommitPromise{
		Meaning: fmt.Sprintf("written to %s with acks=all, replication factor %d, %s", offsetsTopic, rf, synced),
		Durable: rf > 1,
	}, nil
}

// waitCoordinator asks for group's coordinator until the cluster names
// one or ctx ends: a cluster without the offsets topic answers
// COORDINATOR_NOT_AVAILABLE while it makes it.
func (d *Driver) waitCoordinator(ctx context.Context, group string) (int32, error) {
	for {
		n, err := d.GroupCoordinator(ctx, group)
		if err == nil || !kerr.IsRetriable(err) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w (waited for the cluster to name a coordinator: %w)", err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// GroupCoordinator implements drivers.GroupCoordinatorFinder: the node
// the cluster names the group's coordinator now.
func (d *Driver) GroupCoordinator(ctx context.Context, group string) (int32, error) {
	r, ok := d.adm.FindGroupCoordinators(ctx, group)[group]
	if !ok {
		return -1, fmt.Errorf("find the coordinator of group %s: no answer", group)
	}
	if r.Err != nil {
		return -1, fmt.Errorf("find the coordinator of group %s: %w", group, r.Err)
	}
	return r.NodeID, nil
}

// CommittedOffsets implements drivers.GroupOffsetReader with kadm's
// FetchOffsets: the offsets the coordinator holds committed.
func (d *Driver) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resp, err := d.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil // kfake's answer for a group that never committed
	}
	if err != nil {
		return nil, fmt.Errorf("fetch the committed offsets of group %s: %w", group, err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("fetch the committed offset of group %s on %s/%d: %w", group, topic, p, o.Err)
		}
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}
