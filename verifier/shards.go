package verifier

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// A load spread over processes (ackcheck run --shard I/N) leaves one run
// ledger per shard. Every shard has the run's one run ID, and shard I's
// producers are numbered in a range of its own (ledger.ShardInfo), so its
// ledger holds only those producers' events. Each kind's stream over all
// shards is then the shards' streams one after another in shard order:
// the merge (merge.go) reads them through a chain, one pass, memory as for
// one ledger. One read-back of the topic is judged against the chain.
//
// A shard whose ledger is missing or could not be proven whole gives no
// PASS: its acks cannot be checked, and the copies its producers wrote
// read back as messages no ledger holds, which are not blamed on the
// broker (the verdict is unproven, see applyVerdict).

// Shard is one shard's run ledger, as a merged verify found it.
type Shard struct {
	// Index is the shard's number, 0 to Count-1; -1 when not known (a
	// directory whose run.json could not be read).
	Index int
	// Dir is the shard's run directory, as given.
	Dir string
	// Ledger is the shard's run ledger, opened read-only; nil when it
	// could not be opened (Err says why).
	Ledger *ledger.Ledger
	// Err is why the shard's ledger is missing or refused (damaged).
	Err error
}

// ShardStatus is one shard as a merged verdict saw it (Result.Shards).
type ShardStatus struct {
	Index int    `json:"index"`
	Dir   string `json:"dir"`
	// Status is "whole" (proven whole), "unproven" (opened, but nothing
	// vouches for its holes), "damaged" (refused) or "missing".
	Status string `json:"status"`
	// Error says why a damaged or missing shard could not be read.
	Error string `json:"error,omitempty"`
	// Proof is what opening the shard's ledger read-only proved.
	Proof *ledger.Proof `json:"proof,omitempty"`
	// Clean: the shard's load finished and committed its ledger.
	Clean bool `json:"clean"`
	// Producers are the shard's producer numbers, [first, last+1): the
	// middle field of every message ID (run-producer-seq) it wrote.
	Producers [2]uint32 `json:"producers"`
	// Sent, Acked and Lost are the shard's own messages' counts.
	Sent  int64 `json:"sent"`
	Acked int64 `json:"acked"`
	Lost  int64 `json:"lost"`
}

// Shard statuses (ShardStatus.Status).
const (
	ShardWhole    = "whole"
	ShardUnproven = "unproven"
	ShardDamaged  = "damaged"
	ShardMissing  = "missing"
)

// ShardRun is the merged description of a sharded run's shards (see
// CheckLedgers): the run a merged read-back reads. It refuses shards that
// are not of one run.
func ShardRun(shards []Shard) (ledger.RunInfo, error) {
	src, err := shardSource(shards, nil)
	if err != nil {
		return ledger.RunInfo{}, err
	}
	return src.run, nil
}

// runSource is what a verdict reads from the run's side: one ledger, or
// the chain of a sharded run's ledgers.
type runSource struct {
	run      ledger.RunInfo
	sentThru map[uint32]uint64
	faults   []faults.Record
	// proof is nil when the run's ledger was judged open for writing.
	proof *ledger.Proof
	scan  func(k ledger.Kind) (cursor, error)
	// shards, for a sharded run, in shard order; nil otherwise.
	shards []ShardStatus
	// open are the shards' ledgers in the order of shards (nil: missing).
	open []*ledger.Ledger
	// at is the shard count looks at first.
	at int
	// unended: a shard's load never recorded its end. missing: a shard's
	// ledger could not be opened; its load is not known at all (the
	// verdict is unproven for it, see shardSource), so the experiment is
	// judged from the shards there are. clean: every shard there is has a
	// clean ledger (run.Clean is false when one is missing).
	unended, missing, clean bool
	// window is the crash window of each ledger's producers.
	window crashWindow
}

// loadEnded reports whether the run's load recorded its end: for a
// sharded run, every shard's that was opened.
func (s *runSource) loadEnded() bool { return !s.run.LoadEnd.IsZero() && !s.unended }

