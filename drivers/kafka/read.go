package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Read implements drivers.Driver. It assigns the partitions directly at
// spec.From. With spec.To set it stops when every partition reached its
// target, or when the broker confirms that a partition's log now ends below
// its target (a truncated log, or a topic that is gone): such partitions are
// reported Complete with a Note, because nothing more can be read. It gives
// up on partitions that make no progress for spec.IdleTimeout while the
// broker cannot be asked (Complete false).
func (d *Driver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	idle := spec.IdleTimeout
	if idle <= 0 {
		idle = 60 * time.Second
	}
	rep := drivers.NewReadReport(spec)
	assign := make(map[int32]kgo.Offset)
	for p, pr := range rep.Partitions {
		if pr.Asked && !pr.Complete {
			assign[int32(p)] = kgo.NewOffset().At(pr.Next)
		}
	}
	if len(assign) == 0 {
		return rep, nil
	}
	opts, err := d.cfg.commonOpts()
	if err != nil {
		return rep, err
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.ClientID("ackcheck-reader"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: assign}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		return rep, fmt.Errorf("kafka reader: %w", err)
	}
	defer cl.Close()

	remaining := len(assign)
	lastProgress := time.Now()
	lastCheck := time.Now()
	for remaining > 0 || !spec.To.IsSet() {
		if err := ctx.Err(); err != nil {
			if !spec.To.IsSet() {
				return rep, nil // a tail ends with its context
			}
			return rep, err
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		progressed, err := deliver(fetches, &rep, &remaining, fn)
		if err != nil {
			return rep, err
		}
		if progressed {
			lastProgress = time.Now()
		}
		if !spec.To.IsSet() {
			continue
		}
		// Without progress, ask the broker whether more exists: a log
		// that now ends below the target will never reach it.
		if !progressed && time.Since(lastCheck) > time.Second {
			lastCheck = time.Now()
			if d.settleShortLogs(ctx, spec.Topic, &rep, &remaining) {
				lastProgress = time.Now()
			}
		}
		if remaining > 0 && time.Since(lastProgress) > idle {
			for p := range rep.Partitions {
				if pr := &rep.Partitions[p]; pr.Asked && !pr.Complete && pr.Note == "" {
					pr.Note = fmt.Sprintf("no progress for %s at offset %d of %d", idle, pr.Next, pr.Target)
					if ferr != nil {
						pr.Note += ": " + ferr.Error()
					}
				}
			}
			return rep, nil
		}
	}
	return rep, nil
}

// deliver hands fetches' records to fn, record by record, up to each
// partition's target, and counts them in rep; a partition that reaches
// its target is complete and leaves remaining. Records are taken per
// fetched partition, without collecting a fetch's records in a slice, and
// each partition's progress is written back once per fetch of it.
func deliver(fetches kgo.Fetches, rep *drivers.ReadReport, remaining *int, fn func(drivers.Record) error) (progressed bool, err error) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if err != nil || len(fp.Records) == 0 {
			return
		}
		pr := rep.At(fp.Partition)
		if pr == nil {
			return // not asked for
		}
		for _, r := range fp.Records {
			if pr.Complete || (pr.Target >= 0 && r.Offset >= pr.Target) {
				continue
			}
			if err = fn(drivers.Record{
				Pos:       drivers.Position{Partition: r.Partition, Offset: r.Offset},
				Key:       r.Key,
				Value:     r.Value,
				Timestamp: r.Timestamp,
			}); err != nil {
				break
			}
			progressed = true
			pr.Records++
			pr.Next = r.Offset + 1
			if pr.Target >= 0 && pr.Next >= pr.Target {
				pr.Complete = true
				*remaining--
			}
		}
	})
	return progressed, err
}

// settleShortLogs marks complete every partition whose log now ends at or
// before what was read. It reports whether it settled any.
func (d *Driver) settleShortLogs(ctx context.Context, topic string, rep *drivers.ReadReport, remaining *int) bool {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := d.EndOffsets(lctx, topic)
	gone := errors.Is(err, drivers.ErrTopicMissing)
	if err != nil && !gone {
		return false
	}
	settled := false
	for p := range rep.Partitions {
		pr := &rep.Partitions[p]
		if !pr.Asked || pr.Complete {
			continue
		}
		end, ok := ends.Get(int32(p))
		switch {
		case gone || !ok:
			pr.Note = fmt.Sprintf("topic %s (or this partition) no longer exists; read stopped at offset %d of %d", topic, pr.Next, pr.Target)
		case end <= pr.Next:
			pr.Note = fmt.Sprintf("log ends at offset %d, below the %d seen after the load: %d offsets are gone", end, pr.Target, pr.Target-end)
		default:
			continue
		}
		pr.Complete = true
		*remaining--
		settled = true
	}
	return settled
}
