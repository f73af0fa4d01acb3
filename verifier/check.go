package verifier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/message"
)

// Options are the verdict's tolerances.
type Options struct {
	// NoDuplicates fails the verdict on any duplicate (for idempotent
	// producers, which promise none).
	NoDuplicates bool
	// Ordered fails the verdict on any reordering.
	Ordered bool
	// Window is the width of the per-window latency slices. Default: the
	// widest of 100ms, 200ms, 500ms, 1s, 2s, 5s, 10s, 30s, 1m, 2m, 5m that
	// still gives the load at least 30 windows (WindowFor).
	Window time.Duration
	// MaxSamples caps the sample IDs kept per failing class. Default 100.
	MaxSamples int
	// Recovery deadlines; zero means none. A missed deadline fails the
	// verdict: the longest interval without acks, and, for every fault that
	// took a node away, the time until it answered again and until every
	// replica was back in sync (never observed counts as missed).
	MaxNoAck, MaxReady, MaxInSync time.Duration
}

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

type stream struct {
	c    *ledger.Cursor
	head ledger.Event
	ok   bool
}

func (s *stream) next() { s.head, s.ok = s.c.Next() }

func (s *stream) at(p uint32, seq uint64) bool {
	return s.ok && s.head.Producer == p && s.head.Seq == seq
}

type window struct {
	sent, acked, failed, lost int64
	pub, e2e                  *hdrhistogram.Histogram
}