// experiment is the run held to its plan (experimentOf), a sharded run's
// from the shards that were opened.
func (s *runSource) experiment() *Experiment {
	run := s.run
	if s.shards != nil {
		run.Clean = s.clean
	}
	return experimentOf(run, s.loadEnded(), s.faults)
}

// shedKnown reports whether every shed send was counted: the load, and
// every shard's, recorded its end.
func (s *runSource) shedKnown() bool { return s.loadEnded() && !s.missing }

// cursor is a sorted stream of one kind's events (ledger.Cursor, or a
// chain of them).
type cursor interface {
	NextRun() ([]ledger.Event, bool)
	Err() error
	Close() error
}

// singleSource is the run side of a run of its own.
func singleSource(l *ledger.Ledger) (*runSource, error) {
	src := &runSource{scan: func(k ledger.Kind) (cursor, error) { return l.Scan(k) }}
	if err := l.GetMeta(ledger.MetaRun, &src.run); err != nil {
		return nil, fmt.Errorf("ledger has no run description: %w (is this an ackcheck run directory?)", err)
	}
	if src.run.Shard != nil {
		return nil, fmt.Errorf("this ledger is shard %d of %d of run %s: judge all shards together with `ackcheck verify --out MERGED --shard-dir DIR ...`",
			src.run.Shard.Index, src.run.Shard.Count, RunIDText(src.run.RunID))
	}
	if err := l.Flush(); err != nil {
		return nil, err
	}
	var err error
	if src.faults, err = faultRecords(l); err != nil {
		return nil, err
	}
	src.sentThru = l.SentThrough()
	seg, err := segmentOf(l, src.run, 0)
	if err != nil {
		return nil, err
	}
	src.window.segs = []crashSegment{seg}
	if l.ReadOnly() {
		p := l.Proof()
		src.proof = &p
	}
	return src, nil
}

func faultRecords(l *ledger.Ledger) ([]faults.Record, error) {
	var recs []faults.Record
	if err := l.GetMeta(faults.MetaKey, &recs); err != nil && !errors.Is(err, ledger.ErrNoMeta) {
		return nil, err
	}
	return recs, nil
}

// FaultTimeline is a sharded run's one fault timeline, from the process
// that applied its faults (shard 0, or `ackcheck faults`), kept beside
// the shards' ledgers. Its per-fault figures are judged against every
// shard's acks, like any run's.
type FaultTimeline struct {
	Records []faults.Record
	// Planned are the steps its applier was asked for: the merged run's
	// planned faults, each held to its record (experimentOf); nil for a
	// timeline written before they were kept.
	Planned []ledger.PlannedFault
	// Source says where the records came from, for the report's notes.
	Source string
	// Unproven, when set, is why the timeline cannot be trusted whole (it
	// is missing while faults were given, or its applier did not
	// finish): the verdict is then no PASS.
	Unproven string
}

// shardSource merges the run side of a sharded run. It refuses shards
// that are not of one run (run ID, topic, shard count, checks), a shard
// number given twice, and producer ranges that overlap: judged together,
// such ledgers would vouch for each other's messages. A shard missing or
// damaged is kept in the statuses, and makes the combined proof not whole.
func shardSource(shards []Shard, tl *FaultTimeline) (*runSource, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("no shard ledgers to judge: give --shard-dir for every shard's run directory")
	}
	got, broken, err := openShards(shards)
	if err != nil {
		return nil, err
	}
	byIndex, err := shardsOfOneRun(got)
	if err != nil {
		return nil, err
	}
	// The broken shards' numbers are known only from their directories'
	// order (Shard.Index as the caller found it); each number 0..count-1
	// has one status, missing unless a ledger of it was opened.
	brokenBy := map[int]Shard{}
	for _, s := range broken {
		brokenBy[s.Index] = s
	}
	m := newShardMerge(got[0].info)
	for idx := range m.count {
		o, ok := byIndex[idx]
		if !ok {
			m.addMissing(idx, brokenBy)
			continue
		}
		if err := m.addShard(idx, o, tl); err != nil {
			return nil, err
		}
	}
	for _, b := range broken {
		if b.Index < 0 || b.Index >= m.count {
			// A directory whose shard number could not be read: its
			// error is stated, and its shard is among the missing.
			m.unprove(fmt.Sprintf("%s: %v", b.Dir, b.Err))
		}
	}
	if tl != nil {
		m.src.faults = tl.Records
		m.planned = tl.Planned
		m.merged.Notes = append(m.merged.Notes, fmt.Sprintf("fault timeline: %d records from %s", len(tl.Records), tl.Source))
		if tl.Unproven != "" {
			m.unprove(tl.Unproven)
		}
	}
	return m.finish(got[0].s.Ledger.ReadOnly()), nil
}

