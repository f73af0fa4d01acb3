package verifier

import (
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// Stage 2 of Check: classify. Each message's history is counted into the
// verdict's classes (Result's counts), with up to MaxSamples IDs kept per
// failing class. Classification needs nothing but the history, the run's
// description and, for reordering, the previous sequence's copy of the
// same producer in each partition.

type classifier struct {
	res        *Result
	run        ledger.RunInfo
	sentThru   map[uint32]uint64 // per producer, one past the highest committed Send
	window     *crashWindow      // which reads without a recorded send a crash explains
	maxSamples int
	// unread are the partitions the read-back did not read to their end:
	// a message acked there and not read is not shown lost (Unread).
	unread func(partition int32) bool
	// logStart says where a partition's log begins when the read-back
	// found it begins past the run's start (ReadBackReport.LogStarts): an
	// acked message below it is lost even in a partition not read to its
	// end, since no read can find it there any more.
	logStart func(partition int32) (int64, bool)

	started    bool
	producer   uint32
	lastOffset map[int32]int64 // per partition, the current producer's last first copy
	others     []int64
	inv        *investigation // lists and sums the failing messages
}

// newClassifier counts into res. Its crash window is run's own without
// a flush clock (no end); Check sets the one its ledgers give.
func newClassifier(res *Result, run ledger.RunInfo, sentThru map[uint32]uint64, maxSamples int) *classifier {
	w := &crashWindow{segs: []crashSegment{{hi: uint32(run.Producers), clean: run.Clean, plan: run.Plan, start: run.LoadStart}}}
	return &classifier{res: res, run: run, sentThru: sentThru, window: w, maxSamples: maxSamples, lastOffset: map[int32]int64{}}
}

func (c *classifier) sample(class string, s Sample) {
	if len(c.res.Samples[class]) < c.maxSamples {
		c.res.Samples[class] = append(c.res.Samples[class], s)
	}
}

// add counts h. It reports whether h was sent (the timelines count only
// sent messages) and whether it is lost (acked, never read intact).
func (c *classifier) add(h *history) (sent, lost bool) {
	res := c.res
	if !c.started || h.producer != c.producer {
		clear(c.lastOffset)
		c.producer, c.started = h.producer, true
	}
	id := message.ID{Run: c.run.RunID, Producer: h.producer, Seq: h.seq}

	// Copies: corrupt ones are counted and never vouch for the message.
	valid := 0
	var first ledger.Event
	c.others = c.others[:0]
	for _, r := range h.reads {
		if r.Status != uint8(message.Valid) {
			res.Corrupt++
			c.sample("corrupt", Sample{ID: id.String(), Partition: r.Partition, Offset: r.Offset})
			continue
		}
		if valid > 0 && r.Partition == first.Partition && r.Offset == first.Offset {
			continue // the same copy, reported twice by the read
		}
		valid++
		if valid == 1 || r.Partition < first.Partition || (r.Partition == first.Partition && r.Offset < first.Offset) {
			if valid > 1 {
				c.others = append(c.others, first.Offset)
			}
			first = r
		} else {
			c.others = append(c.others, r.Offset)
		}
	}

	if !h.sent {
		if valid > 0 {
			// A send the ledger lost in the crash window of a run whose
			// ackcheck died is "unrecorded"; one past the window makes the
			// ledger unproven; any other is a phantom (crashwindow.go).
			switch c.window.place(h.producer, h.seq, c.sentThru[h.producer], first.Time) {
			case inWindow:
				res.Unrecorded++
			case pastWindow:
				res.Unrecorded++
				res.UnrecordedPastWindow++
				c.sample("unrecorded past the crash window", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
			default:
				res.Phantom++
				c.sample("phantom", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
			}
		}
		return false, false
	}

	res.Sent++
	switch {
	case h.acked:
		res.Acked++
	case h.outcome == ledger.OutcomeRejected:
		res.Failed++
		res.Rejected++
	case h.outcome == ledger.OutcomeUnknown:
		res.Failed++
		res.Unknown++
	default:
		res.Failed++
		res.NoOutcome++
	}

	if valid == 0 {
		if h.acked {
			var logStart int64 // > 0: the log now begins past the acked offset
			if c.logStart != nil && h.ack.Offset >= 0 {
				if ls, ok := c.logStart(h.ack.Partition); ok && h.ack.Offset < ls {
					logStart = ls
				}
			}
			if logStart == 0 && c.unread != nil && c.unread(h.ack.Partition) {
				// Not read, and perhaps in what was not read: not shown
				// lost, and never counted or listed as lost.
				res.Unread++
				c.inv.addUnread(id.String(), h.ack.Partition, h.ack.Offset, h.send.Time, h.send.Time+h.ack.Time)
				return true, false
			}
			res.Lost++
			if logStart > 0 {
				res.LostBelowLogStart++
			}
			c.sample("lost", Sample{ID: id.String(), Partition: h.ack.Partition, Offset: h.ack.Offset})
			c.inv.addLost(id.String(), h.ack.Partition, h.ack.Offset, h.send.Time, h.send.Time+h.ack.Time, logStart)
			return true, true
		}
		res.NotWritten++
		return true, false
	}
	res.Read++
	if valid > 1 {
		res.Duplicates += int64(valid - 1)
		c.sample("duplicates", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset, Others: append([]int64(nil), c.others...)})
		dl := DuplicateLine{ID: id.String(), Partition: first.Partition, Offset: first.Offset, OtherOffsets: append([]int64(nil), c.others...)}
		if h.acked {
			off := h.ack.Offset
			dl.AckedOffset = &off
		}
		c.inv.addDuplicate(dl, h.send.Time)
	}
	if !h.acked {
		res.Indeterminate++
	} else if h.ack.Offset >= 0 && !hasValidCopyAt(h.reads, h.ack.Partition, h.ack.Offset) {
		res.AckPositionMismatch++
	}
	// Reordering: the first copy of each sequence in a partition must come
	// after the first copy of the producer's previous sequence there.
	if last, ok := c.lastOffset[first.Partition]; ok && first.Offset < last {
		res.Reordered++
		c.sample("reordered", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
		c.inv.addReordered(ReorderedLine{ID: id.String(), Partition: first.Partition, Offset: first.Offset, PreviousOffset: last}, h.send.Time)
	}
	c.lastOffset[first.Partition] = first.Offset
	return true, false
}

func hasValidCopyAt(reads []ledger.Event, partition int32, offset int64) bool {
	for _, r := range reads {
		if r.Status == uint8(message.Valid) && r.Partition == partition && r.Offset == offset {
			return true
		}
	}
	return false
}