// Check judges the run recorded in l. It needs a completed ReadBack.
// Memory is bounded by the number of partitions and windows, not by the
// number of messages.
func Check(ctx context.Context, l *ledger.Ledger, opts Options) (*Result, error) {
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 100
	}
	var run ledger.RunInfo
	if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
		return nil, fmt.Errorf("ledger has no run description: %w (is this an ackcheck run directory?)", err)
	}
	if opts.Window <= 0 {
		opts.Window = 10 * time.Second // a run that died: its length is not known
		if !run.LoadEnd.IsZero() {
			opts.Window = WindowFor(run.LoadEnd.Sub(run.LoadStart))
		}
	}
	var rb ReadBackReport
	if err := l.GetMeta(MetaReadBack, &rb); err != nil {
		if errors.Is(err, ledger.ErrNoMeta) {
			return nil, fmt.Errorf("the run has not been read back yet: run `ackcheck verify` on it")
		}
		return nil, err
	}
	if err := l.Flush(); err != nil {
		return nil, err
	}
	sentThru := l.SentThrough()
	ft, err := loadFaults(l, run.LoadStart)
	if err != nil {
		return nil, err
	}

	res := &Result{
		RunID:            fmt.Sprintf("%016x", run.RunID),
		Driver:           run.Driver,
		Topic:            run.Topic,
		Shed:             run.Shed,
		RecordsRead:      rb.Records,
		Foreign:          rb.Foreign,
		OtherRun:         rb.OtherRun,
		LoadStart:        run.LoadStart,
		LoadEnd:          run.LoadEnd,
		CleanLedger:      run.Clean,
		ReadBackComplete: rb.Complete,
		ReadBackNotes:    rb.Notes,
		Errors:           run.Errors,
		Samples:          map[string][]Sample{},
	}
	sample := func(class string, s Sample) {
		if len(res.Samples[class]) < opts.MaxSamples {
			res.Samples[class] = append(res.Samples[class], s)
		}
	}

	var ss [4]stream
	for i, k := range []ledger.Kind{ledger.Send, ledger.Outcome, ledger.Read, ledger.LiveRead} {
		c, err := l.Scan(k)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ss[i] = stream{c: c}
		ss[i].next()
	}
	sends, outs, reads, lives := &ss[0], &ss[1], &ss[2], &ss[3]

	pubAll, e2eAll := load.NewHistogram(3), load.NewHistogram(3)
	var windows []*window
	windowAt := func(intended int64) *window {
		i := int((intended - run.LoadStart.UnixNano()) / int64(opts.Window))
		if i < 0 || i > 100000 {
			return nil
		}
		for len(windows) <= i {
			windows = append(windows, &window{pub: load.NewHistogram(2), e2e: load.NewHistogram(2)})
		}
		return windows[i]
	}
	var timeline []uint64 // bit i: an ack arrived in [LoadStart+i ms, +1 ms)
	loadEnd := run.LoadEnd
	markAck := func(at int64) {
		i := (at - run.LoadStart.UnixNano()) / int64(ackResolution)
		if i < 0 || i >= int64(maxTimeline/ackResolution) || (!loadEnd.IsZero() && at > loadEnd.UnixNano()) {
			return
		}
		for int64(len(timeline))*64 <= i {
			timeline = append(timeline, 0)
		}
		timeline[i/64] |= 1 << (i % 64)
	}

	// Per second of the load: sends and failures by intended time, acks by
	// ack time. Per partition: a bitmap of gapResolution buckets with acks.
	var perSecond []Second
	second := func(at int64) *Second {
		i := int((at - run.LoadStart.UnixNano()) / int64(time.Second))
		if i < 0 || i > int(maxTimeline/time.Second) {
			return nil
		}
		for len(perSecond) <= i {
			perSecond = append(perSecond, Second{T: len(perSecond)})
		}
		return &perSecond[i]
	}
	partAcks := map[int32][]uint64{}
	markPartition := func(p int32, at int64) {
		i := (at - run.LoadStart.UnixNano()) / int64(gapResolution)
		if i < 0 || i >= int64(maxTimeline/gapResolution) || (!loadEnd.IsZero() && at > loadEnd.UnixNano()) {
			return
		}
		bm := partAcks[p]
		for int64(len(bm))*64 <= i {
			bm = append(bm, 0)
		}
		bm[i/64] |= 1 << (i % 64)
		partAcks[p] = bm
	}

	lastOffset := map[int32]int64{} // per partition, for the current producer
	curProducer := uint32(0)
	var readBuf []ledger.Event
	var lastAckAt int64
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The next ID is the smallest head of the three verdict streams.
		var p uint32
		var seq uint64
		found := false
		for _, s := range []*stream{sends, outs, reads} {
			if s.ok && (!found || s.head.Producer < p || (s.head.Producer == p && s.head.Seq < seq)) {
				p, seq, found = s.head.Producer, s.head.Seq, true
			}
		}
		if !found {
			break
		}
		if p != curProducer || n == 0 {
			clear(lastOffset)
			curProducer = p
		}
		id := message.ID{Run: run.RunID, Producer: p, Seq: seq}

		var send ledger.Event
		sent := sends.at(p, seq)
		for sends.at(p, seq) {
			send = sends.head
			sends.next()
		}
		var ack ledger.Event
		acked, outcome := false, uint8(0)
		for outs.at(p, seq) {
			if outs.head.Status == ledger.OutcomeAcked {
				acked, ack = true, outs.head
			}
			outcome = outs.head.Status
			outs.next()
		}
		readBuf = readBuf[:0]
		for reads.at(p, seq) {
			readBuf = append(readBuf, reads.head)
			reads.next()
		}
		for lives.ok && (lives.head.Producer < p || (lives.head.Producer == p && lives.head.Seq < seq)) {
			lives.next()
		}
		e2e := int64(-1)
		for lives.at(p, seq) {
			if e2e < 0 || lives.head.Time < e2e {
				e2e = lives.head.Time
			}
			lives.next()
		}

		// Copies: corrupt ones are counted and never vouch for the message.
		valid := 0
		var first ledger.Event
		var others []int64
		for _, r := range readBuf {
			if r.Status != uint8(message.Valid) {
				res.Corrupt++
				sample("corrupt", Sample{ID: id.String(), Partition: r.Partition, Offset: r.Offset})
				continue
			}
			if valid > 0 && r.Partition == first.Partition && r.Offset == first.Offset {
				continue // the same copy, reported twice by the read
			}
			valid++
			if valid == 1 || r.Partition < first.Partition || (r.Partition == first.Partition && r.Offset < first.Offset) {
				if valid > 1 {
					others = append(others, first.Offset)
				}
				first = r
			} else {
				others = append(others, r.Offset)
			}
		}

		if !sent {
			if valid > 0 {
				if !run.Clean && int(p) < run.Producers && seq >= sentThru[p] {
					res.Unrecorded++
				} else {
					res.Phantom++
					sample("phantom", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
				}
			}
			continue
		}

		res.Sent++
		if sec := second(send.Time); sec != nil {
			sec.Sent++
			if !acked {
				sec.Failed++
			}
		}
		w := windowAt(send.Time)
		if w != nil {
			w.sent++
		}
		switch {
		case acked:
			res.Acked++
			load.RecordLatency(pubAll, time.Duration(ack.Time))
			at := send.Time + ack.Time
			markAck(at)
			markPartition(ack.Partition, at)
			if sec := second(at); sec != nil {
				sec.Acked++
			}
			ft.ack(ack.Partition, send.Time, at)
			lastAckAt = max(lastAckAt, at)
			if w != nil {
				w.acked++
				load.RecordLatency(w.pub, time.Duration(ack.Time))
			}
		case outcome == ledger.OutcomeRejected:
			res.Failed++
			res.Rejected++
		case outcome == ledger.OutcomeUnknown:
			res.Failed++
			res.Unknown++
		default:
			res.Failed++
			res.NoOutcome++
		}
		if !acked && w != nil {
			w.failed++
		}
		if e2e >= 0 {
			load.RecordLatency(e2eAll, time.Duration(e2e))
			if w != nil {
				load.RecordLatency(w.e2e, time.Duration(e2e))
			}
		}

		if valid == 0 {
			if acked {
				res.Lost++
				if w != nil {
					w.lost++
				}
				sample("lost", Sample{ID: id.String(), Partition: ack.Partition, Offset: ack.Offset})
			} else {
				res.NotWritten++
			}
			continue
		}
		res.Read++
		if valid > 1 {
			res.Duplicates += int64(valid - 1)
			sample("duplicates", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset, Others: others})
		}
		if !acked {
			res.Indeterminate++
		} else if ack.Offset >= 0 && !hasValidCopyAt(readBuf, ack.Partition, ack.Offset) {
			res.AckPositionMismatch++
		}
		// Reordering: the first copy of each sequence in a partition must
		// come after the first copy of the producer's previous sequence there.
		if last, ok := lastOffset[first.Partition]; ok && first.Offset < last {
			res.Reordered++
			sample("reordered", Sample{ID: id.String(), Partition: first.Partition, Offset: first.Offset})
		}
		lastOffset[first.Partition] = first.Offset
	}
	for _, s := range ss {
		if err := s.c.Err(); err != nil {
			if errors.Is(err, ledger.ErrDamaged) {
				return nil, err
			}
			return nil, fmt.Errorf("scan ledger: %w (the ledger is damaged)", err)
		}
	}

	var parts []int32
	for p := range run.StartOffsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	loadLen := int64(loadEnd.Sub(run.LoadStart) / gapResolution)
	res.Faults = ft.finish(parts, func(p int32, from, to int64) float64 {
		return longestStall(partAcks[p], loadLen, run.LoadStart.UnixNano(), from, to)
	})
	res.Notes = run.Notes
	if run.AckMeaning != "" {
		res.AckMeanings = append(res.AckMeanings, Phase{FromS: 0, Since: "the start", Meaning: run.AckMeaning})
	}
	for _, f := range res.Faults {
		if f.Result == "applied" && f.AckMeaning != "" {
			res.AckMeanings = append(res.AckMeanings, Phase{FromS: max(0, f.AtS), Since: f.Action + " " + f.Target, Meaning: f.AckMeaning})
		}
	}
	res.Timeline = perSecond
	res.GapMinMs = float64(gapMin / time.Millisecond)
	res.PartitionGaps = map[int32][]Gap{}
	for _, p := range parts {
		res.PartitionGaps[p] = []Gap{} // every partition is listed, gaps or not
		for _, g := range gaps(partAcks[p], loadLen, int64(gapMin/gapResolution)) {
			res.PartitionGaps[p] = append(res.PartitionGaps[p], Gap{
				FromS: (time.Duration(g[0]) * gapResolution).Seconds(),
				ToS:   (time.Duration(g[1]) * gapResolution).Seconds(),
			})
		}
	}
	res.Hist = &Histograms{Start: run.LoadStart, Window: opts.Window, PublishAll: pubAll, E2EAll: e2eAll}
	for _, w := range windows {
		res.Hist.Publish = append(res.Hist.Publish, w.pub)
		res.Hist.E2E = append(res.Hist.E2E, w.e2e)
	}
	res.Publish = summarize(pubAll)
	res.E2E = summarize(e2eAll)
	for i, w := range windows {
		res.Windows = append(res.Windows, Window{
			StartS: (time.Duration(i) * opts.Window).Seconds(),
			Sent:   w.sent, Acked: w.acked, Failed: w.failed, Lost: w.lost,
			Publish: summarize(w.pub), E2E: summarize(w.e2e),
		})
	}
	if loadEnd.IsZero() && lastAckAt > 0 {
		loadEnd = time.Unix(0, lastAckAt) // the run died: judge up to its last ack
	}
	gap, at := longestGap(timeline, int64(loadEnd.Sub(run.LoadStart)/ackResolution))
	res.LongestNoAckMs = float64(gap) * float64(ackResolution) / float64(time.Millisecond)
	res.LongestNoAckAt = (time.Duration(at) * ackResolution).Seconds()

	res.Verdict = Pass
	fail := func(check, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		res.Verdict = Fail
		res.Reasons = append(res.Reasons, msg)
		res.Failures = append(res.Failures, Failure{Check: check, Message: msg})
	}
	if res.Lost > 0 {
		fail(CheckLost, "%d acked messages were not read back", res.Lost)
	}
	if res.Corrupt > 0 {
		fail(CheckCorrupt, "%d copies failed their checksum", res.Corrupt)
	}
	if res.Phantom > 0 {
		fail(CheckPhantom, "%d messages were read that ackcheck never sent", res.Phantom)
	}
	if opts.NoDuplicates && res.Duplicates > 0 {
		fail(CheckDuplicates, "%d duplicate copies (--no-duplicates)", res.Duplicates)
	}
	if opts.Ordered && res.Reordered > 0 {
		fail(CheckReordered, "%d messages out of order (--ordered)", res.Reordered)
	}
	if !res.ReadBackComplete {
		fail(CheckReadBack, "the read-back did not reach every partition's end; rerun `ackcheck verify` when the brokers are back")
	}
	if res.Sent == 0 {
		fail(CheckSent, "nothing was sent: there is nothing to judge")
	}
	if res.Sent > 0 && res.Acked*100 < res.Sent {
		// "Nothing acked was lost" is vacuous when nothing was acked: a
		// run whose writes were all refused (a message over the topic's
		// max.message.bytes, an ACL) tested nothing. Under 1% fails too,
		// unless a fault that ran can explain it.
		faulted := false
		for _, f := range res.Faults {
			faulted = faulted || f.Result == "applied"
		}
		if res.Acked == 0 || !faulted {
			fail(CheckAcked, "only %d of %d sent messages were acked: the run tested almost nothing%s", res.Acked, res.Sent, topErrors(res.Errors, 3))
		}
	}
	if d := opts.MaxNoAck; d > 0 && res.LongestNoAckMs > float64(d/time.Millisecond) {
		fail(CheckMaxNoAck, "deadline: %.0f ms without acks exceeds --max-no-ack %s", res.LongestNoAckMs, d)
	}
	for _, f := range res.Faults {
		if f.FirstAckMs == nil {
			continue
		}
		late := func(v float64, d time.Duration) bool { return d > 0 && (v < 0 || v > float64(d/time.Millisecond)) }
		if late(f.ReadyMs, opts.MaxReady) {
			fail(CheckMaxReady, "deadline: node %d ready %s after the %s at %.1fs, over --max-ready %s", f.Node, msText(f.ReadyMs), f.Action, f.AtS, opts.MaxReady)
		}
		if late(f.InSyncMs, opts.MaxInSync) {
			fail(CheckMaxInSync, "deadline: replicas in sync %s after the %s at %.1fs, over --max-in-sync %s", msText(f.InSyncMs), f.Action, f.AtS, opts.MaxInSync)
		}
	}
	for _, f := range res.Faults {
		if f.Action == "unexpected-death" {
			// As in roachtest: a crash nobody scheduled means the run did
			// not test what it says it tested.
			fail(CheckUnexpectedDeath, "node %d died at %.1fs and no fault killed it", f.Node, f.AtS)
		}
	}
	return res, nil
}