// openedShard is a shard whose ledger opened, with the run it records.
type openedShard struct {
	s    Shard
	info ledger.RunInfo
}

// openShards reads each shard's run description, sorted by shard number,
// and returns apart the shards whose ledger could not be opened. It
// refuses a ledger without a description or of a run of its own, and a
// set in which no ledger opened.
func openShards(shards []Shard) (got []openedShard, broken []Shard, err error) {
	for _, s := range shards {
		if s.Ledger == nil {
			broken = append(broken, s)
			continue
		}
		var info ledger.RunInfo
		if err := s.Ledger.GetMeta(ledger.MetaRun, &info); err != nil {
			return nil, nil, fmt.Errorf("shard directory %s: its ledger has no run description: %w", s.Dir, err)
		}
		if info.Shard == nil {
			return nil, nil, fmt.Errorf("%s holds a run of its own, not a shard (run --shard I/N): verify it alone with `ackcheck verify --out %s`", s.Dir, s.Dir)
		}
		got = append(got, openedShard{s, info})
	}
	if len(got) == 0 {
		return nil, nil, fmt.Errorf("no shard's ledger could be opened (%s): no verdict can be given", shardErrs(broken))
	}
	slices.SortFunc(got, func(a, b openedShard) int { return cmp.Compare(a.info.Shard.Index, b.info.Shard.Index) })
	return got, broken, nil
}

// shardsOfOneRun checks that the opened shards (sorted by number) are of
// one run: one run ID, topic, driver, shard count and checks, each number
// once, producer ranges apart. It returns them by shard number.
func shardsOfOneRun(got []openedShard) (map[int]openedShard, error) {
	first := got[0].info
	count := first.Shard.Count
	byIndex := map[int]openedShard{}
	for _, o := range got {
		i := o.info
		switch {
		case i.RunID != first.RunID:
			return nil, fmt.Errorf("%s is run %s and %s is run %s: merge only the shards of one run", got[0].s.Dir, RunIDText(first.RunID), o.s.Dir, RunIDText(i.RunID))
		case i.Topic != first.Topic || i.Driver != first.Driver:
			return nil, fmt.Errorf("%s wrote %s topic %s and %s wrote %s topic %s: merge only the shards of one run", got[0].s.Dir, first.Driver, first.Topic, o.s.Dir, i.Driver, i.Topic)
		case i.Shard.Count != count:
			return nil, fmt.Errorf("%s is a shard of %d and %s a shard of %d: merge only the shards of one run", got[0].s.Dir, count, o.s.Dir, i.Shard.Count)
		case string(i.Checks) != string(first.Checks):
			return nil, fmt.Errorf("%s and %s recorded different checks (%s, %s): the shards were not started alike", got[0].s.Dir, o.s.Dir, first.Checks, i.Checks)
		}
		if prev, dup := byIndex[i.Shard.Index]; dup {
			return nil, fmt.Errorf("%s and %s are both shard %d: give each shard's run directory once", prev.s.Dir, o.s.Dir, i.Shard.Index)
		}
		byIndex[i.Shard.Index] = o
	}
	for k := 1; k < len(got); k++ {
		a, b := got[k-1].info, got[k].info
		if uint64(a.Shard.ProducerBase)+uint64(a.Producers) > uint64(b.Shard.ProducerBase) {
			return nil, fmt.Errorf("shards %d and %d number their producers in overlapping ranges (%d+%d, %d+%d): their message IDs may collide, no verdict can be given",
				a.Shard.Index, b.Shard.Index, a.Shard.ProducerBase, a.Producers, b.Shard.ProducerBase, b.Producers)
		}
	}
	return byIndex, nil
}

