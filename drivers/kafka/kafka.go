package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Driver talks to one Kafka cluster. Create it with New.
type Driver struct {
	cfg   Config
	admin *kgo.Client
	adm   *kadm.Client
}

var _ drivers.Driver = (*Driver)(nil)
var _ drivers.LogStarter = (*Driver)(nil)

// New validates cfg and connects an admin client. It does not fail when no
// broker answers yet; the first call that needs one does, wrapped in
// drivers.ErrUnreachable.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	opts, err := cfg.commonOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("ackcheck-admin"))...)
	if err != nil {
		return nil, fmt.Errorf("kafka admin client: %w", err)
	}
	return &Driver{cfg: cfg, admin: cl, adm: kadm.NewClient(cl)}, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return driverName }

// driverName is the value of --driver.
const driverName = "kafka"

// Config returns the configuration in force, defaults applied.
func (d *Driver) Config() Config { return d.cfg }

// Close implements drivers.Driver.
func (d *Driver) Close() error { d.admin.Close(); return nil }

// unreachable turns a connection failure into a sentence a user can act on.
func (d *Driver) unreachable(what string, err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	hint := "and the TLS/SASL flags"
	if d.cfg.SASLMechanism != "" {
		// A broker that refuses credentials may just close the connection.
		hint = fmt.Sprintf("and, if they run, whether they accept SASL %s for user %q (--sasl-mechanism, --sasl-username, --sasl-password)",
			strings.ToUpper(d.cfg.SASLMechanism), d.cfg.SASLUsername)
	}
	if d.cfg.NetNS != "" {
		hint = fmt.Sprintf("and that their network namespaces %s-* exist (ackcheck cluster kafka status --dir <the cluster's dir>)", d.cfg.NetNS)
	}
	return fmt.Errorf("%s: %w: %v (check --brokers %s, that the brokers run, %s)",
		what, drivers.ErrUnreachable, err, strings.Join(d.cfg.Brokers, ","), hint)
}

// EnsureTopic implements drivers.Driver.
func (d *Driver) EnsureTopic(ctx context.Context, spec drivers.TopicSpec) (drivers.TopicInfo, error) {
	configs := make(map[string]*string, len(spec.Configs))
	for k, v := range spec.Configs {
		configs[k] = &v
	}
	resp, err := d.adm.CreateTopic(ctx, int32(spec.Partitions), int16(spec.ReplicationFactor), configs, spec.Name)
	if err == nil {
		err = resp.Err
	}
	created := err == nil
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if errors.Is(err, kerr.InvalidReplicationFactor) {
			return drivers.TopicInfo{}, fmt.Errorf("create topic %s with replication factor %d: %w (the cluster has fewer brokers; lower --replication-factor)", spec.Name, spec.ReplicationFactor, err)
		}
		return drivers.TopicInfo{}, d.unreachable("create topic "+spec.Name, err)
	}
	// Describe it in both cases: partitions and replication factor as the
	// cluster has them, not as asked. A new topic may take a moment to
	// appear in every broker's metadata, and its brokers a while to make
	// its logs: 2,000 partitions at RF 3 (6,000 logs) took the local
	// 3-node cluster about a minute on 2 cores, answering ListOffsets with
	// NOT_LEADER_FOR_PARTITION meanwhile.
	wait := settleWait(spec.Partitions)
	deadline := time.Now().Add(wait)
	for {
		info, leaderless, err := d.describeTopic(ctx, spec.Name)
		if err == nil && len(info.Partitions) > 0 && leaderless == 0 {
			// Every broker must know the topic before the run relies on
			// it: right after creation, a broker whose metadata lags
			// answers ListOffsets with UNKNOWN_TOPIC_OR_PARTITION.
			var ends drivers.Offsets
			if ends, err = d.listOffsetsOnce(ctx, spec.Name, d.adm.ListEndOffsets); err == nil && ends.Len() == len(info.Partitions) {
				info.Created = created
				return info, nil
			}
		}
		if err == nil && leaderless > 0 {
			err = fmt.Errorf("topic %s: %d partitions still have no leader after %s", spec.Name, leaderless, wait)
		} else if err == nil {
			err = fmt.Errorf("topic %s: its offsets could not be listed for %s", spec.Name, wait)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("topic %s has no partitions in the metadata", spec.Name)
			}
			return drivers.TopicInfo{}, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settleWait is how long EnsureTopic waits for a topic of n partitions
// to have a leader and listable offsets everywhere: 30 s, and 30 ms more
// per partition (2,000: 90 s), at most 10 minutes.
func settleWait(n int) time.Duration {
	return min(30*time.Second+time.Duration(n)*30*time.Millisecond, 10*time.Minute)
}

// describeTopic returns the topic as the metadata has it, and how many of
// its partitions have no leader yet.
func (d *Driver) describeTopic(ctx context.Context, topic string) (drivers.TopicInfo, int, error) {
	md, err := d.adm.Metadata(ctx, topic)
	if err != nil {
		return drivers.TopicInfo{}, 0, d.unreachable("describe topic "+topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return drivers.TopicInfo{}, 0, fmt.Errorf("topic %s: %w", topic, drivers.ErrTopicMissing)
	}
	if td.Err != nil {
		return drivers.TopicInfo{}, 0, fmt.Errorf("describe topic %s: %w", topic, td.Err)
	}
	info := drivers.TopicInfo{Name: topic}
	leaderless := 0
	for p, pd := range td.Partitions {
		info.Partitions = append(info.Partitions, p)
		info.ReplicationFactor = max(info.ReplicationFactor, len(pd.Replicas))
		if pd.Leader < 0 || pd.Err != nil {
			leaderless++
		}
	}
	sort.Slice(info.Partitions, func(i, j int) bool { return info.Partitions[i] < info.Partitions[j] })
	return info, leaderless, nil
}

// EndOffsets implements drivers.Driver.
func (d *Driver) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	return d.listOffsets(ctx, topic, d.adm.ListEndOffsets)
}

// StartOffsets implements drivers.LogStarter: the first offset still in
// each partition's log (Kafka's log-start offset).
func (d *Driver) StartOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	return d.listOffsets(ctx, topic, d.adm.ListStartOffsets)
}

