package verifier

import (
	"context"
	"errors"
	"fmt"
	"github.com/ackcheck/ackcheck/faults"
	"math/bits"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/ledger"
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
	// Changes are the checks a re-read changed from the run's own, and
	// ChecksUnknown says the run's own are not known (see Rejudge);
	// result.json states both.
	Changes       []string
	ChecksUnknown bool
	// ListDir, if set, is where Check writes lost.jsonl, duplicates.jsonl
	// and reordered.jsonl (the run directory); "" writes none.
	ListDir string
	// ListMax caps the lines of each list; 0, the default, lists all.
	ListMax int
}

// Check judges the run recorded in l. It needs a completed ReadBack.
//
// It runs in stages, each in its own file and testable alone: merge the
// ledger's sorted streams into one history per message ID (merge.go);
// count each history into the verdict's classes (classify.go); place it
// in time for latencies, stretches without acks and recovery figures
// (timelines.go); then apply the verdict's rules (verdict.go). Memory is
// bounded by the number of partitions and windows, not by the number of
// messages.
func Check(ctx context.Context, l *ledger.Ledger, opts Options) (*Result, error) {
	return CheckLedgers(ctx, Ledgers{Run: l, Reads: l}, opts)
}

// Ledgers are what a verdict reads: the run's ledger as the load left it
// (sends, outcomes, live reads, faults, the run's description), and the
// ledger of the read-back being judged (reads and the ReadBackReport).
// verify opens Run read-only, so that judging a run again never changes
// the evidence, and writes a fresh Reads beside it; a run directory from
// before that kept its reads in Run, and Reads is then Run too.
type Ledgers struct {
	Run, Reads *ledger.Ledger
	// Shards, when set, are the run ledgers of a load spread over
	// processes (run --shard), Run is nil and Reads is the one read-back
	// of their topic (see shards.go).
	Shards []Shard
	// Timeline, for a sharded run, is its fault timeline kept outside
	// the shards' ledgers (see FaultTimeline); nil: the ledgers' own.
	Timeline *FaultTimeline
}

// CheckLedgers is Check on a run's ledger and a read-back's ledger of its
// own. When Run was opened read-only, the result states what its proof
// established (Result.Ledger), and a ledger that cannot be proven whole
// gives no PASS.
func CheckLedgers(ctx context.Context, lg Ledgers, opts Options) (*Result, error) {
	src, err := sourceOf(&lg)
	if err != nil {
		return nil, err
	}
	run := src.run
	opts = opts.forRun(run)
	rb, err := readBackOf(lg, run)
	if err != nil {
		return nil, err
	}
	ft, err := loadFaults(src.faults, run.LoadStart)
	if err != nil {
		return nil, err
	}
	ft.sizeFor(run)
	res := newResult(run, rb)
	res.Ledger = src.proof
	if err := classifyHistories(ctx, src, lg.Reads, rb, ft, opts, res); err != nil {
		return nil, err
	}
	if lg.Shards == nil {
		if err := judgeGroup(ctx, lg.Run, lg.Reads, run, ft.records, opts, res); err != nil {
			return nil, err
		}
	}
	addRunFigures(res, src)
	applyVerdict(res, opts)
	return res, nil
}

// sourceOf is the run side of lg: a sharded run's shards merged, or the
// one run ledger, which is also the read-back's when lg has no Reads of
// its own (a run directory from before reads were kept apart).
func sourceOf(lg *Ledgers) (*runSource, error) {
	if lg.Shards != nil {
		if lg.Reads == nil {
			return nil, fmt.Errorf("a sharded run is judged against a read-back ledger of its own")
		}
		return shardSource(lg.Shards, lg.Timeline)
	}
	if lg.Reads == nil {
		lg.Reads = lg.Run
	}
	return singleSource(lg.Run)
}

// forRun is o with its defaults filled in for run: 100 samples a class,
// and a timeline window fitted to the load's length (10 s for a run that
// died, whose length is not known).
func (o Options) forRun(run ledger.RunInfo) Options {
	if o.MaxSamples <= 0 {
		o.MaxSamples = 100
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second // a run that died: its length is not known
		if !run.LoadEnd.IsZero() {
			o.Window = WindowFor(run.LoadEnd.Sub(run.LoadStart))
		}
	}
	return o
}

