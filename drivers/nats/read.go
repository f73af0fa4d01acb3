package nats

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/nats-io/nats.go/jetstream"
)

// Read implements drivers.Driver with an ordered consumer per partition,
// from ReadSpec.From until the sequence reaches To or the stream holds
// nothing more (its last sequence, asked once a fetch came back empty).
func (d *Driver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	return drivers.ReadPartitions(ctx, spec, d.readPartition, fn)
}

// readPartition is a drivers.PartitionReader.
func (d *Driver) readPartition(ctx context.Context, topic string, p int32, from, to int64, bounded bool, idle time.Duration,
	pr *drivers.PartitionReading, send func(drivers.Record) bool) error {
	name := StreamName(topic, p)
	start := uint64(max(from, 1)) // stream sequences start at 1
	cons, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (jetstream.Consumer, error) {
		return d.js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		})
	})
	if err != nil {
		pr.Note = "could not create an ordered consumer: " + err.Error()
		return d.unreachable("read stream "+name, err)
	}
	lastRecord := time.Now()
	for {
		if bounded && pr.Next >= to {
			pr.Complete = true
			return nil
		}
		got := 0
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(time.Second))
		if err == nil {
			for msg := range batch.Messages() {
				meta, err := msg.Metadata()
				if err != nil {
					pr.Note = "a message without JetStream metadata: " + err.Error()
					return fmt.Errorf("read stream %s: %w", name, err)
				}
				seq := int64(meta.Sequence.Stream)
				if seq < from {
					continue
				}
				if bounded && seq >= to {
					pr.Complete = true
					return nil
				}
				rec := drivers.Record{Pos: drivers.Position{Partition: p, Offset: seq}, Value: msg.Data(), Timestamp: meta.Timestamp}
				if k := msg.Headers().Get(KeyHeader); k != "" {
					if rec.Key, err = base64.StdEncoding.DecodeString(k); err != nil {
						rec.Key = []byte(k) // not ours: hand it on as it is
					}
				}
				if !send(rec) {
					return ctx.Err()
				}
				got++
				pr.Records++
				pr.Next = seq + 1
			}
		}
		if ctx.Err() != nil {
			if !bounded {
				return nil // a live read ends with its context
			}
			pr.Note = "interrupted"
			return ctx.Err()
		}
		if got > 0 {
			lastRecord = time.Now()
			continue
		}
		if bounded {
			// Nothing came: if the stream holds nothing past what was read,
			// the partition is read, even short of To (a stream that lost
			// its tail). The verdict then counts what is missing.
			if si, err := call(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) { return d.info(ctx, name) }); err == nil &&
				uint64(pr.Next) > si.State.LastSeq {
				pr.Complete = true
				if pr.Next < to {
					pr.Note = fmt.Sprintf("the stream ends at sequence %d, before %d", si.State.LastSeq, to-1)
				}
				return nil
			}
		}
		if time.Since(lastRecord) > idle {
			if bounded {
				pr.Note = fmt.Sprintf("no record for %s although the stream was not confirmed to end (last error: %v)", idle, err)
			}
			return nil
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}