// listOffsets retries retriable errors (a partition between leaders) for up
// to 15 seconds: the answer is needed, and a failover takes a few seconds.
func (d *Driver) listOffsets(ctx context.Context, topic string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (drivers.Offsets, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := d.listOffsetsOnce(ctx, topic, list)
		var ke *kerr.Error
		if err == nil || !errors.As(err, &ke) || !ke.Retriable || errors.Is(err, drivers.ErrTopicMissing) ||
			time.Now().After(deadline) || ctx.Err() != nil {
			return out, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (d *Driver) listOffsetsOnce(ctx context.Context, topic string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (drivers.Offsets, error) {
	lo, err := list(ctx, topic)
	if err != nil {
		return drivers.Offsets{}, d.unreachable("list offsets of "+topic, err)
	}
	ps, ok := lo[topic]
	if !ok || len(ps) == 0 {
		return drivers.Offsets{}, fmt.Errorf("list offsets of %s: %w", topic, drivers.ErrTopicMissing)
	}
	out := drivers.MakeOffsets(len(ps))
	for p, o := range ps {
		if o.Err != nil {
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) || errors.Is(o.Err, kerr.UnknownTopicID) {
				return drivers.Offsets{}, fmt.Errorf("list offsets of %s: %w", topic, drivers.ErrTopicMissing)
			}
			return drivers.Offsets{}, fmt.Errorf("list offsets of %s/%d: %w", topic, p, o.Err)
		}
		out.Set(p, o.Offset)
	}
	return out, nil
}

// Topology implements drivers.Driver.
func (d *Driver) Topology(ctx context.Context, topic string) (drivers.Topology, error) {
	md, err := d.adm.Metadata(ctx, topic)
	if err != nil {
		return drivers.Topology{}, d.unreachable("read cluster metadata", err)
	}
	t := drivers.Topology{At: time.Now(), Controller: md.Controller}
	if id, err := d.activeController(ctx); err == nil {
		t.Controller = id
	}
	for _, b := range md.Brokers {
		n := drivers.Node{ID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			n.Rack = *b.Rack
		}
		t.Nodes = append(t.Nodes, n)
	}
	if td, ok := md.Topics[topic]; ok {
		for _, pd := range td.Partitions.Sorted() {
			ps := drivers.PartitionState{
				Partition: pd.Partition, Leader: pd.Leader, Epoch: pd.LeaderEpoch,
				Replicas: pd.Replicas, ISR: pd.ISR,
			}
			if pd.Err != nil {
				ps.Err = pd.Err.Error()
			}
			t.Partitions = append(t.Partitions, ps)
		}
	}
	d.freshest(ctx, topic, t)
	return t, nil
}

// freshest replaces each partition's state in t with the freshest view
// among every broker's: a broker that just restarted answers from the
// metadata it had replayed so far, which can hold an in-sync set from
// before the fault (seen after a power loss of every broker: a restarted
// broker still listed the old full ISR while the controller had elected
// an unclean leader with an ISR of one). The view with the highest leader
// epoch wins; among views of that epoch, only replicas every one lists
// count as in sync, so that a replica is in sync only once no up-to-date
// broker says otherwise. Brokers that do not answer are left out.
func (d *Driver) freshest(ctx context.Context, topic string, t drivers.Topology) {
	views := map[int32][]kmsg.MetadataResponseTopicPartition{}
	for _, n := range t.Nodes {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := d.admin.Broker(int(n.ID)).Request(bctx, req)
		cancel()
		if err != nil {
			continue
		}
		for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
			if rt.Topic == nil || *rt.Topic != topic || rt.ErrorCode != 0 {
				continue
			}
			for _, p := range rt.Partitions {
				if p.ErrorCode == 0 {
					views[p.Partition] = append(views[p.Partition], p)
				}
			}
		}
	}
	for i := range t.Partitions {
		ps := &t.Partitions[i]
		vs := views[ps.Partition]
		best := int32(-1)
		for _, v := range vs {
			best = max(best, v.LeaderEpoch)
		}
		if len(vs) == 0 || best < ps.Epoch {
			continue
		}
		first := true
		for _, v := range vs {
			if v.LeaderEpoch != best {
				continue
			}
			if first {
				ps.Leader, ps.Epoch, ps.Replicas, ps.ISR = v.Leader, v.LeaderEpoch, v.Replicas, slices.Clone(v.ISR)
				first = false
				continue
			}
			ps.ISR = slices.DeleteFunc(ps.ISR, func(r int32) bool { return !slices.Contains(v.ISR, r) })
		}
	}
}

// NewProducer implements drivers.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, id uint32) (drivers.Producer, error) {
	opts, err := d.cfg.commonOpts()
	if err != nil {
		return nil, err
	}
	codec, _ := d.cfg.compression()
	opts = append(opts,
		kgo.ClientID(fmt.Sprintf("ackcheck-producer-%d", id)),
		kgo.RequiredAcks(d.cfg.acks()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(d.cfg.Linger),
		kgo.RecordDeliveryTimeout(d.cfg.DeliveryTimeout),
		kgo.MaxBufferedRecords(d.cfg.MaxBuffered),
		kgo.RecordPartitioner(partitioner{}),
	)
	if !*d.cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer %d: %w", id, err)
	}
	return &producer{cl: cl, topic: topic, noAck: d.cfg.Acks == "0"}, nil
}

type producer struct {
	cl    *kgo.Client
	topic string
	noAck bool
}

func (p *producer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	// The load's send time is the timestamp franz-go would give the record
	// (it reads the clock when Timestamp is zero): one clock read less.
	r := &kgo.Record{Topic: p.topic, Key: m.Key, Value: m.Value, Partition: m.Partition, Timestamp: m.SentAt}
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		done(classify(r, err, p.noAck))
	})
}

