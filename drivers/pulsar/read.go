package pulsar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Read implements drivers.Driver with a Reader per partition, started at
// the entry that holds ReadSpec.From (records before From are skipped)
// and read until the position reaches To or the broker says the
// partition holds nothing more (HasNext). Partitions are read at once;
// fn is called from this goroutine only.
func (d *Driver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	return drivers.ReadPartitions(ctx, spec, d.readPartition, fn)
}

// readPartition is a drivers.PartitionReader.
func (d *Driver) readPartition(ctx context.Context, topic string, p int32, from, to int64, bounded bool, idle time.Duration,
	pr *drivers.PartitionReading, send func(drivers.Record) bool) error {
	pt, err := d.partition(topic, p)
	if err != nil {
		return err
	}
	start := pulsar.EarliestMessageID()
	if from > 0 {
		l, e, _ := Unpack(from)
		start = pulsar.NewMessageID(l, e, -1, p)
	}
	reader, err := d.client.CreateReader(pulsar.ReaderOptions{
		Topic: pt.String(), StartMessageID: start, StartMessageIDInclusive: true, ReceiverQueueSize: 1000,
	})
	if err != nil {
		pr.Note = "could not open a reader: " + err.Error()
		return d.unreachable(fmt.Sprintf("read %s", pt), err)
	}
	defer reader.Close()
	for {
		if bounded && pr.Next >= to {
			pr.Complete = true
			return nil
		}
		if bounded && !reader.HasNext() {
			// The client says nothing more exists. It also says so when it
			// could not ask (a broker restarting), so the admin API's last
			// message ID must agree before the partition counts as read.
			done, err := d.caughtUp(ctx, pt, from, pr)
			if err != nil {
				pr.Note = err.Error()
				return err
			}
			if done {
				pr.Complete = true
				return nil
			}
		}
		nctx, cancel := context.WithTimeout(ctx, idle)
		msg, err := reader.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				if !bounded {
					return nil // a live read ends with its context
				}
				pr.Note = "interrupted"
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				pr.Note = fmt.Sprintf("no record for %s although the broker said more exist", idle)
				return nil
			}
			pr.Note = err.Error()
			return fmt.Errorf("read %s: %w", pt, err)
		}
		id := msg.ID()
		pos, err := Pack(id.LedgerID(), id.EntryID(), id.BatchIdx())
		if err != nil {
			pr.Note = err.Error()
			return fmt.Errorf("read %s: %w", pt, err)
		}
		if pos < from {
			continue
		}
		if bounded && pos >= to {
			pr.Complete = true
			return nil
		}
		rec := drivers.Record{Pos: drivers.Position{Partition: p, Offset: pos}, Value: msg.Payload(), Timestamp: msg.PublishTime()}
		if k := msg.Key(); k != "" {
			rec.Key = []byte(k)
		}
		if !send(rec) {
			return ctx.Err()
		}
		pr.Records++
		pr.Next = pos + 1
	}
}

// caughtUp reports whether the read of a partition has reached its last
// message as the admin API reports it: the last entry read is the last
// entry written (or nothing was written from the read's start on).
func (d *Driver) caughtUp(ctx context.Context, pt *utils.TopicName, from int64, pr *drivers.PartitionReading) (bool, error) {
	last, err := d.lastMessageID(ctx, pt)
	if err != nil {
		return false, err
	}
	if last.LedgerID < 0 || last.EntryID < 0 {
		// An empty current ledger (a broker just restarted) hides where the
		// last entry is: trust the client. If it was wrong, the read ends
		// short and the verdict counts messages lost: a false alarm, never
		// a false pass.
		return true, nil
	}
	end, err := afterEntry(last.LedgerID, last.EntryID)
	if err != nil {
		return false, err
	}
	if pr.Records == 0 {
		return end <= from, nil
	}
	l, e, _ := Unpack(pr.Next - 1)
	readEnd, _ := afterEntry(l, e)
	return readEnd >= end, nil
}
