package drivers

import (
	"context"
	"time"
)

// Idle is spec.IdleTimeout, or its default of 60s.
func (spec ReadSpec) Idle() time.Duration {
	if spec.IdleTimeout <= 0 {
		return 60 * time.Second
	}
	return spec.IdleTimeout
}

// PartitionReader reads partition p of topic for ReadPartitions: the
// records at offsets in [from, to) (from on, when !bounded), waiting up to
// idle for more where the partition's end is not known, in offset order, each
// handed to send, which answers false once the read must stop. It records
// how far it got in pr (Records, Next, Complete, Note) and returns an
// error only when the read failed.
type PartitionReader func(ctx context.Context, topic string, p int32, from, to int64, bounded bool, idle time.Duration, pr *PartitionReading, send func(Record) bool) error

// PartitionReading is one partition's figures while a PartitionReader
// reads it on its own: its PartitionRead and its note, which
// ReadPartitions moves to ReadReport.Notes when the read ends.
type PartitionReading struct {
	PartitionRead
	Note string // why the partition ended short of Target, if it did
}

// ReadPartitions implements Driver.Read for drivers that read each
// partition on its own: it runs read for every partition of spec.From at
// once and calls fn from the calling goroutine only. A partition's
// records reach fn in the order read sends them.
func ReadPartitions(ctx context.Context, spec ReadSpec, read PartitionReader, fn func(Record) error) (ReadReport, error) {
	// A partition enters the report when its read ends.
	rep := ReadReport{Partitions: make([]PartitionRead, spec.From.Slots())}
	parts := spec.From.Partitions()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type item struct {
		part int32
		rec  Record
		end  *PartitionReading // set on the partition's last item
		err  error
	}
	ch := make(chan item, 1024)
	for _, p := range parts {
		from, _ := spec.From.Get(p)
		to, bounded := spec.To.Get(p)
		go func() {
			pr := PartitionReading{PartitionRead: PartitionRead{Asked: true, Next: from, Target: to}}
			if !bounded {
				pr.Target = -1
			}
			err := read(ctx, spec.Topic, p, from, to, bounded, spec.Idle(), &pr, func(r Record) bool {
				select {
				case ch <- item{part: p, rec: r}:
					return true
				case <-ctx.Done():
					return false
				}
			})
			select {
			case ch <- item{part: p, end: &pr, err: err}:
			case <-ctx.Done():
			}
		}()
	}
	var firstErr error
	for left := len(parts); left > 0; {
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case it := <-ch:
			if it.end != nil {
				rep.Partitions[it.part] = it.end.PartitionRead
				rep.SetNote(it.part, it.end.Note)
				if it.err != nil && firstErr == nil {
					firstErr = it.err
				}
				left--
				continue
			}
			if err := fn(it.rec); err != nil {
				return rep, err
			}
		}
	}
	return rep, firstErr
}
