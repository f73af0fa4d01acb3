package kafka

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bare franz-go doing ackcheck's work and nothing else, for `ackcheck bench
// --peer`, which measures ackcheck against it: the same messages, clients,
// partitions and pacing, with none of ackcheck's ledger or checks.

// Peer implements drivers.PeerBencher: bare franz-go against the cluster
// at addrs; embedded, when it is this package's kfake, has every topic
// CreateTopics makes placed alike.
func (Profile) Peer(addrs []string, embedded drivers.Embedded) (drivers.Peer, error) {
	fake, _ := embedded.(*Embedded)
	return &peer{brokers: addrs, fake: fake}, nil
}

var _ drivers.PeerBencher = Profile{}

// peer is bare franz-go for bench --peer.
type peer struct {
	brokers []string
	fake    *Embedded // nil: a real cluster, placed as it places
}

func (p *peer) CreateTopics(ctx context.Context, partitions int, names []string) error {
	return createPeerTopics(ctx, p.brokers, partitions, p.fake, names)
}

func (p *peer) DeleteTopics(ctx context.Context, names []string) error {
	return deleteTopics(ctx, p.brokers, names)
}

func (p *peer) Produce(ctx context.Context, w drivers.PeerWork) (drivers.PeerProduced, error) {
	return bareProduce(ctx, p.brokers, w)
}

func (p *peer) Consume(ctx context.Context, topic string) (int64, error) {
	return bareConsume(ctx, p.brokers, topic)
}

// Driver opens ackcheck's Kafka driver with the bare producer's linger and
// otherwise the defaults the bare client has too (acks=all, idempotent, no
// compression).
func (p *peer) Driver(w drivers.PeerWork) (drivers.Driver, any, error) {
	d, err := New(Config{Brokers: p.brokers, Linger: w.Linger})
	if err != nil {
		return nil, nil, err
	}
	return d, d.Config(), nil
}

// createPeerTopics creates a round's topics, ackcheck's too (its run then
// finds the topic there and uses it as it is), all alike. In kfake, which
// gives each partition a leader at random, partition p of every topic is
// then led by broker p mod 3. A producer sends one request per leader, so
// its CPU per message depends on the placement, and with leaders placed at
// random per topic the two producers of a pair did not meet the same
// broker. With the code unchanged, bare franz-go took 1.7-2.0 CPU-s per 1M
// in one invocation and 2.5-2.9 in the next; the placement is one cause
// of such swings this removes, not shown to be the only one.
func createPeerTopics(ctx context.Context, brokers []string, partitions int, fake *Embedded, names []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	rf := int16(3)
	if len(brokers) < 3 {
		rf = int16(len(brokers))
	}
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, int32(partitions), rf, nil, names...)
	if err != nil {
		return fmt.Errorf("create the round's topics: %w", err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("create the round's topics: %w", err)
	}
	if fake == nil {
		return nil
	}
	for _, t := range names {
		for p := range int32(partitions) {
			if err := fake.c.MoveTopicPartition(t, p, p%3); err != nil {
				return fmt.Errorf("lead partition %d of %s by broker %d: %w", p, t, p%3, err)
			}
		}
	}
	return nil
}

// deleteTopics removes topics (bench --peer: kfake keeps every record in memory, and
// three rounds of four 1 GiB topics filled this machine).
func deleteTopics(ctx context.Context, brokers []string, names []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kadm.NewClient(cl).DeleteTopics(ctx, names...)
	return err
}

// bareProduce is franz-go doing what ackcheck's load does, and nothing
// else (a value of its own per record, its index in the first bytes):
// Producers clients, producer k sending messages i = k mod Producers to
// partition i mod Partitions (the manual partitioner), linger, acks=all
// (idempotent, as kgo's default), no compression, the in-flight bound
// split over the clients, paced at Rate when Rate > 0 by w.Pacing
// (drivers.PeerPacer: message i due at start + i/Rate).
func bareProduce(ctx context.Context, brokers []string, w drivers.PeerWork) (drivers.PeerProduced, error) {
	var acked, failed atomic.Int64
	var wg sync.WaitGroup
	// The clients first, then the schedule's start, as ackcheck's load
	// starts its schedule once its producers exist.
	clients := make([]*kgo.Client, w.Producers)
	for k := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(w.Linger), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MaxBufferedRecords(max(1, w.MaxInFlight/w.Producers)))
		if err != nil {
			for _, c := range clients[:k] {
				c.Close()
			}
			return drivers.PeerProduced{}, err
		}
		clients[k] = cl
	}
	start := time.Now()
	pacers := make([]*drivers.PeerPacer, w.Producers)
	for k, cl := range clients {
		pacer := &drivers.PeerPacer{Start: start, Rate: w.Rate, Pacing: w.Pacing}
		pacers[k] = pacer
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for i := k; i < w.Messages; i += w.Producers {
				pacer.Wait(ctx, i)
				// A value of its own per record, as any producer's
				// messages are: one shared slice would hold 1 KiB where
				// ackcheck (and every real producer) holds the bound x 1 KiB.
				value := make([]byte, w.Size)
				binenc.LittleEndian.PutUint64(value, uint64(i))
				r := &kgo.Record{Topic: w.Topic, Value: value, Partition: int32(i % w.Partitions)}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					acked.Add(1)
				})
			}
			cl.Flush(ctx)
		}()
	}
	wg.Wait()
	res := drivers.PeerProduced{Acked: acked.Load()}
	for _, p := range pacers {
		if l := p.Lag(); l != nil {
			if res.Lag == nil {
				res.Lag = latency.New(3)
			}
			res.Lag.Merge(l)
		}
	}
	if n := failed.Load(); n > 0 {
		return res, fmt.Errorf("bare produce: %d records failed", n)
	}
	return res, nil
}

// bareConsume reads the topic from its start to its end offsets with one
// franz-go client, touching every value once, as a plain consumer would.
func bareConsume(ctx context.Context, brokers []string, topic string) (int64, error) {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	admCl.Close()
	if err != nil {
		return 0, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	parts := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range want {
		parts[topic][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(parts))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var sum byte
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			sum ^= r.Value[len(r.Value)-1]
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	_ = sum
	return n, nil
}
