package kafka

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bare franz-go doing ackcheck's work and nothing else, for `ackcheck bench
// --peer`, which measures ackcheck against it: the same messages, clients,
// partitions and pacing, with none of ackcheck's ledger or checks.

// PeerWork is the shape of one bench workload.
type PeerWork struct {
	Brokers     []string
	Topic       string
	Messages    int
	Size        int
	Producers   int
	Partitions  int
	MaxInFlight int
	Linger      time.Duration
	Rate        float64 // 0: unpaced
}

// CreatePeerTopics creates a round's topics, ackcheck's too (its run then
// finds the topic there and uses it as it is), all alike. In kfake, which
// gives each partition a leader at random, partition p of every topic is
// then led by broker p mod 3. A producer sends one request per leader, so
// its CPU per message depends on the placement, and with leaders placed at
// random per topic the two producers of a pair did not meet the same
// broker. With the code unchanged, bare franz-go took 1.7-2.0 CPU-s per 1M
// in one invocation and 2.5-2.9 in the next; the placement is one cause
// of such swings this removes, not shown to be the only one.
func CreatePeerTopics(ctx context.Context, brokers []string, partitions int, fake *Embedded, names []string) error {
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

// DeleteTopics removes topics (bench --peer: kfake keeps every record in memory, and
// three rounds of four 1 GiB topics filled this machine).
func DeleteTopics(ctx context.Context, brokers []string, names []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kadm.NewClient(cl).DeleteTopics(ctx, names...)
	return err
}

// BareProduce is franz-go doing what ackcheck's load does, and nothing
// else (a value of its own per record, its index in the first bytes): Producers clients, producer k sending messages i = k mod
// Producers to partition i mod Partitions (the manual partitioner), linger,
// acks=all (idempotent, as kgo's default), no compression, the in-flight
// bound split over the clients, paced at Rate when Rate > 0 the way
// ackcheck paces (message i due at start + i/Rate).
func BareProduce(ctx context.Context, s PeerWork) (int64, error) {
	linger := s.Linger
	var acked, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for k := 0; k < s.Producers; k++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Brokers...), kgo.ProducerLinger(linger), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MaxBufferedRecords(max(1, s.MaxInFlight/s.Producers)))
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for i := k; i < s.Messages; i += s.Producers {
				if s.Rate > 0 {
					if wait := time.Until(start.Add(time.Duration(float64(i) * float64(time.Second) / s.Rate))); wait > 0 {
						timer.Reset(wait)
						<-timer.C
					}
				}
				// A value of its own per record, as any producer's
				// messages are: one shared slice would hold 1 KiB where
				// ackcheck (and every real producer) holds the bound x 1 KiB.
				value := make([]byte, s.Size)
				binenc.LittleEndian.PutUint64(value, uint64(i))
				r := &kgo.Record{Topic: s.Topic, Value: value, Partition: int32(i % s.Partitions)}
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
	if n := failed.Load(); n > 0 {
		return acked.Load(), fmt.Errorf("bare produce: %d records failed", n)
	}
	return acked.Load(), nil
}

// BareConsume reads the topic from its start to its end offsets with one
// franz-go client, touching every value once, as a plain consumer would.
func BareConsume(ctx context.Context, brokers []string, topic string) (int64, error) {
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