func hasValidCopyAt(reads []ledger.Event, partition int32, offset int64) bool {
	for _, r := range reads {
		if r.Status == uint8(message.Valid) && r.Partition == partition && r.Offset == offset {
			return true
		}
	}
	return false
}

func summarize(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// longestGap returns the longest run of zero bits in the first n bits of
// the timeline (bits past its end are zero), and where it starts.
func longestGap(timeline []uint64, n int64) (length, start int64) {
	run, runStart := int64(0), int64(0)
	for i := int64(0); i < n; {
		word := uint64(0)
		if i/64 < int64(len(timeline)) {
			word = timeline[i/64]
		}
		if word == 0 && i%64 == 0 && i+64 <= n {
			run += 64
			i += 64
			continue
		}
		if word>>(i%64)&1 == 1 {
			if run > length {
				length, start = run, runStart
			}
			run = 0
			runStart = i + 1
		} else {
			run++
		}
		i++
	}
	if run > length {
		length, start = run, runStart
	}
	return length, start
}

// gaps returns the [from, to) bucket ranges of at least minLen empty
// buckets among the first n of bm.
func gaps(bm []uint64, n, minLen int64) [][2]int64 {
	var out [][2]int64
	start := int64(-1)
	for i := int64(0); i <= n; i++ {
		set := i == n || (i/64 < int64(len(bm)) && bm[i/64]>>(i%64)&1 == 1)
		switch {
		case !set && start < 0:
			start = i
		case set && start >= 0:
			if i-start >= minLen {
				out = append(out, [2]int64{start, i})
			}
			start = -1
		}
	}
	return out
}

// WindowFor is the default latency window for a load of length d: the
// widest of a few round widths that gives at least 30 windows, so that a
// 60 s run's chart has 30 points, not 6.
func WindowFor(d time.Duration) time.Duration {
	widths := []time.Duration{5 * time.Minute, 2 * time.Minute, time.Minute, 30 * time.Second, 10 * time.Second,
		5 * time.Second, 2 * time.Second, time.Second, 500 * time.Millisecond, 200 * time.Millisecond}
	for _, w := range widths {
		if d/w >= 30 {
			return w
		}
	}
	return 100 * time.Millisecond
}

// longestStall returns, in ms, the longest run of gapResolution buckets
// without an ack among the first n of bm that overlaps [from, to] (Unix
// ns; to = 0: the end of the load). Zero when acks never paused there.
func longestStall(bm []uint64, n, loadStart, from, to int64) float64 {
	fb := (from - loadStart) / int64(gapResolution)
	tb := n
	if to > 0 {
		tb = min(n, (to-loadStart)/int64(gapResolution))
	}
	longest := int64(0)
	for _, g := range gaps(bm, n, 1) {
		if g[1] > fb && g[0] <= tb {
			longest = max(longest, g[1]-g[0])
		}
	}
	return float64(longest) * float64(gapResolution) / float64(time.Millisecond)
}

// topErrors names the n most frequent failure texts, for a reason.
func topErrors(errs map[string]int64, n int) string {
	type kv struct {
		text  string
		count int64
	}
	var all []kv
	for k, v := range errs {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.count != b.count {
			return int(b.count - a.count)
		}
		return strings.Compare(a.text, b.text)
	})
	var parts []string
	for _, e := range all[:min(n, len(all))] {
		parts = append(parts, fmt.Sprintf("%d× %s", e.count, e.text))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the broker answered: " + strings.Join(parts, "; ")
}

func msText(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", v)
}