// ReusesValues implements drivers.ValueReuser: franz-go does not touch a
// record once its promise has been called.
func (d *Driver) ReusesValues() {}

var _ drivers.ValueReuser = (*Driver)(nil)

func (p *producer) Close(ctx context.Context) error {
	err := p.cl.Flush(ctx)
	p.cl.Close() // fails what is still buffered: each gets its done(Unknown)
	if err != nil {
		return fmt.Errorf("flush producer: %w", err)
	}
	return nil
}

// classify maps a produce result to an outcome. Only errors the broker
// returns before appending, and that kgo does not retry, are Rejected;
// anything that may follow a stored write is Unknown.
func classify(r *kgo.Record, err error, noAck bool) drivers.Outcome {
	if err == nil {
		off := r.Offset
		if noAck {
			off = -1 // acks=0: the broker says nothing, the offset is made up
		}
		return drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: r.Partition, Offset: off}}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) &&
		!errors.Is(err, kerr.RequestTimedOut) {
		return drivers.Outcome{Status: drivers.Rejected, Err: err}
	}
	return drivers.Outcome{Status: drivers.Unknown, Err: err}
}

// partitioner sends a keyed record where Kafka's default partitioner would
// (murmur2 of the key) and an unkeyed one to the partition the load chose,
// so that round-robin is exact and the same across brokers.
type partitioner struct{}

func (partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{keyed: kgo.StickyKeyPartitioner(nil).ForTopic(t)}
}

type topicPartitioner struct{ keyed kgo.TopicPartitioner }

func (topicPartitioner) RequiresConsistency(*kgo.Record) bool { return true }
func (tp topicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key == nil && r.Partition >= 0 {
		return int(r.Partition) % n
	}
	return tp.keyed.Partition(r, n)
}

// ProbeNode implements drivers.NodeProber: it sends a Metadata request to
// node id itself and succeeds when that node answers it.
func (d *Driver) ProbeNode(ctx context.Context, id int32) error {
	req := kmsg.NewPtrMetadataRequest()
	resp, err := d.admin.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	if _, ok := resp.(*kmsg.MetadataResponse); !ok {
		return fmt.Errorf("node %d: unexpected answer %T", id, resp)
	}
	return nil
}

// activeController asks the KRaft quorum who leads __cluster_metadata: the
// active controller. In KRaft mode the Metadata response's controller ID is
// a random broker, kept only for old clients, so it cannot be used to
// target the controller.
func (d *Driver) activeController(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	part.Partition = 0
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, d.admin)
	if err != nil {
		return -1, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return -1, err
			}
			if p.LeaderID >= 0 {
				return p.LeaderID, nil
			}
		}
	}
	return -1, errors.New("the quorum has no leader now")
}
