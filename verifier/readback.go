// Package verifier reads a run's topic back and judges it against the
// ledger.
//
// ReadBack reads every partition from the offsets recorded before the load
// to the end offsets seen after it, and records each copy of this run's
// messages in the ledger (valid or corrupt) under the ID it carries. Check
// then merges the ledger's sorted Send, Outcome and Read streams, one pass,
// no lookups, memory independent of the number of messages, and classifies
// every message:
//
//	lost          acked, never read intact              fails
//	corrupt       a copy whose checksum is wrong         fails
//	phantom       read intact, carries this run's ID,    fails
//	              but was never sent
//	duplicate     an extra copy at another position      fails with NoDuplicates
//	reordered     read before the previous sequence of   fails with Ordered
//	              its producer in the same partition
//	indeterminate read, but its outcome was an error,    allowed
//	              a timeout, or never recorded
//	not written   sent, not acked, not read              allowed
//	unrecorded    read, sent after the last ledger       allowed
//	              flush of a run that died
//
// A read-back that could not reach every end offset fails the verdict too:
// an acked message that could not be read is not shown to be kept.
package verifier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// MetaReadBack is the metadata name of the last ReadBackReport.
const MetaReadBack = "readback"

// ReadBackReport says what the read-back found.
type ReadBackReport struct {
	// RunID is the run read back (as result.json writes it): a read-back
	// judged beside a run's ledger must be of that run (CheckLedgers), or
	// another run's reads, whose message IDs repeat this run's, would
	// vouch for this run's acks.
	RunID    string           `json:"run_id"`
	At       time.Time        `json:"at"`
	Complete bool             `json:"complete"`
	Records  int64            `json:"records"`
	Foreign  int64            `json:"foreign"`
	OtherRun int64            `json:"other_run"`
	Notes    map[int32]string `json:"notes,omitempty"`
	Ends     ledger.Offsets   `json:"ends"`
	// Error is the request that failed when the read-back could not
	// finish (a broker gone, a fetch refused); Complete is then false and
	// the read-back holds what was read before it.
	Error string `json:"error,omitempty"`
	// TopicGone: the broker answered that the topic does not exist any
	// more. Complete is false: nothing of it could be read.
	TopicGone bool `json:"topic_gone,omitempty"`
	// Settled is what the read-back waited for before it began, for a
	// broker that acknowledges writes before they are readable
	// (drivers.Settler): "" when nothing. Unsettled is why it stopped
	// waiting without that: the read-back is then incomplete in every
	// partition, since what is not readable yet may still become so.
	Settled   string `json:"settled,omitempty"`
	Unsettled string `json:"unsettled,omitempty"`
	// Took is how long the read-back ran.
	Took time.Duration `json:"took_ns"`
	// Unread are the partitions not read to their end (a topic gone, or
	// a partition the broker no longer lists, is not unread: the broker
	// said what is left). Null in a report from
	// before it was kept: then every partition of an incomplete read-back
	// counts as unread (unreadPartitions).
	Unread []int32 `json:"unread"`
	// LogStarts are, for the partitions whose log now begins past the
	// offset the run's read would begin at, where it begins
	// (drivers.LogStarter): the records below were deleted (DeleteRecords,
	// retention) and cannot be read. The read-back begins there, and an
	// acked message whose acked offset lies below it is lost, whether or
	// not the rest of its partition was read (Result.LostBelowLogStart).
	// Empty for a driver that cannot say.
	LogStarts ledger.Offsets `json:"log_starts,omitempty"`
	// Damaged are, per partition, the spans the broker served with a
	// checksum of its own that does not match (a Kafka record batch whose
	// CRC fails): their records that could be parsed were recorded
	// corrupt whatever their values say, and the read went on past them.
	Damaged map[int32][]drivers.DamagedSpan `json:"damaged,omitempty"`
	// DamagedRecords is how many records were read in those spans.
	DamagedRecords int64 `json:"damaged_records,omitempty"`
}

// logStartOf returns where rb found partition p's log to begin, when it
// begins past the run's start (see ReadBackReport.LogStarts).
func logStartOf(rb ReadBackReport) func(int32) (int64, bool) {
	return rb.LogStarts.Get
}

