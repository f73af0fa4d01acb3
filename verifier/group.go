package verifier

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// The consumer group's stage (run --group): the group's deliveries and
// acknowledged commits (ledger.Delivery, ledger.Commit) judged against
// the acks and the read-back, in one pass over the messages after the
// classifier's, and only for a run that had a group.
//
//	class        what                                                       verdict
//	skipped      read back (acked or not: the log holds it), never          fails
//	             delivered to the group, and yet an acknowledged commit
//	             of its partition went past it
//	commit lost  a commit the broker acknowledged, then forgot: a later     fails when the broker promised
//	             delivery on its partition is below it (the group resumed   durable commits (RunInfo.Group.
//	             before it)                                                  Durable), counted otherwise
//	redelivered  a message delivered to the group more than once; those     counted, by the faults in force
//	             delivered again after a commit covered them are the
//	             commit lost's evidence
//
// and, per fault, the group's longest time without progress (no
// acknowledged commit moving a partition on) from the fault to the next
// one or the load's end.
//
// Memory: the acknowledged commits (one a partition a poll) and the
// redeliveries below a commit; the messages kindStream.

// The group's listing files (Options.ListDir).
const (
	SkippedFile     = "skipped.jsonl"
	CommitsLostFile = "commits_lost.jsonl"
	RedeliveredFile = "redelivered.jsonl"
)

// The group's checks, as named in Failure.Check.
const (
	CheckSkipped    = "skipped"
	CheckCommitLost = "commit-lost"
)

// GroupResult is what the verdict found of the run's consumer group.
type GroupResult struct {
	ledger.GroupInfo
	// Deliveries counts every delivery of this run's messages; Delivered
	// the messages delivered at least once; Commits the acknowledged
	// commits (one a partition).
	Deliveries int64 `json:"deliveries"`
	Delivered  int64 `json:"delivered"`
	Commits    int64 `json:"commits"`
	// Committed is, per partition, the highest commit the broker
	// acknowledged (the ledger's account; a broker's own is compared with
	// it by the truths).
	Committed map[int32]int64 `json:"committed,omitempty"`
	// Skipped: read back, never delivered, behind an acknowledged commit;
	// SkippedUnacked of them, those the producer was not told were acked
	// (unknown, rejected or never answered, yet in the log).
	Skipped        int64 `json:"skipped"`
	SkippedUnacked int64 `json:"skipped_unacked,omitempty"`
	// Undelivered: read back, never delivered, at or past every
	// acknowledged commit of its partition: the group never reached it
	// (a catch-up cut short, or a skip no commit went past yet). Not
	// judged skipped; said in the reasons so that a group that stopped
	// short does not read as one that consumed everything.
	Undelivered int64 `json:"undelivered,omitempty"`
	// CommitsLost: acknowledged commits a later delivery went below.
	CommitsLost int64 `json:"commits_lost"`
	// Redelivered: messages delivered more than once; AfterCommit: of
	// them, those delivered again after an acknowledged commit covered
	// them (messages, not deliveries).
	Redelivered            int64 `json:"redelivered"`
	RedeliveredAfterCommit int64 `json:"redelivered_after_commit"`
	// RedeliveredWhile counts the further deliveries by the faults in
	// force then (or the last fault before, "after ...").
	RedeliveredWhile map[string]int64 `json:"redelivered_while,omitempty"`
	// Stalls are, per applied fault, the group's longest time without
	// progress after it.
	Stalls []GroupStall `json:"stalls,omitempty"`
	// CommitLatency is, per commit call, from the poll's return (its
	// deliveries' time) to the broker's answer, as the ledger shows it:
	// a call whose partitions' last delivered records are not this run's
	// messages cannot be timed, and is counted in CommitsUntimed. It
	// measures what a commit costs the group the way Publish measures
	// what an ack costs a producer (HdrHistogram, per window in Hist).
	CommitLatency  Latency `json:"commit_latency_ms"`
	CommitsUntimed int64   `json:"commits_untimed,omitempty"`
}

