package verifier

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
)

// Stage 3 of Check: timelines. Every sent message is placed in time: its
// send by its scheduled (intended) time, its ack at the moment it came.
// From these come the latency histograms (overall and per window), the
// per-second counts, the cluster-wide stretch without acks (1 ms buckets),
// each partition's stretches without acks (10 ms buckets), and each
// fault's first ack per partition. Memory is bounded by the run's length
// and its partitions, not by its messages.

// ackResolution is the bucket width of the no-ack timeline.
const ackResolution = time.Millisecond

// maxTimeline caps the no-ack timeline (1 bit per ms: 24 h is 10.8 MB).
const maxTimeline = 24 * time.Hour

// Per-partition stretches without acks are tracked in buckets of
// gapResolution, and reported from gapMin on.
const (
	gapResolution = 10 * time.Millisecond
	gapMin        = 500 * time.Millisecond
)

type window struct {
	sent, acked, failed, lost int64
	pub, e2e                  *hdrhistogram.Histogram
}

type timelines struct {
	loadStart  time.Time
	start, end int64 // the load, Unix ns; end 0 when the run died
	window     time.Duration
	faults     *faultTracker

	pubAll, e2eAll *hdrhistogram.Histogram
	windows        []*window
	acks           []uint64 // bit i: an ack arrived in [start+i ms, +1 ms)
	perSecond      []Second
	partAcks       byPartition[partAcks] // per partition: acks and their 10 ms buckets
	arena          []uint64              // the buckets of partitions with more than one word (partAcks)
	touched        int64                 // partitions with at least one ack
	lastAckAt      int64
}

func newTimelines(run ledger.RunInfo, window time.Duration, ft *faultTracker) *timelines {
	t := &timelines{loadStart: run.LoadStart, start: run.LoadStart.UnixNano(), window: window, faults: ft,
		pubAll: latency.New(3), e2eAll: latency.New(3), partAcks: newByPartition[partAcks](denseCount(run))}
	if !run.LoadEnd.IsZero() {
		t.end = run.LoadEnd.UnixNano()
	}
	return t
}

// windowIndex is the index of the latency window of width w holding at,
// counted from start; false before start or past the last window kept.
func windowIndex(at, start int64, w time.Duration) (int, bool) {
	if w <= 0 {
		return 0, false
	}
	i := int((at - start) / int64(w))
	return i, i >= 0 && i <= maxWindows
}

// maxWindows bounds the latency windows a run keeps.
const maxWindows = 100000

func (t *timelines) windowAt(intended int64) *window {
	i, ok := windowIndex(intended, t.start, t.window)
	if !ok {
		return nil
	}
	for len(t.windows) <= i {
		t.windows = append(t.windows, &window{pub: latency.New(2), e2e: latency.New(2)})
	}
	return t.windows[i]
}

func (t *timelines) second(at int64) *Second {
	i := int((at - t.start) / int64(time.Second))
	if i < 0 || i > int(maxTimeline/time.Second) {
		return nil
	}
	for len(t.perSecond) <= i {
		t.perSecond = append(t.perSecond, Second{T: len(t.perSecond)})
	}
	return &t.perSecond[i]
}

// mark sets bit (at-start)/res of bm, within the load and maxTimeline.
func (t *timelines) mark(bm []uint64, at int64, res time.Duration) []uint64 {
	i := (at - t.start) / int64(res)
	if i < 0 || i >= int64(maxTimeline/res) || (t.end != 0 && at > t.end) {
		return bm
	}
	for int64(len(bm))*64 <= i {
		bm = append(bm, 0)
	}
	bm[i/64] |= 1 << (i % 64)
	return bm
}

// add places one sent message; lost says the classifier found it lost.
func (t *timelines) add(h *history, lost bool) {
	if sec := t.second(h.send.Time); sec != nil {
		sec.Sent++
		if !h.acked {
			sec.Failed++
		}
	}
	w := t.windowAt(h.send.Time)
	if w != nil {
		w.sent++
		if !h.acked {
			w.failed++
		}
		if lost {
			w.lost++
		}
	}
	if h.acked {
		latency.Record(t.pubAll, time.Duration(h.ack.Time))
		at := h.send.Time + h.ack.Time
		t.acks = t.mark(t.acks, at, ackResolution)
		// One slice index per ack; the buckets grow in place.
		pa := t.partAcks.at(h.ack.Partition)
		if pa.acked == 0 {
			t.touched++
		}
		pa.acked++
		t.markPart(pa, at)
		if sec := t.second(at); sec != nil {
			sec.Acked++
		}
		t.faults.ack(h.ack.Partition, h.send.Time, at)
		t.lastAckAt = max(t.lastAckAt, at)
		if w != nil {
			w.acked++
			latency.Record(w.pub, time.Duration(h.ack.Time))
		}
	}
	if h.e2e >= 0 {
		latency.Record(t.e2eAll, time.Duration(h.e2e))
		if w != nil {
			latency.Record(w.e2e, time.Duration(h.e2e))
		}
	}
}

