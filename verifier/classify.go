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
	res      *Result
	run      ledger.RunInfo
	sentThru map[uint32]uint64 // per producer, one past the highest committed Send
	window   *crashWindow      // which reads without a recorded send a crash explains
	// firstUnrecorded is, per producer, the send time of its first read
	// without a recorded send within the schedule: it opens the
	// producer's crash window.
	firstUnrecorded map[uint32]int64
	maxSamples      int
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
	lastOffset byPartition[int64] // per partition, the current producer's last first copy's offset + 1 (0: none)
	others     []int64
	inv        *investigation // lists and sums the failing messages
}

// newClassifier counts into res. Its crash window is run's own without
// a flush clock (no end); Check sets the one its ledgers give.
func newClassifier(res *Result, run ledger.RunInfo, sentThru map[uint32]uint64, maxSamples int) *classifier {
	w := &crashWindow{segs: []crashSegment{{hi: uint32(run.Producers), clean: run.Clean, plan: run.Plan, start: run.LoadStart}}}
	return &classifier{res: res, run: run, sentThru: sentThru, window: w, firstUnrecorded: map[uint32]int64{}, maxSamples: maxSamples, lastOffset: newByPartition[int64](denseCount(run))}
}

func (c *classifier) sample(class string, s Sample) {
	if len(c.res.Samples[class]) < c.maxSamples {
		c.res.Samples[class] = append(c.res.Samples[class], s)
	}
}

// add counts h. It reports whether h was sent (the timelines count only
// sent messages) and whether it is lost (acked, never read intact).
// It is called once per message: it and the stages it calls allocate
// nothing but the samples and list lines they keep.
func (c *classifier) add(h *history) (sent, lost bool) {
	if !c.started || h.producer != c.producer {
		c.lastOffset.reset()
		c.producer, c.started = h.producer, true
	}
	id := message.ID{Run: c.run.RunID, Producer: h.producer, Seq: h.seq}
	valid, first := c.copies(h, id)
	if !h.sent {
		c.addUnsent(h, id, valid, first)
		return false, false
	}
	c.countOutcome(h)
	if valid == 0 {
		return true, c.addNeverRead(h, id)
	}
	c.addRead(h, id, valid, first)
	return true, false
}

// copies counts h's corrupt copies (which never vouch for the message)
// and returns how many distinct intact copies were read and the first of
// them (lowest partition, then offset); c.others holds the offsets of the
// other intact copies.
func (c *classifier) copies(h *history, id message.ID) (valid int, first ledger.Event) {
	c.others = c.others[:0]
	for _, r := range h.reads {
		if r.Status != uint8(message.Valid) {
			c.res.Corrupt++
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
	return valid, first
}

// addUnsent counts a message read without a recorded send: a send the
// ledger lost in the crash window of a run whose ackcheck died is
// "unrecorded"; one past the window makes the ledger unproven; any other
// is a phantom (crashwindow.go). Unread, it counts nothing. The first
// unrecorded send of each producer in the window is kept
// (firstUnrecorded): the window is placed from it.
func (c *classifier) addUnsent(h *history, id message.ID, valid int, first ledger.Event) {
	if valid == 0 {
		return
	}
	res := c.res
	class, at := c.window.place(h.producer, h.seq, c.sentThru[h.producer], first.Time, c.firstUnrecorded[h.producer])
	if _, ok := c.firstUnrecorded[h.producer]; !ok && class == inWindow {
		c.firstUnrecorded[h.producer] = at
	}
	switch class {
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

// countOutcome counts a sent message by its send's outcome: acked, or
// failed as rejected, unknown or with no outcome recorded.
func (c *classifier) countOutcome(h *history) {
	res := c.res
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
}

// addNeverRead counts a sent message of which no intact copy was read and
// reports whether it is lost: acked, and not in a partition left unread
// (then it is only unread). Not acked, it was not written.
func (c *classifier) addNeverRead(h *history, id message.ID) (lost bool) {
	res := c.res
	if !h.acked {
		res.NotWritten++
		return false
	}
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
		return false
	}
	res.Lost++
	if logStart > 0 {
		res.LostBelowLogStart++
	}
	c.sample("lost", Sample{ID: id.String(), Partition: h.ack.Partition, Offset: h.ack.Offset})
	c.inv.addLost(id.String(), h.ack.Partition, h.ack.Offset, h.send.Time, h.send.Time+h.ack.Time, logStart)
	return true
}

// addRead counts a sent message read intact (valid copies, first the
// first of them): its duplicates, an unacked one as indeterminate, an ack
// whose position holds no intact copy, and a copy out of order after the
// producer's previous sequence in its partition.
func (c *classifier) addRead(h *history, id message.ID, valid int, first ledger.Event) {
	res := c.res
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
	last := c.lastOffset.at(first.Partition)
	if *last > 0 && first.Offset < *last-1 {
		res.Reordered++
		c.sample("reordered", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
		c.inv.addReordered(ReorderedLine{ID: id.String(), Partition: first.Partition, Offset: first.Offset, PreviousOffset: *last - 1}, h.send.Time)
	}
	*last = first.Offset + 1
}

func hasValidCopyAt(reads []ledger.Event, partition int32, offset int64) bool {
	for _, r := range reads {
		if r.Status == uint8(message.Valid) && r.Partition == partition && r.Offset == offset {
			return true
		}
	}
	return false
}