// unreadPartitions reports whether rb did not read a partition to its
// end. A report from before Unread was kept that is incomplete counts
// every partition as unread: it cannot say which were.
func unreadPartitions(rb ReadBackReport) func(int32) bool {
	if rb.Unread == nil && !rb.Complete && !rb.TopicGone {
		return func(int32) bool { return true }
	}
	set := newByPartition[bool](0)
	for _, p := range rb.Unread {
		*set.at(p) = true
	}
	return set.get
}

// ReadBack reads the run's partitions from run.StartOffsets to the current
// end offsets and records every copy of the run's messages in into, with
// the ReadBackReport. REQUIRES: into holds no earlier read-back (each
// verify writes a fresh reads ledger beside the run's, which it never
// changes: see runner).
//
// A read-back the broker cannot finish (no broker answers, a fetch fails)
// is not an error: what was read is kept, Complete is false and Error
// names the request that failed, so that the caller still judges and
// writes a result (verdict incomplete). Errors are the ledger's, and ctx
// ending.
func ReadBack(ctx context.Context, d drivers.Driver, into *ledger.Ledger, run ledger.RunInfo, idle time.Duration) (ReadBackReport, error) {
	return ReadBackLogged(ctx, d, into, run, idle, nil)
}

// ReadBackLogged is ReadBack that says through logf (nil: silent) what a
// long wait before the read is waiting for (drivers.Settler).
func ReadBackLogged(ctx context.Context, d drivers.Driver, into *ledger.Ledger, run ledger.RunInfo, idle time.Duration, logf func(string, ...any)) (ReadBackReport, error) {
	rep := ReadBackReport{RunID: RunIDText(run.RunID), At: time.Now(), Notes: map[int32]string{}}
	if err := settle(ctx, d, run.Topic, idle, &rep, logf); err != nil {
		return rep, err
	}
	ends, err := endsToRead(ctx, d, run, &rep)
	if err != nil {
		return rep, err
	}
	rep.Ends = ends
	from, to, gone := readBounds(run, ends, &rep)
	logStarts(ctx, d, run.Topic, &rep, from, to)
	reads, err := readRecords(ctx, d, into, run, drivers.ReadSpec{Topic: run.Topic, From: from, To: to, IdleTimeout: idle}, &rep)
	if err != nil {
		return rep, err
	}
	if rep.Complete && len(rep.Notes) > 0 {
		// A partition the broker declared finished short of its end may
		// be a topic deleted during the read: that is no complete read.
		if _, err := d.EndOffsets(ctx, run.Topic); errors.Is(err, drivers.ErrTopicMissing) {
			rep.Complete, rep.TopicGone = false, true
		}
	}
	if rep.Unsettled != "" && rep.Error == "" {
		rep.Error = rep.Unsettled
	}
	noteUnread(&rep, run, reads, to, gone)
	rep.Took = time.Since(rep.At)
	if err := into.Flush(); err != nil {
		return rep, err
	}
	if err := into.PutMeta(MetaReadBack, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// settle lets a driver that can (drivers.Settler) wait until what it
// acked is readable, and records in rep what it said and, when it could
// not, why (Unsettled). Only ctx ending is an error.
func settle(ctx context.Context, d drivers.Driver, topic string, idle time.Duration, rep *ReadBackReport, logf func(string, ...any)) error {
	s, ok := d.(drivers.Settler)
	if !ok {
		return nil
	}
	var progress func(string)
	if logf != nil {
		progress = func(what string) { logf("%s", what) }
	}
	note, err := s.Settle(ctx, topic, idle, progress)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("read-back: %w", err)
	}
	rep.Settled = note
	if err != nil {
		rep.Unsettled = err.Error()
	}
	return nil
}

// endsToRead asks where the run's partitions end. A topic gone or a
// request that fails gives no ends, with each partition noted in rep
// (TopicGone, or Error): the read-back still replaces the earlier one,
// with nothing. Only ctx ending is an error.
func endsToRead(ctx context.Context, d drivers.Driver, run ledger.RunInfo, rep *ReadBackReport) (drivers.Offsets, error) {
	ends, err := d.EndOffsets(ctx, run.Topic)
	switch {
	case errors.Is(err, drivers.ErrTopicMissing):
		// Everything is gone. Reading nothing is the honest read-back.
		ends = drivers.MakeOffsets(0)
		rep.TopicGone = true
		run.StartOffsets.All(func(p int32, _ int64) bool {
			rep.Notes[p] = fmt.Sprintf("topic %s does not exist any more", run.Topic)
			return true
		})
	case err != nil && ctx.Err() == nil:
		// Nothing can be read. The read-back still replaces the earlier
		// one (with nothing), so that the verdict never rests on stale
		// reads.
		ends = drivers.MakeOffsets(0)
		rep.Error = fmt.Sprintf("reading where the partitions of %s end: %v", run.Topic, err)
		run.StartOffsets.All(func(p int32, _ int64) bool {
			rep.Notes[p] = "not read"
			return true
		})
	case err != nil:
		return drivers.Offsets{}, fmt.Errorf("read-back: %w", err)
	}
	return ends, nil
}

// readBounds is where each of the run's partitions is read from and to:
// from its start offset to its end, or all of a log now shorter than at
// the start. A partition the broker no longer lists, though it answered
// for the topic, is gone (its acked messages are judged lost, not
// unread) and read not at all.
func readBounds(run ledger.RunInfo, ends drivers.Offsets, rep *ReadBackReport) (from, to drivers.Offsets, gone byPartition[bool]) {
	n := run.StartOffsets.Slots()
	from, to = drivers.MakeOffsets(n), drivers.MakeOffsets(n)
	listed := -1 // how many partitions the broker lists, counted once
	run.StartOffsets.All(func(p int32, start int64) bool {
		end, ok := ends.Get(p)
		if !ok {
			if rep.Error == "" && !rep.TopicGone {
				// The broker answered for the topic without this partition:
				// nothing of it is left to read (a topic recreated with
				// fewer partitions), as for a topic gone. Its acked
				// messages are judged lost, not unread.
				*gone.at(p) = true
				if listed < 0 {
					listed = ends.Len()
				}
				rep.Notes[p] = fmt.Sprintf("partition %d of %s does not exist any more (the broker lists %d partitions)", p, run.Topic, listed)
			}
			return true
		}
		from.Set(p, start)
		to.Set(p, end)
		if end < start {
			// The log is shorter than before the load began: it was
			// truncated or recreated. Read all of it.
			from.Set(p, 0)
			rep.Notes[p] = fmt.Sprintf("log ends at %d, before the %d it had when the load started", end, start)
		}
		return true
	})
	return from, to, gone
}

// readRecords reads spec and records in into every copy of the run's
// messages, counting in rep the records, the foreign ones and those of
// another run, and noting in rep whether the read was complete and, when
// the broker could not finish it, why and where each partition stopped.
// Errors are the ledger's (a failure to record stops the read) and ctx
// ending.
func readRecords(ctx context.Context, d drivers.Driver, into *ledger.Ledger, run ledger.RunInfo, spec drivers.ReadSpec, rep *ReadBackReport) (drivers.ReadReport, error) {
	var recErr error
	reads, err := d.Read(ctx, spec, func(r drivers.Record) error {
		rep.Records++
		dm := message.Decode(r.Value, run.RunID)
		if r.Damaged {
			// The broker's own checksum failed: the value's may still
			// match, but nothing of the record can be trusted. (Another
			// run's intact value stays another run's.)
			rep.DamagedRecords++
			if dm.Status == message.Valid && dm.ID.Run == run.RunID {
				dm.Status = message.Corrupt
			}
		}
		switch {
		case dm.Status == message.Foreign:
			rep.Foreign++
			return nil
		case dm.Status == message.Valid && dm.ID.Run != run.RunID:
			rep.OtherRun++
			return nil
		}
		recErr = into.Record(ledger.Read, ledger.Event{
			Producer: dm.ID.Producer, Seq: dm.ID.Seq, Partition: r.Pos.Partition, Offset: r.Pos.Offset,
			Time: dm.Intended.UnixNano(), Status: uint8(dm.Status),
		})
		return recErr
	})
	if err != nil && (recErr != nil || ctx.Err() != nil) {
		return reads, fmt.Errorf("read-back: %w", err)
	}
	rep.Complete = reads.Complete() && err == nil && rep.Error == "" && !rep.TopicGone && rep.Unsettled == ""
	// A few partitions have a note or damaged spans: the report's maps
	// are walked, not its million partitions.
	for p, note := range reads.Notes {
		if _, asked := reads.Get(p); asked && note != "" {
			rep.Notes[p] = note
		}
	}
	for p, spans := range reads.Damaged {
		if _, asked := reads.Get(p); asked && len(spans) > 0 {
			if rep.Damaged == nil {
				rep.Damaged = map[int32][]drivers.DamagedSpan{}
			}
			rep.Damaged[p] = spans
		}
	}
	if err != nil {
		rep.Error = fmt.Sprintf("reading %s back: %v", run.Topic, err)
		noteUnfinished(rep, reads, spec.From)
	}
	return reads, nil
}

// noteUnread lists in rep.Unread, sorted, the partitions not read to
// their end: with the broker unsettled, every partition still there
// (noted so); after an incomplete read, each not bounded or not finished,
// unless the topic or the partition is gone.
func noteUnread(rep *ReadBackReport, run ledger.RunInfo, reads drivers.ReadReport, to drivers.Offsets, gone byPartition[bool]) {
	rep.Unread = []int32{}
	run.StartOffsets.All(func(p int32, _ int64) bool {
		unsettled := rep.Unsettled != "" && !rep.TopicGone && !gone.get(p)
		if unsettled {
			// Any partition may still receive what was acked and is not
			// readable yet: none of them is read to its end.
			if _, noted := rep.Notes[p]; !noted {
				rep.Notes[p] = "read to the end it had, but the broker may still make acked messages readable in it: " + rep.Unsettled
			}
		}
		if unsettled || (!rep.Complete && !rep.TopicGone && !gone.get(p) && (!to.Has(p) || !readComplete(reads, p))) {
			rep.Unread = append(rep.Unread, p)
		}
		return true
	})
}

// readComplete reports whether reads finished partition p.
func readComplete(reads drivers.ReadReport, p int32) bool {
	pr, _ := reads.Get(p)
	return pr.Complete
}

// logStarts asks a driver that can say it (drivers.LogStarter) where each
// partition's log begins, and moves from past what was deleted: a read
// that began below the log start would wait forever at an offset that no
// longer exists (a partition deleted to its end), or, on a broker that
// skips ahead, read as if the deleted records had never been acked. Each
// partition whose log begins past from is recorded in rep.LogStarts and
// noted. A driver that cannot say, or a request that fails, leaves from
// as it was, as before: a partition deleted to its end then does not
// finish (its acked messages are unread, the verdict incomplete, never
// PASS), and one deleted in part fails on what its read misses.
func logStarts(ctx context.Context, d drivers.Driver, topic string, rep *ReadBackReport, from, to drivers.Offsets) {
	ls, ok := d.(drivers.LogStarter)
	if !ok || from.Len() == 0 {
		return
	}
	starts, err := ls.StartOffsets(ctx, topic)
	if err != nil {
		return
	}
	from.All(func(p int32, f int64) bool {
		start, ok := starts.Get(p)
		if !ok || start <= f {
			return true
		}
		rep.LogStarts.Set(p, start)
		end, _ := to.Get(p)
		from.Set(p, min(start, end))
		note := fmt.Sprintf("the log begins at offset %d, past the %d the read began at: the records below it were deleted (DeleteRecords or retention), and acked messages below it are lost", start, f)
		if old, ok := rep.Notes[p]; ok {
			note = old + "; " + note
		}
		rep.Notes[p] = note
		return true
	})
}

// noteUnfinished notes, for each partition of from that a failed read did
// not finish, where it stopped.
func noteUnfinished(rep *ReadBackReport, reads drivers.ReadReport, from drivers.Offsets) {
	from.All(func(p int32, start int64) bool {
		if _, ok := rep.Notes[p]; ok {
			return true
		}
		pr, ok := reads.Get(p)
		switch {
		case !ok:
			rep.Notes[p] = fmt.Sprintf("not read (from offset %d): %s", start, rep.Error)
		case !pr.Complete:
			rep.Notes[p] = fmt.Sprintf("stopped at offset %d of %d: %s", pr.Next, pr.Target, rep.Error)
		}
		return true
	})
}