// readBackOf is the report of the read-back in lg.Reads, once it is known
// to be of run and its reads are flushed; a run not read back yet is
// refused with the command that reads it.
func readBackOf(lg Ledgers, run ledger.RunInfo) (ReadBackReport, error) {
	rb, err := readBackReport(lg.Reads)
	if err != nil {
		return rb, err
	}
	if err := readsOfRun(lg, run, rb); err != nil {
		return rb, err
	}
	if err := lg.Reads.Flush(); err != nil {
		return rb, err
	}
	return rb, nil
}

// readBackReport is the report of the read-back reads holds; a ledger
// not read back yet is refused with the command that reads it.
func readBackReport(reads *ledger.Ledger) (ReadBackReport, error) {
	var rb ReadBackReport
	if err := reads.GetMeta(MetaReadBack, &rb); err != nil {
		if errors.Is(err, ledger.ErrNoMeta) {
			return rb, fmt.Errorf("the run has not been read back yet: run `ackcheck verify` on it")
		}
		return rb, err
	}
	return rb, nil
}

// newResult is the result before any message is judged: what the run and
// its read-back recorded of themselves.
func newResult(run ledger.RunInfo, rb ReadBackReport) *Result {
	res := &Result{
		RunID:            RunIDText(run.RunID),
		Driver:           run.Driver,
		Topic:            run.Topic,
		RecordsRead:      rb.Records,
		Foreign:          rb.Foreign,
		OtherRun:         rb.OtherRun,
		LoadStart:        run.LoadStart,
		LoadEnd:          run.LoadEnd,
		CleanLedger:      run.Clean,
		ReadBackComplete: rb.Complete,
		ReadBackError:    rb.Error,
		TopicGone:        rb.TopicGone,
		ReadBackS:        rb.Took.Seconds(),
		ReadBackAt:       rb.At,
		ReadBackNotes:    rb.Notes,
		ReadBackDamaged:  rb.Damaged,
		Errors:           run.Errors,
		Samples:          map[string][]Sample{},
		Notes:            run.Notes,
	}
	if rb.Settled != "" {
		res.Notes = append(slices.Clip(res.Notes), "before the read-back, "+rb.Settled)
	}
	return res
}

// classifyHistories is the one pass over every message: each history the
// merger joins from src and reads goes to the classifier, the timelines
// (once sent) and src's shard counts, and the investigation lists what it
// asks for. It owns the merger and the investigation, closed on return,
// and fills res with the classes, timelines and lists.
func classifyHistories(ctx context.Context, src *runSource, reads *ledger.Ledger, rb ReadBackReport, ft *faultTracker, opts Options, res *Result) error {
	run := src.run
	m, err := openMerger(src, reads)
	if err != nil {
		return err
	}
	defer m.close()
	inv, err := newInvestigation(opts.ListDir, opts.ListMax, run.LoadStart, ft.records)
	if err != nil {
		return err
	}
	defer inv.abort() // no-op once finished
	cls := newClassifier(res, run, src.sentThru, opts.MaxSamples)
	cls.window = &src.window
	cls.unread = unreadPartitions(rb)
	cls.logStart = logStartOf(rb)
	cls.inv = inv
	tl := newTimelines(run, opts.Window, ft)
	var h history
	for n := 0; m.next(&h); n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		sent, lost := cls.add(&h)
		if sent {
			tl.add(&h, lost)
		}
		src.count(&h, lost)
	}
	if err := m.err(); err != nil {
		return err
	}

	if err := tl.finish(res, run.StartOffsets.Partitions(), opts.ListDir); err != nil {
		return err
	}
	return inv.finish(opts.ListDir, res)
}

// addRunFigures adds to res what the run recorded beside its messages:
// what an ack meant in each phase, acks by class, pacing lag, callback
// time, CPU steal, what was shed, the experiment against its plan, the
// shards, and the crash window's unrecorded sends.
func addRunFigures(res *Result, src *runSource) {
	run := src.run
	if run.AckMeaning != "" {
		res.AckMeanings = append(res.AckMeanings, Phase{FromS: 0, Since: "the start", Meaning: run.AckMeaning})
	}
	for _, f := range res.Faults {
		if f.Result == faults.Applied && f.AckMeaning != "" {
			res.AckMeanings = append(res.AckMeanings, Phase{FromS: max(0, f.AtS), Since: string(f.Action) + " " + f.Target, Meaning: f.AckMeaning})
		}
	}
	res.AckedByClass = run.AckClasses
	if pl := run.PacingLag; pl != nil {
		res.PacingLag = lagLatency(pl)
	}
	res.StealPct = run.StealPct
	if ct := run.CallbackTime; ct != nil {
		res.CallbackTime = lagLatency(ct)
	}
	if src.shedKnown() {
		shed := run.Shed
		res.Shed = &shed
	}
	res.Experiment = src.experiment()
	if n := res.UnrecordedPastWindow; n > 0 {
		res.unprove(src.window.pastWindowWhy(n))
	}
	res.Shards = src.shards
	src.noteIdleShards(res)
}