// shardMerge builds a sharded run's source one shard number at a time, in
// order: the statuses and open ledgers (src), the combined proof and why
// it is not whole, and the merged run description.
type shardMerge struct {
	src    *runSource
	count  int
	proof  *ledger.Proof
	why    []string
	merged ledger.RunInfo
	// faultShard is the shard whose ledger holds the fault records (-1:
	// none yet); planless: a shard recorded before plans were kept.
	faultShard int
	planless   bool
	// planned are the fault timeline's planned steps (nil: none kept).
	planned []ledger.PlannedFault
}

// newShardMerge starts a merge of the shards of first's run.
func newShardMerge(first ledger.RunInfo) *shardMerge {
	return &shardMerge{
		src:   &runSource{sentThru: map[uint32]uint64{}, clean: true},
		count: first.Shard.Count,
		proof: &ledger.Proof{Whole: true},
		merged: ledger.RunInfo{RunID: first.RunID, Driver: first.Driver, Topic: first.Topic, Checks: first.Checks,
			StartOffsets: drivers.MakeOffsets(0), Clean: true, AckMeaning: first.AckMeaning, BrokerVersions: first.BrokerVersions},
		faultShard: -1,
	}
}

// unprove makes the combined proof not whole, for the reason why.
func (m *shardMerge) unprove(why string) {
	m.proof.Whole = false
	m.why = append(m.why, why)
}

// addMissing records shard idx, of which no ledger opened: missing, or
// damaged when its directory's ledger was (brokenBy). Its acks cannot be
// checked, so neither the proof nor the run is whole.
func (m *shardMerge) addMissing(idx int, brokenBy map[int]Shard) {
	st := ShardStatus{Index: idx, Status: ShardMissing, Error: "no run directory of this shard was given"}
	if b, ok := brokenBy[idx]; ok {
		st.Dir, st.Error = b.Dir, b.Err.Error()
		if errors.Is(b.Err, ledger.ErrDamaged) {
			st.Status = ShardDamaged
		}
	}
	m.src.shards = append(m.src.shards, st)
	m.src.open = append(m.src.open, nil)
	m.merged.Clean = false
	m.src.missing = true
	m.unprove(fmt.Sprintf("shard %d of %d is %s (%s): its acks cannot be checked", idx, m.count, st.Status, st.Error))
}

// addShard adds opened shard idx: its status and proof, its part of the
// run description, sends, crash window and, without a fault timeline
// (tl), its fault records, refused when a second shard has them too.
func (m *shardMerge) addShard(idx int, o openedShard, tl *FaultTimeline) error {
	i, l := o.info, o.s.Ledger
	st := ShardStatus{Index: idx, Dir: o.s.Dir, Status: ShardWhole, Clean: i.Clean,
		Producers: [2]uint32{i.Shard.ProducerBase, i.Shard.ProducerBase + uint32(i.Producers)}}
	if l.ReadOnly() {
		p := l.Proof()
		st.Proof = &p
		m.proof.Flushes += p.Flushes
		m.proof.Fragments += p.Fragments
		m.proof.Events += p.Events
		if !p.Whole {
			st.Status = ShardUnproven
			m.unprove(fmt.Sprintf("shard %d of %d (%s): %s", idx, m.count, o.s.Dir, p.Reason))
		}
	}
	src := m.src
	src.shards = append(src.shards, st)
	src.open = append(src.open, l)
	src.unended = src.unended || i.LoadEnd.IsZero()
	src.clean = src.clean && i.Clean
	m.planless = m.planless || i.Plan == nil
	mergeRunInfo(&m.merged, i)
	m.merged.Plan = mergePlan(m.merged.Plan, i.Plan)
	for p, v := range l.SentThrough() {
		src.sentThru[p] = v
	}
	seg, err := segmentOf(l, i, i.Shard.ProducerBase)
	if err != nil {
		return fmt.Errorf("shard %d (%s): %w", idx, o.s.Dir, err)
	}
	src.window.segs = append(src.window.segs, seg)
	recs, err := faultRecords(l)
	if err != nil {
		return fmt.Errorf("shard %d (%s): %w", idx, o.s.Dir, err)
	}
	if len(recs) > 0 && tl == nil {
		if m.faultShard >= 0 {
			return fmt.Errorf("shards %d and %d both applied faults: exactly one process applies a run's faults (shard 0)", m.faultShard, idx)
		}
		m.faultShard, src.faults = idx, recs
	}
	return nil
}