// GroupStall is the group's longest time without progress after one
// fault: from the fault to the next fault or the load's end, the longest
// stretch in which no acknowledged commit moved a partition on.
type GroupStall struct {
	Fault     string  `json:"fault"`
	AtS       float64 `json:"at_s"`
	LongestMs float64 `json:"longest_ms"`
	// FromS is where that stretch began, seconds after the load started.
	FromS float64 `json:"from_s"`
	// UntilProgressMs is from the fault to the group's first progress
	// after it, whatever faults came between (-1: none came).
	UntilProgressMs float64 `json:"until_progress_ms"`
	// Coordinator, for a kill of the group's coordinator, is the brokers'
	// own account of another node taking the group over (the fault's
	// Oracle.Group), and CoordinatorMs its time from the fault: no commit
	// can move the group on before it. Empty and nil when the logs were
	// not read or do not say.
	Coordinator   string   `json:"coordinator,omitempty"`
	CoordinatorMs *float64 `json:"coordinator_ms,omitempty"`
}

// coordinatorEarly is how far before the log's line the group's first
// progress may seem to come (the logs' and ackcheck's clocks, and a log
// line written after the event) before the two are said to disagree.
const coordinatorEarly = 500 * time.Millisecond

// account is the stall's text beside the coordinator's log, and where
// the two disagree, so: "" without one.
func (s GroupStall) account() string {
	if s.CoordinatorMs == nil {
		return ""
	}
	text := fmt.Sprintf(" (%s at %s)", s.Coordinator, msText(*s.CoordinatorMs))
	if s.UntilProgressMs >= 0 && s.UntilProgressMs < *s.CoordinatorMs-float64(coordinatorEarly/time.Millisecond) {
		text += fmt.Sprintf(" [disagrees: progress %s before the log says the group had a coordinator again]", msText(*s.CoordinatorMs-s.UntilProgressMs))
	}
	return text
}

