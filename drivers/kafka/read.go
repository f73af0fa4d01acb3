package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
//
// A record batch whose CRC does not match (or whose magic is damaged) is
// neither skipped nor an end:
// its records that still parse are delivered with Record.Damaged, its span
// is recorded in the report's Damaged, and the read goes on after it
// (salvage.go).
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
	// skip is, per partition salvaged, the offset it was moved to: a
	// fetch kgo buffered before the move is not delivered twice.
	skip := map[int32]int64{}
	sv := salvager{failed: map[int32]time.Time{}}
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
		ferr, damaged := fetchErrors(fetches)
		progressed, err := deliver(fetches, &rep, &remaining, skip, fn)
		if err != nil {
			return rep, err
		}
		for _, p := range damaged {
			moved, err := sv.salvage(ctx, cl, spec.Topic, p, &rep, &remaining, skip, fn)
			if err != nil {
				return rep, err
			}
			progressed = progressed || moved
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
			noteNoProgress(&rep, idle, ferr)
			return rep, nil
		}
	}
	return rep, nil
}

// fetchErrors is a poll's last fetch error that is not the poll's own
// timeout or cancellation, and the partitions whose batch was damaged
// (damagedBatch), which salvage reads past.
func fetchErrors(fetches kgo.Fetches) (ferr error, damaged []int32) {
	fetches.EachError(func(_ string, p int32, err error) {
		switch {
		case damagedBatch(err):
			damaged = append(damaged, p)
			ferr = err
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
			ferr = err
		}
	})
	return ferr, damaged
}

// noteNoProgress says, for each partition still short of its target and
// not already explained (other than by a salvage), that the read made no
// progress for idle, with the last fetch error ferr.
func noteNoProgress(rep *drivers.ReadReport, idle time.Duration, ferr error) {
	for p := range rep.Partitions {
		pr := &rep.Partitions[p]
		if !pr.Asked || pr.Complete {
			continue
		}
		if why := rep.Note(int32(p)); why == "" || strings.HasPrefix(why, salvageNote) {
			note := fmt.Sprintf("no progress for %s at offset %d of %d", idle, pr.Next, pr.Target)
			if ferr != nil {
				note += ": " + ferr.Error()
			}
			if why != "" {
				note += "; " + why
			}
			rep.SetNote(int32(p), note)
		}
	}
}

// deliver hands fetches' records to fn, record by record, up to each
// partition's target, and counts them in rep; a partition that reaches
// its target is complete and leaves remaining. Records are taken per
// fetched partition, without collecting a fetch's records in a slice, and
// each partition's progress is written back once per fetch of it.
func deliver(fetches kgo.Fetches, rep *drivers.ReadReport, remaining *int, skip map[int32]int64, fn func(drivers.Record) error) (progressed bool, err error) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if err != nil || len(fp.Records) == 0 {
			return
		}
		pr := rep.At(fp.Partition)
		if pr == nil {
			return // not asked for
		}
		below, moved := skip[fp.Partition]
		for _, r := range fp.Records {
			if moved && r.Offset < below {
				continue
			}
			var took bool
			if took, err = take(pr, remaining, drivers.Record{
				Pos:       drivers.Position{Partition: r.Partition, Offset: r.Offset},
				Key:       r.Key,
				Value:     r.Value,
				Timestamp: r.Timestamp,
			}, fn); err != nil {
				break
			}
			progressed = progressed || took
		}
	})
	return progressed, err
}

// take hands r to fn unless pr is complete or r lies at or past its
// target, and counts it in pr; a partition that reaches its target is
// complete and leaves remaining. It reports whether it handed r over.
func take(pr *drivers.PartitionRead, remaining *int, r drivers.Record, fn func(drivers.Record) error) (bool, error) {
	if pr.Complete || (pr.Target >= 0 && r.Pos.Offset >= pr.Target) {
		return false, nil
	}
	if err := fn(r); err != nil {
		return false, err
	}
	pr.Records++
	pr.Next = r.Pos.Offset + 1
	if pr.Target >= 0 && pr.Next >= pr.Target {
		pr.Complete = true
		*remaining--
	}
	return true, nil
}

// salvageNote begins a partition's note while its salvage fails.
const salvageNote = "reading past a damaged record batch: "

// salvager gets a reader past record batches that fail kgo's CRC check
// (salvage.go). A salvage that fails is tried again for the partition
// no sooner than a second later: kgo fails the partition's fetches at
// once, on every poll.
type salvager struct {
	failed map[int32]time.Time
}

// salvage reads partition p past the damaged batch kgo is stuck at: it
// delivers the records salvage fetched (a damaged batch's as Damaged),
// records the damaged spans in rep, and moves cl's cursor, and skip, to
// the offset after them. It reports whether it got past anything. A
// salvage that fails leaves the partition where it was (its read then ends
// by the idle timeout, with kgo's error in its note); only fn's error is
// returned.
func (sv *salvager) salvage(ctx context.Context, cl *kgo.Client, topic string, p int32, rep *drivers.ReadReport, remaining *int, skip map[int32]int64, fn func(drivers.Record) error) (bool, error) {
	pr := rep.At(p)
	if pr == nil || pr.Complete || time.Since(sv.failed[p]) < time.Second {
		return false, nil
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	s, err := salvage(sctx, cl, topic, p, pr.Next)
	cancel()
	if err != nil {
		sv.failed[p] = time.Now()
		if note := rep.Note(p); note == "" || strings.HasPrefix(note, salvageNote) {
			rep.SetNote(p, salvageNote+err.Error())
		}
		return false, nil
	}
	if strings.HasPrefix(rep.Note(p), salvageNote) {
		rep.SetNote(p, "")
	}
	for _, sp := range s.spans {
		// The raw fetch reads past the window; a span outside it is not
		// this read-back's.
		if sp.Last >= pr.Next && (pr.Target < 0 || sp.First < pr.Target) {
			rep.AddDamaged(p, sp)
		}
	}
	for _, r := range s.records {
		if _, err := take(pr, remaining, r, fn); err != nil {
			return false, err
		}
	}
	skip[p] = s.next
	if !pr.Complete {
		pr.Next = max(pr.Next, s.next)
		if pr.Target >= 0 && pr.Next >= pr.Target {
			pr.Complete = true
			*remaining--
		}
		cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {p: {Epoch: -1, Offset: s.next}}})
	}
	return true, nil
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
			rep.SetNote(int32(p), fmt.Sprintf("topic %s (or this partition) no longer exists; read stopped at offset %d of %d", topic, pr.Next, pr.Target))
		case end <= pr.Next:
			rep.SetNote(int32(p), fmt.Sprintf("log ends at offset %d, below the %d seen after the load: %d offsets are gone", end, pr.Target, pr.Target-end))
		default:
			continue
		}
		pr.Complete = true
		*remaining--
		settled = true
	}
	return settled
}