// lagLatency is a lag the load recorded in microseconds, in milliseconds.
func lagLatency(l *ledger.LagSummary) Latency {
	us := func(v int64) float64 { return float64(v) / 1000 }
	return Latency{Count: l.Count, P50: us(l.P50Us), P99: us(l.P99Us), Max: us(l.MaxUs)}
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
func gaps(bm []uint64, n, minLen int64) [][2]int64 { return gapsFrom(nil, bm, 0, n, minLen) }

// gapsFrom is gaps of a bitmap whose first word is word base: the words
// before it and after its end are empty. It visits only the set bits (a
// word at a time, bits.TrailingZeros64), not every bucket of the load: a
// million partitions of an ack or two each are a million short bitmaps
// (issue 37). Bucket n counts as set: a gap ends at the load's end. It
// appends to out, so that a caller walking many partitions reuses one
// slice.
func gapsFrom(out [][2]int64, bm []uint64, base, n, minLen int64) [][2]int64 {
	next := int64(0) // the first bucket after the last set one
	gapTo := func(s int64) {
		if s-next >= minLen && s > next {
			out = append(out, [2]int64{next, s})
		}
		next = s + 1
	}
	for k, w := range bm {
		for ; w != 0; w &= w - 1 {
			s := (base+int64(k))*64 + int64(bits.TrailingZeros64(w))
			if s >= n {
				gapTo(n)
				return out
			}
			gapTo(s)
		}
	}
	gapTo(n)
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
	return longestStallFrom(bm, 0, n, loadStart, from, to)
}

// longestStallFrom is longestStall of a bitmap whose first word is word
// base (gapsFrom).
func longestStallFrom(bm []uint64, base, n, loadStart, from, to int64) float64 {
	fb := (from - loadStart) / int64(gapResolution)
	tb := n
	if to > 0 {
		tb = min(n, (to-loadStart)/int64(gapResolution))
	}
	longest := int64(0)
	for _, g := range gapsFrom(nil, bm, base, n, 1) {
		if g[1] > fb && g[0] <= tb {
			longest = max(longest, g[1]-g[0])
		}
	}
	return float64(longest) * float64(gapResolution) / float64(time.Millisecond)
}

func msText(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", v)
}

// RunIDText writes a run ID as run.json, result.json and the read-back
// report do: a run directory's parts are matched by it.
func RunIDText(id uint64) string { return fmt.Sprintf("%016x", id) }

// ReadsOfRun refuses, before anything is judged or written, a read-back
// ledger that holds no read-back yet or is another run's (as CheckLedgers
// would once it had begun): report calls it before the last verdict's
// files go stale.
func ReadsOfRun(run, reads *ledger.Ledger) error {
	if reads == nil || reads == run {
		return nil
	}
	var info ledger.RunInfo
	if err := run.GetMeta(ledger.MetaRun, &info); err != nil {
		return err
	}
	rb, err := readBackReport(reads)
	if err != nil {
		return err
	}
	return readsOfRun(Ledgers{Run: run, Reads: reads}, info, rb)
}

// readsOfRun refuses a read-back ledger of its own (lg.Reads beside
// lg.Run) that is not the read-back of run. The classifier matches reads
// to acks by producer and sequence, which every run numbers alike:
// another run's read-back copied into a run directory would otherwise
// count this run's acked messages as read, and pass a run that lost them.
func readsOfRun(lg Ledgers, run ledger.RunInfo, rb ReadBackReport) error {
	if lg.Reads == lg.Run {
		return nil // a run directory from before reads ledgers: its reads are the run's own
	}
	if want := RunIDText(run.RunID); rb.RunID != want {
		got := "a run it does not name (an ackcheck that did not record it wrote it)"
		if rb.RunID != "" {
			got = "run " + rb.RunID
		}
		return fmt.Errorf("the read-back ledger is not this run's: it read back %s, and the run's ledger is run %s; "+
			"no verdict can be given from it: run `ackcheck verify` on this run directory to read it back again", got, want)
	}
	return nil
}