// SkippedLine is one line of skipped.jsonl.
type SkippedLine struct {
	ID        string `json:"id"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// CommittedPast is the highest acknowledged commit of the partition.
	CommittedPast int64 `json:"committed_past"`
	// Acked: the producer was told the message was acked.
	Acked bool `json:"acked"`
}

// CommitLostLine is one line of commits_lost.jsonl.
type CommitLostLine struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	AckedS    float64 `json:"acked_s"`
	Member    uint8   `json:"member"`
	// ResumedAt is the lowest offset delivered again after the commit was
	// acknowledged, and AgainS the first such delivery.
	ResumedAt int64    `json:"resumed_at"`
	AgainS    float64  `json:"again_s"`
	InForce   []string `json:"in_force,omitempty"`
}

// RedeliveredLine is one line of redelivered.jsonl: one further delivery.
type RedeliveredLine struct {
	ID          string  `json:"id"`
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	FirstS      float64 `json:"first_s"`
	AgainS      float64 `json:"again_s"`
	AfterCommit bool    `json:"after_commit,omitempty"`
	While       string  `json:"while"`
}

// commitRec is one acknowledged commit.
type commitRec struct {
	at, offset int64
	member     uint8
}

// groupJudge holds the commits by partition, in answer order, and what
// the pass over the messages found.
type groupJudge struct {
	res       *GroupResult
	loadStart int64
	commits   map[int32][]commitRec
	// maxBefore[p][i] is the highest offset among commits[p][:i+1].
	maxBefore map[int32][]int64
	// below[p] are the deliveries (at, offset) below a commit acknowledged
	// before them: the evidence of lost commits.
	below map[int32][][2]int64
	// tails are, per (partition, offset) a commit's last covered record
	// sits at, that record's deliveries: the poll a commit call followed.
	tails  map[[2]int64][]tailDelivery
	spells []spell
	recs   []faults.Record
	inv    *groupLists
}

// tailDelivery is one delivery of a commit's last covered record.
type tailDelivery struct {
	at     int64
	member uint8
}

// judgeGroup is the group's stage: it fills res.Group from the run's
// ledger (deliveries, commits, acks) and the read-back's (reads).
func judgeGroup(ctx context.Context, run, reads *ledger.Ledger, info ledger.RunInfo, recs []faults.Record, opts Options, res *Result) error {
	if info.Group == nil || run == nil {
		return nil
	}
	g := &groupJudge{res: &GroupResult{GroupInfo: *info.Group, Committed: map[int32]int64{}, RedeliveredWhile: map[string]int64{}},
		loadStart: info.LoadStart.UnixNano(), commits: map[int32][]commitRec{}, maxBefore: map[int32][]int64{},
		below: map[int32][][2]int64{}, tails: map[[2]int64][]tailDelivery{}, spells: faultSpells(recs, info.LoadStart), recs: recs}
	inv, err := newGroupLists(opts.ListDir, opts.ListMax)
	if err != nil {
		return err
	}
	g.inv = inv
	defer inv.abort()
	if err := g.readCommits(run); err != nil {
		return err
	}
	if err := g.messages(ctx, run, reads); err != nil {
		return err
	}
	g.lostCommits()
	g.stalls(res, info)
	g.commitLatency(res)
	res.Group = g.res
	return inv.finish(res)
}

func (g *groupJudge) seconds(t int64) float64 { return float64(t-g.loadStart) / 1e9 }

// readCommits loads every acknowledged commit, by partition in answer
// order (the order of their numbers).
func (g *groupJudge) readCommits(run *ledger.Ledger) error {
	c, err := run.Scan(ledger.Commit)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		e, ok := c.Next()
		if !ok {
			break
		}
		g.commits[e.Partition] = append(g.commits[e.Partition], commitRec{at: e.Time, offset: e.Offset, member: e.Status})
		g.res.Commits++
	}
	if err := c.Err(); err != nil {
		return err
	}
	for p, cs := range g.commits {
		slices.SortStableFunc(cs, func(a, b commitRec) int { return cmp.Compare(a.at, b.at) })
		mb := make([]int64, len(cs))
		hi := int64(-1)
		for i, c := range cs {
			hi = max(hi, c.offset)
			mb[i] = hi
		}
		g.maxBefore[p] = mb
		g.res.Committed[p] = hi
		for _, c := range cs {
			g.tails[[2]int64{int64(p), c.offset - 1}] = nil
		}
	}
	return nil
}

// committedBefore is the highest offset acknowledged committed on p
// before t (-1 when none).
func (g *groupJudge) committedBefore(p int32, t int64) int64 {
	cs := g.commits[p]
	i, _ := slices.BinarySearchFunc(cs, t, func(c commitRec, t int64) int { return cmp.Compare(c.at, t) })
	if i == 0 {
		return -1
	}
	return g.maxBefore[p][i-1]
}

// kindStream is one kind's cursor with its next event.
type kindStream struct {
	c   *ledger.Cursor
	e   ledger.Event
	ok  bool
	err error
}

func openKindStream(l *ledger.Ledger, k ledger.Kind) (*kindStream, error) {
	c, err := l.Scan(k)
	if err != nil {
		return nil, err
	}
	s := &kindStream{c: c}
	s.next()
	return s, nil
}

func (s *kindStream) next() { s.e, s.ok = s.c.Next() }

func (s *kindStream) close() error {
	err := s.c.Err()
	if cerr := s.c.Close(); err == nil {
		err = cerr
	}
	return err
}

func msgKey(e ledger.Event) [2]uint64 { return [2]uint64{uint64(e.Producer), e.Seq} }

func seqBefore(a, b [2]uint64) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

// take collects s's events of message k (s sorted by producer, seq).
func (s *kindStream) take(k [2]uint64, into []ledger.Event) []ledger.Event {
	for s.ok && seqBefore(msgKey(s.e), k) {
		s.next()
	}
	for s.ok && msgKey(s.e) == k {
		into = append(into, s.e)
		s.next()
	}
	return into
}

// messages is the pass over every message that has an outcome, a
// delivery or a copy read back (a send never answered may be in the
// log): skipped and redelivered are judged here, and the
// deliveries below a commit kept for lostCommits.
func (g *groupJudge) messages(ctx context.Context, run, reads *ledger.Ledger) error {
	outs, err := openKindStream(run, ledger.Outcome)
	if err != nil {
		return err
	}
	defer outs.close()
	dels, err := openKindStream(run, ledger.Delivery)
	if err != nil {
		return err
	}
	defer dels.close()
	rds, err := openKindStream(reads, ledger.Read)
	if err != nil {
		return err
	}
	defer rds.close()
	var oe, de, re []ledger.Event
	for n := 0; outs.ok || dels.ok || rds.ok; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var k [2]uint64
		first := true
		for _, s := range []*kindStream{outs, dels, rds} {
			if s.ok && (first || seqBefore(msgKey(s.e), k)) {
				k, first = msgKey(s.e), false
			}
		}
		oe, de, re = outs.take(k, oe[:0]), dels.take(k, de[:0]), rds.take(k, re[:0])
		g.message(k, oe, de, re)
	}
	for _, s := range []*kindStream{outs, dels, rds} {
		if err := s.c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// message judges one message from its outcomes, deliveries and reads.
func (g *groupJudge) message(k [2]uint64, outs, dels, reads []ledger.Event) {
	id := func() string { return message.ID{Producer: uint32(k[0]), Seq: k[1]}.String() }
	acked := slices.ContainsFunc(outs, func(e ledger.Event) bool { return e.Status == ledger.OutcomeAcked })
	if len(dels) == 0 {
		// Acked or not: a copy in the log below a commit the group made
		// was skipped by the group, whatever the producer was told.
		// Read back and past every commit: never reached (Undelivered).
		read := false
		for _, r := range reads {
			if message.Status(r.Status) != message.Valid {
				continue
			}
			read = true
			if c, ok := g.res.Committed[r.Partition]; ok && c > r.Offset {
				g.res.Skipped++
				if !acked {
					g.res.SkippedUnacked++
				}
				g.inv.skipped.write(SkippedLine{ID: id(), Partition: r.Partition, Offset: r.Offset, CommittedPast: c, Acked: acked})
				return
			}
		}
		if read {
			g.res.Undelivered++
		}
		return
	}
	g.res.Deliveries += int64(len(dels))
	g.res.Delivered++
	for _, d := range dels {
		k := [2]int64{int64(d.Partition), d.Offset}
		if ts, ok := g.tails[k]; ok {
			g.tails[k] = append(ts, tailDelivery{at: d.Time, member: d.Status})
		}
	}
	slices.SortFunc(dels, func(a, b ledger.Event) int { return cmp.Compare(a.Time, b.Time) })
	// Any delivery below a commit acknowledged before it is evidence that
	// the commit was forgotten: a first delivery too (the same offset may
	// hold another message after a loss of data).
	below := make([]bool, len(dels))
	for i, d := range dels {
		if g.committedBefore(d.Partition, d.Time) > d.Offset {
			below[i] = true
			g.below[d.Partition] = append(g.below[d.Partition], [2]int64{d.Time, d.Offset})
		}
	}
	if len(dels) == 1 {
		return
	}
	g.res.Redelivered++
	if slices.Contains(below[1:], true) {
		g.res.RedeliveredAfterCommit++
	}
	for i, d := range dels[1:] {
		after := below[i+1]
		while := g.while(d.Time)
		g.res.RedeliveredWhile[while]++
		g.inv.redelivered.write(RedeliveredLine{ID: id(), Partition: d.Partition, Offset: d.Offset,
			FirstS: g.seconds(dels[0].Time), AgainS: g.seconds(d.Time), AfterCommit: after, While: while})
	}
}

// while names the faults in force at t, or the last applied before it
// ("after restart-consumers at 1.0 s"), or NoFaultInForce.
func (g *groupJudge) while(t int64) string {
	if f := inForce(g.spells, t); len(f) > 0 {
		return strings.Join(f, ", ")
	}
	var last *faults.Record
	for i := range g.recs {
		r := &g.recs[i]
		if r.Result == faults.Applied && r.At.UnixNano() <= t && (last == nil || r.At.After(last.At)) {
			last = r
		}
	}
	if last == nil {
		return NoFaultInForce
	}
	what := string(last.Action)
	if last.Target != "" {
		what += " " + last.Target
	}
	return fmt.Sprintf("after %s at %.1f s", what, g.seconds(last.At.UnixNano()))
}

// lostCommits marks each acknowledged commit that a later delivery went
// below: the broker forgot it, and the group resumed before it.
func (g *groupJudge) lostCommits() {
	parts := make([]int32, 0, len(g.below))
	for p := range g.below {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		bl := g.below[p]
		slices.SortFunc(bl, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		// minAfter[i]: the lowest offset among bl[i:], and when.
		minAfter := make([][2]int64, len(bl)+1)
		minAfter[len(bl)] = [2]int64{-1, 1<<63 - 1}
		for i := len(bl) - 1; i >= 0; i-- {
			minAfter[i] = minAfter[i+1]
			if bl[i][1] <= minAfter[i][1] {
				minAfter[i] = bl[i]
			}
		}
		for _, c := range g.commits[p] {
			i, _ := slices.BinarySearchFunc(bl, c.at, func(b [2]int64, t int64) int {
				if b[0] <= t {
					return -1
				}
				return 1
			})
			if i < len(bl) && minAfter[i][1] < c.offset {
				g.res.CommitsLost++
				g.inv.lost.write(CommitLostLine{Partition: p, Offset: c.offset, AckedS: g.seconds(c.at), Member: c.member,
					ResumedAt: minAfter[i][1], AgainS: g.seconds(bl[i][0]), InForce: inForce(g.spells, bl[i][0])})
			}
		}
	}
}

// stalls measures, after each applied fault, the group's longest time
// without progress until the next fault or the load's end.
func (g *groupJudge) stalls(res *Result, info ledger.RunInfo) {
	var progress []int64
	hi := map[int32]int64{}
	var all []struct {
		p int32
		c commitRec
	}
	for p, cs := range g.commits {
		for _, c := range cs {
			all = append(all, struct {
				p int32
				c commitRec
			}{p, c})
		}
	}
	slices.SortFunc(all, func(a, b struct {
		p int32
		c commitRec
	}) int {
		return cmp.Compare(a.c.at, b.c.at)
	})
	for _, x := range all {
		if h, ok := hi[x.p]; !ok || x.c.offset > h {
			hi[x.p] = x.c.offset
			progress = append(progress, x.c.at)
		}
	}
	end := info.LoadEnd.UnixNano()
	if info.LoadEnd.IsZero() && len(progress) > 0 {
		end = progress[len(progress)-1]
	}
	var applied []faults.Record
	for _, r := range g.recs {
		if r.Result == faults.Applied && r.Action != faults.UnexpectedDeath {
			applied = append(applied, r)
		}
	}
	slices.SortFunc(applied, func(a, b faults.Record) int { return a.At.Compare(b.At) })
	for i, r := range applied {
		from, to := r.At.UnixNano(), end
		if i+1 < len(applied) {
			to = min(to, applied[i+1].At.UnixNano())
		}
		if to <= from {
			continue
		}
		longest, at := int64(0), from
		prev := from
		for _, t := range progress {
			if t <= from {
				continue
			}
			if t > to {
				break
			}
			if t-prev > longest {
				longest, at = t-prev, prev
			}
			prev = t
		}
		if to-prev > longest {
			longest, at = to-prev, prev
		}
		what := string(r.Action)
		if r.Target != "" {
			what += " " + r.Target
		}
		until := -1.0
		if i, ok := slices.BinarySearch(progress, from+1); ok || i < len(progress) {
			until = float64(progress[i]-from) / 1e6
		}
		st := GroupStall{Fault: what, AtS: g.seconds(from), LongestMs: float64(longest) / 1e6, FromS: g.seconds(at), UntilProgressMs: until}
		if o := r.Oracle; o != nil && o.Group != nil && !o.Group.At.IsZero() {
			ms := float64(o.Group.At.Sub(r.At)) / float64(time.Millisecond)
			st.Coordinator, st.CoordinatorMs = o.Source+": "+o.Group.What, &ms
		}
		g.res.Stalls = append(g.res.Stalls, st)
	}
}

// groupLists are the group's listing files, written as investigate.go
// writes its own: to a .tmp file, synced and renamed when whole.
type groupLists struct {
	dir                        string
	skipped, lost, redelivered *jsonl
}

func newGroupLists(dir string, max int) (*groupLists, error) {
	gl := &groupLists{dir: dir,
		skipped:     &jsonl{listing: Listing{File: SkippedFile, Class: CheckSkipped}, max: int64(max)},
		lost:        &jsonl{listing: Listing{File: CommitsLostFile, Class: CheckCommitLost}, max: int64(max)},
		redelivered: &jsonl{listing: Listing{File: RedeliveredFile, Class: ClassRedelivered}, max: int64(max)},
	}
	if err := createLists(dir, gl.files(), ""); err != nil {
		return nil, err
	}
	return gl, nil
}

// ClassRedelivered is the Listing.Class of redelivered.jsonl: counted,
// no check.
const ClassRedelivered = "redelivered"

func (gl *groupLists) files() []*jsonl { return []*jsonl{gl.skipped, gl.lost, gl.redelivered} }

// abort removes half-written lists; after finish it does nothing.
func (gl *groupLists) abort() { abortLists(gl.files()) }

func (gl *groupLists) finish(res *Result) error {
	for _, j := range gl.files() {
		if !j.finish(gl.dir, "") {
			continue
		}
		if j.err != nil {
			return fmt.Errorf("write %s: %w (is the disk full?)", j.listing.File, j.err)
		}
		res.Listings = append(res.Listings, j.listing)
	}
	return nil
}

// The group's rules of the verdict (verdictRules).

func ruleSkipped(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || g.Skipped == 0 {
		return nil
	}
	unacked := ""
	if g.SkippedUnacked > 0 {
		unacked = fmt.Sprintf(" (%d of them not acked to the producer, yet in the log)", g.SkippedUnacked)
	}
	return []finding{failed(CheckSkipped, "%d messages read back were never delivered to group %s%s, yet an acknowledged commit of their partition went past them: skipped for good (see %s)", g.Skipped, g.Name, unacked, SkippedFile)}
}

func ruleCommitLost(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || g.CommitsLost == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d commits of group %s that the broker acknowledged were forgotten: the group resumed before them and was given %d messages again (see %s)", g.CommitsLost, g.Name, g.RedeliveredAfterCommit, CommitsLostFile)
	if g.Durable {
		return []finding{failed(CheckCommitLost, "%s; the broker promised durable commits (%s)", msg, g.Promise)}
	}
	if g.Promise == "" {
		// What a commit promises was not read from the cluster: it may
		// well promise durable commits, and counting the loss as on one
		// that promises nothing would be a PASS nobody showed.
		return []finding{{outcomeUnproven, CheckCommitLost, msg + "; what a commit promises on this cluster could not be read when the run started, so whether this is a failure is not known: no PASS can be given on it"}}
	}
	promise := g.Promise
	return []finding{{outcomePass, "", msg + "; counted, not failed: the broker does not promise that a commit survives the loss of a node here (" + promise + ")"}}
}

func ruleRedelivered(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || g.Redelivered == 0 {
		return nil
	}
	var parts []string
	for _, w := range mostFirst(g.RedeliveredWhile) {
		parts = append(parts, fmt.Sprintf("%d %s", g.RedeliveredWhile[w], w))
	}
	return []finding{{outcomePass, "", fmt.Sprintf("%d messages were delivered to group %s more than once (%s); %d of them after an acknowledged commit covered them (see %s)",
		g.Redelivered, g.Name, strings.Join(parts, "; "), g.RedeliveredAfterCommit, RedeliveredFile)}}
}

func ruleGroupProgress(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || (len(g.Stalls) == 0 && g.Err == "") {
		return nil
	}
	var parts []string
	for _, s := range g.Stalls {
		parts = append(parts, fmt.Sprintf("%.0f ms from %.1f s after %s at %.1f s (first progress after it: %s)%s", s.LongestMs, s.FromS, s.Fault, s.AtS, msText(s.UntilProgressMs), s.account()))
	}
	msg := ""
	if len(parts) > 0 {
		msg = fmt.Sprintf("group %s's longest time without progress: %s", g.Name, strings.Join(parts, "; "))
	}
	if g.Err != "" {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("group %s: %s", g.Name, g.Err)
	}
	return []finding{{outcomePass, "", msg}}
}

// ruleGroupUndelivered: messages in the log the group never reached are
// no failure of a check (no commit went past them), but a group that
// stopped short of them did not show it consumes everything: said.
func ruleGroupUndelivered(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || g.Undelivered == 0 {
		return nil
	}
	return []finding{{outcomePass, "", fmt.Sprintf("%d messages read back were never delivered to group %s and lie past its last acknowledged commit of their partition: the group never reached them (its catch-up stopped short, or a skip no commit went past); not judged", g.Undelivered, g.Name)}}
}

// ruleGroupDelivered: a run with a group that delivered none of the
// run's acked messages judged nothing of the group (its members never
// got the partitions, every poll failed, or the only member stopped):
// its 0 skipped and 0 commits lost are no PASS. Not the experiment asked
// for, as a load that stopped early is.
func ruleGroupDelivered(res *Result, _ Options) []finding {
	g := res.Group
	if g == nil || g.Delivered > 0 || res.Acked == 0 {
		return nil
	}
	why := ""
	if g.Err != "" {
		why = " (" + g.Err + ")"
	}
	return []finding{{outcomeAborted, CheckExperiment, fmt.Sprintf("group %s was delivered none of the %d acked messages%s: its checks (skipped, commit lost) judged nothing; no verdict can be given on the group: run it again", g.Name, res.Acked, why)}}
}

// commitLatency times each acknowledged commit call: a member records a
// poll's deliveries (all at the poll's return) and then commits, per
// partition, the offset after the poll's last record, and the broker's
// answer is the commits' time. A call is its commits with one member and
// one answer time; its latency is that time minus the latest delivery of
// a covered last record to the same member no later than the answer.
// Windows are by the poll's time, as publish latency's are by send time,
// and as wide as theirs (res.Hist).
func (g *groupJudge) commitLatency(res *Result) {
	type call struct {
		member uint8
		at     int64
	}
	polled := map[call]int64{}
	untimed := map[call]bool{}
	for p, cs := range g.commits {
		for _, c := range cs {
			k := call{c.member, c.at}
			best := int64(-1)
			for _, d := range g.tails[[2]int64{int64(p), c.offset - 1}] {
				if d.member == c.member && d.at <= c.at && d.at > best {
					best = d.at
				}
			}
			if best < 0 {
				untimed[k] = true
				continue
			}
			polled[k] = max(polled[k], best)
		}
	}
	for k := range polled {
		delete(untimed, k) // one timed partition times the call
	}
	g.res.CommitsUntimed = int64(len(untimed))
	all := latency.New(3)
	var windows []*hdrhistogram.Histogram
	var window time.Duration
	if res.Hist != nil {
		window = res.Hist.Window
	}
	for k, at := range polled {
		d := time.Duration(k.at - at)
		latency.Record(all, d)
		i, ok := windowIndex(at, g.loadStart, window)
		if !ok {
			continue
		}
		for len(windows) <= i {
			windows = append(windows, latency.New(2))
		}
		latency.Record(windows[i], d)
	}
	g.res.CommitLatency = summarize(all)
	if res.Hist != nil {
		res.Hist.Commit, res.Hist.CommitAll = windows, all
	}
}