// finish completes the source once every shard number was added: the
// merged run, the proof (nil when the ledgers were judged open for
// writing, as in tests: nothing was proven) and a scan over every opened
// shard's ledger in shard order.
func (m *shardMerge) finish(readOnly bool) *runSource {
	src := m.src
	m.merged.Shard = &ledger.ShardInfo{Index: -1, Count: m.count}
	if m.planless {
		m.merged.Plan = nil
	}
	if m.merged.Plan != nil && len(m.planned) > 0 {
		// The applier's schedule, which the shards' own plans lack when
		// `ackcheck faults` applied it (or repeat, when shard 0 did).
		m.merged.Plan.Faults = m.planned
	}
	src.run = m.merged
	proof := m.proof
	if !readOnly {
		proof = nil
	} else if !proof.Whole {
		proof.Reason = strings.Join(m.why, "; ")
	}
	src.proof = proof
	src.scan = src.scanShards
	return src
}

// scanShards scans kind k in every opened shard's ledger, in shard order,
// each cursor tagged with its shard's producer range.
func (src *runSource) scanShards(k ledger.Kind) (cursor, error) {
	ch := &chain{}
	for i, l := range src.open {
		if l == nil {
			continue
		}
		c, err := l.Scan(k)
		if err != nil {
			ch.Close()
			return nil, fmt.Errorf("shard %d (%s): %w", i, src.shards[i].Dir, err)
		}
		ch.cs = append(ch.cs, c)
		ch.ranges = append(ch.ranges, src.shards[i].Producers)
		ch.idx = append(ch.idx, i)
	}
	return ch, nil
}

// mergeRunInfo adds shard i's description to the merged run's: the
// earliest start and latest end, every partition's earliest start offset
// (each shard read them before its first send), sums of counts, and the
// producers up to the highest shard's last.
func mergeRunInfo(m *ledger.RunInfo, i ledger.RunInfo) {
	if m.LoadStart.IsZero() || i.LoadStart.Before(m.LoadStart) {
		m.LoadStart = i.LoadStart
	}
	if i.LoadEnd.After(m.LoadEnd) {
		m.LoadEnd = i.LoadEnd
	}
	m.Clean = m.Clean && i.Clean
	m.Producers = max(m.Producers, int(i.Shard.ProducerBase)+i.Producers)
	i.StartOffsets.All(func(p int32, off int64) bool {
		if cur, ok := m.StartOffsets.Get(p); !ok || off < cur {
			m.StartOffsets.Set(p, off)
		}
		return true
	})
	m.Shed += i.Shed
	m.Reached += i.Reached
	m.Errors = addCounts(m.Errors, i.Errors)
	m.AckClasses = addCounts(m.AckClasses, i.AckClasses)
	// Lags cannot be merged from summaries: the worst shard's is kept,
	// with every shard's count.
	m.PacingLag = worstLag(m.PacingLag, i.PacingLag)
	m.CallbackTime = worstLag(m.CallbackTime, i.CallbackTime)
	if i.StealPct != nil && (m.StealPct == nil || *i.StealPct > *m.StealPct) {
		v := *i.StealPct
		m.StealPct = &v
	}
	for _, n := range i.Notes {
		if !slices.Contains(m.Notes, n) {
			m.Notes = append(m.Notes, n)
		}
	}
}