// partAcks is one partition's acks: how many, and its 10 ms buckets with
// acks as a bitmap of n words whose first is word base of the load's. A
// partition holds only the words from its earliest ack to its latest:
// with a million partitions of a message or two each, one word each, not
// the whole load's length (issue 37: 256 bytes a partition for a 20 s
// load before).
//
// It holds no pointer: one word is held in place (word), more in the
// timelines' arena from index word on, so a million partitions are one
// slice of 24-byte elements that the garbage collector never scans and
// no small allocation each (issue 37's flat cost: a slice header and an
// 8-byte allocation per partition before).
type partAcks struct {
	acked int64
	base  int32  // word index of the first word held (the load has at most maxTimeline/gapResolution/64 words)
	n     int32  // words held: 0 none, 1 in word, more in the arena
	word  uint64 // the one word (n == 1), or the arena index of the first (n > 1)
}

// arenaCap is the room a partition's words of n > 1 have in the arena:
// the next power of two. A partition moves only when its words outgrow
// it, to room at least twice as large, so one whose acks stretch over the
// load moves O(log n) times and the room it left behind is less than the
// room it has.
func arenaCap(n int32) int32 {
	c := int32(2)
	for c < n {
		c *= 2
	}
	return c
}

// markPart sets the bucket of at in pa, within the load and maxTimeline.
func (t *timelines) markPart(pa *partAcks, at int64) {
	i := (at - t.start) / int64(gapResolution)
	if i < 0 || i >= int64(maxTimeline/gapResolution) || (t.end != 0 && at > t.end) {
		return
	}
	w, bit := int32(i/64), uint64(1)<<(i%64)
	switch {
	case pa.n == 0:
		pa.base, pa.n, pa.word = w, 1, bit
		return
	case pa.n == 1 && w == pa.base:
		pa.word |= bit
		return
	case w >= pa.base && w < pa.base+pa.n: // n > 1: in the arena already
		t.arena[int64(pa.word)+int64(w-pa.base)] |= bit
		return
	}
	// The words grow to take w: in place while the arena room allows
	// (moved up within it when w is before them; the room past n is
	// zero, nothing is written there), else moved to room at least twice
	// as large at the arena's end.
	base, end := min(pa.base, w), max(pa.base+pa.n, w+1)
	if pa.n > 1 && end-base <= arenaCap(pa.n) {
		room := t.arena[pa.word : int64(pa.word)+int64(end-base)]
		if d := pa.base - base; d > 0 {
			copy(room[d:], room[:pa.n])
			clear(room[:d])
		}
		pa.base, pa.n = base, end-base
		room[w-base] |= bit
		return
	}
	at0 := int64(len(t.arena))
	t.arena = append(t.arena, make([]uint64, arenaCap(end-base))...)
	if pa.n == 1 {
		t.arena[at0+int64(pa.base-base)] = pa.word
	} else {
		copy(t.arena[at0+int64(pa.base-base):], t.arena[pa.word:int64(pa.word)+int64(pa.n)])
	}
	pa.base, pa.n, pa.word = base, end-base, uint64(at0)
	t.arena[at0+int64(w-base)] |= bit
}

// partAckBuckets are partition p's 10 ms buckets with acks, as a bitmap
// whose first word is word base of the load's (nil: none). A partition
// of one word gets it in one, which the next call may reuse: use the
// bitmap before asking for another partition's.
func (t *timelines) partAckBuckets(p int32, one *[1]uint64) (bm []uint64, base int64) {
	pa := t.partAcks.get(p)
	switch pa.n {
	case 0:
		return nil, 0
	case 1:
		one[0] = pa.word
		return one[:], int64(pa.base)
	}
	return t.arena[pa.word : int64(pa.word)+int64(pa.n)], int64(pa.base)
}

// finish writes the timelines into res; parts are the run's partitions.
// With dir set it writes every partition's figures to PartitionsFile
// there (partitionFigures).
func (t *timelines) finish(res *Result, parts []int32, dir string) error {
	loadLen := int64(0)
	if t.end != 0 {
		loadLen = (t.end - t.start) / int64(gapResolution)
	}
	var one [1]uint64
	res.Faults = t.faults.finish(parts, func(p int32, from, to int64) float64 {
		bm, base := t.partAckBuckets(p, &one)
		return longestStallFrom(bm, base, loadLen, t.start, from, to)
	})
	res.Timeline = t.perSecond
	res.Partitions, res.PartitionsTouched = len(parts), t.touched
	res.GapMinMs = float64(gapMin / time.Millisecond)
	if err := t.partitionFigures(res, parts, loadLen, dir); err != nil {
		return err
	}
	res.Hist = &Histograms{Start: t.loadStart, Window: t.window, PublishAll: t.pubAll, E2EAll: t.e2eAll}
	for _, w := range t.windows {
		res.Hist.Publish = append(res.Hist.Publish, w.pub)
		res.Hist.E2E = append(res.Hist.E2E, w.e2e)
	}
	res.Publish = summarize(t.pubAll)
	res.E2E = summarize(t.e2eAll)
	for i, w := range t.windows {
		res.Windows = append(res.Windows, Window{
			StartS: (time.Duration(i) * t.window).Seconds(),
			Sent:   w.sent, Acked: w.acked, Failed: w.failed, Lost: w.lost,
			Publish: summarize(w.pub), E2E: summarize(w.e2e),
		})
	}
	end := t.end
	if end == 0 && t.lastAckAt > 0 {
		end = t.lastAckAt // the run died: judge up to its last ack
	}
	gap, at := longestGap(t.acks, (end-t.start)/int64(ackResolution))
	res.LongestNoAckMs = float64(gap) * float64(ackResolution) / float64(time.Millisecond)
	res.LongestNoAckAt = (time.Duration(at) * ackResolution).Seconds()
	return nil
}