// mergePlan adds shard plan p to the merged plan m: the shards' schedules
// sum, and the faults are those of the one shard that applies them. A
// shard without a plan (recorded before plans were kept) leaves the
// merged run without one, judged as before (shardSource).
func mergePlan(m, p *ledger.Plan) *ledger.Plan {
	if p == nil {
		return nil
	}
	if m == nil {
		c := *p
		c.Faults = slices.Clone(p.Faults)
		return &c
	}
	m.Scheduled += p.Scheduled
	m.Rate += p.Rate
	m.MaxInFlight += p.MaxInFlight
	m.Duration = max(m.Duration, p.Duration)
	m.Faults = append(m.Faults, p.Faults...)
	return m
}

func addCounts(m, add map[string]int64) map[string]int64 {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = map[string]int64{}
	}
	for k, v := range add {
		m[k] += v
	}
	return m
}

func worstLag(a, b *ledger.LagSummary) *ledger.LagSummary {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	c := *a
	if b.P99Us > a.P99Us {
		c = *b
	}
	c.Count = a.Count + b.Count
	c.MaxUs = max(a.MaxUs, b.MaxUs)
	return &c
}

func shardErrs(ss []Shard) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s: %v", s.Dir, s.Err))
	}
	return strings.Join(out, "; ")
}

// count adds h to its shard's figures, for a sharded run. Histories
// come in producer order, and shards' ranges ascend with their index, so
// the shard is found by moving forward (src.at).
func (src *runSource) count(h *history, lost bool) {
	if src.shards == nil {
		return
	}
	for ; src.at < len(src.shards); src.at++ {
		s := &src.shards[src.at]
		if s.Producers == [2]uint32{} || h.producer >= s.Producers[1] {
			continue // missing, or before h
		}
		if h.producer < s.Producers[0] {
			return // a producer no opened shard owns (a missing shard's)
		}
		if h.sent {
			s.Sent++
		}
		if h.acked {
			s.Acked++
		}
		if lost {
			s.Lost++
		}
		return
	}
}

// chain is the shards' cursors of one kind, one after another. Each
// shard's events must lie in its own producer range, which is what makes
// the concatenation sorted; an event outside it stops the chain with an
// error rather than let the merge go out of order.
type chain struct {
	cs     []*ledger.Cursor
	ranges [][2]uint32
	idx    []int
	i      int
	err    error
}

func (c *chain) NextRun() ([]ledger.Event, bool) {
	for c.err == nil && c.i < len(c.cs) {
		run, ok := c.cs[c.i].NextRun()
		if !ok {
			if err := c.cs[c.i].Err(); err != nil {
				c.err = fmt.Errorf("shard %d: %w", c.idx[c.i], err)
				return nil, false
			}
			c.i++
			continue
		}
		// A run is sorted: its first and last events bound it.
		r := c.ranges[c.i]
		if lo, hi := run[0].Producer, run[len(run)-1].Producer; lo < r[0] || hi >= r[1] {
			bad := lo
			if lo >= r[0] {
				bad = hi
			}
			c.err = fmt.Errorf("%w: shard %d's ledger holds producer %d, outside its own producers %d-%d: no verdict can be given from it",
				ledger.ErrDamaged, c.idx[c.i], bad, r[0], r[1]-1)
			return nil, false
		}
		return run, true
	}
	return nil, false
}

func (c *chain) Err() error { return c.err }

func (c *chain) Close() error {
	var errs []error
	for _, x := range c.cs {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// noteIdleShards withholds a PASS when a shard whose ledger is whole sent
// nothing: its share of the load never ran (a shard refused for starting
// late, or killed before its first send), and a verdict over the rest
// would pass a smaller load than the one asked for.
func (src *runSource) noteIdleShards(res *Result) {
	if src.proof == nil {
		return
	}
	for _, s := range src.shards {
		if s.Producers == [2]uint32{} || s.Sent > 0 {
			continue
		}
		why := fmt.Sprintf("shard %d (%s) sent nothing: its share of the load never ran", s.Index, s.Dir)
		p := *src.proof
		p.Whole = false
		p.Reason = strings.TrimPrefix(p.Reason+"; "+why, "; ")
		res.Ledger = &p
		src.proof = &p
	}
}
