package verifier

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/faults"
)

// Investigating a loss. A count says that acked messages were lost; to
// check it against the broker (its truncation points, its elections) and
// to tell which fault caused it, a user needs each lost message's
// partition, acked offset and times. Check therefore:
//
//   - sums the losses per partition (Result.LostByPartition): count, the
//     lowest and highest acked offset lost, the first and last send time,
//     and the faults that were in force when those messages were acked;
//   - when Options.ListDir is set, writes every lost message to lost.jsonl,
//     every duplicate to duplicates.jsonl and every reordered message to
//     reordered.jsonl in that directory, one JSON object a line, in message
//     ID order, and every acked message not read from a partition the
//     read-back did not read to its end to unread.jsonl (not lost: not
//     judged yet; UnreadByPartition sums them as LostByPartition does the
//     lost). Files are written whole each time (an empty file: none).
//     Options.ListMax caps each file; a capped file ends with a line
//     {"capped":true,...} and Result.Listings says so too.
//
// Memory stays bounded by partitions and faults: the lists stream to disk.

// The listing files Check writes in Options.ListDir.
const (
	LostFile       = "lost.jsonl"
	DuplicatesFile = "duplicates.jsonl"
	ReorderedFile  = "reordered.jsonl"
	// UnreadFile lists the acked messages not read back from partitions
	// the read-back did not read to their end (Result.Unread): not shown
	// lost, so never in lost.jsonl. Its lines are LostLines with Unread
	// set.
	UnreadFile = "unread.jsonl"
)

// ClassUnread is the Listing.Class of unread.jsonl. It is no check: an
// unread message fails nothing, it is only not judged yet.
const ClassUnread = "unread"

// PartitionLoss sums one partition's lost messages.
type PartitionLoss struct {
	Count int64 `json:"count"`
	// FirstOffset and LastOffset are the lowest and highest offset the
	// broker acked a lost message at (-1 when it gave none).
	FirstOffset int64 `json:"first_acked_offset"`
	LastOffset  int64 `json:"last_acked_offset"`
	// FirstSentS and LastSentS are the earliest and latest (intended) send
	// time of a lost message, in seconds after the load started.
	FirstSentS float64 `json:"first_sent_s"`
	LastSentS  float64 `json:"last_sent_s"`
	// AckedWhile counts the lost messages by the faults in force when
	// they were acked ("" is not used: see NoFaultInForce).
	AckedWhile map[string]int64 `json:"acked_while,omitempty"`
	// AckedSoonAfter counts, of the lost messages acked while no fault was
	// in force, those acked within AfterFaultWindow after a fault ended,
	// by fault (a message counts for each fault that ended in the window).
	AckedSoonAfter map[string]int64 `json:"acked_soon_after,omitempty"`
}

// NoFaultInForce is AckedWhile's key for acks while no fault was in force.
const NoFaultInForce = "no fault in force"

// AfterFaultWindow is how long after a fault's end a lost message acked
// with no fault in force is put beside that fault (LostLine.AfterFault,
// PartitionLoss.AckedSoonAfter). A fault's end is an act of ackcheck's (a
// heal-network, a restart), not the cluster's recovery: a leader cut off
// and healed can ack for a moment more before it learns it was fenced,
// and those acks are lost with the rest of its term. Listing them as
// only "no fault in force" would leave them untraced.
const AfterFaultWindow = 30 * time.Second

// Listing says what one listing file holds.
type Listing struct {
	File   string `json:"file"`
	Class  string `json:"class"`
	Listed int64  `json:"listed"`
	Total  int64  `json:"total"`
	// Capped: the file stops at --list-max; Total is the class's count.
	Capped bool `json:"capped,omitempty"`
}

// LostLine is one line of lost.jsonl.
type LostLine struct {
	ID          string    `json:"id"`
	Partition   int32     `json:"partition"`
	AckedOffset int64     `json:"acked_offset"`
	SentAt      time.Time `json:"sent_at"`
	SentS       float64   `json:"sent_s"`
	AckedAt     time.Time `json:"acked_at"`
	AckedS      float64   `json:"acked_s"`
	// InForce lists the faults in force when the broker acked it.
	InForce []string `json:"in_force,omitempty"`
	// AfterFault, when no fault was in force, names each fault that ended
	// within AfterFaultWindow before the ack, the last to end first, and
	// how long before: "partition node:2 (since 30.0 s), ended 1.7 s
	// before the ack".
	AfterFault string `json:"after_fault,omitempty"`
	// BelowLogStart: the partition's log now begins at LogStart, past the
	// acked offset: the message was deleted (DeleteRecords, retention),
	// and no read can find it there.
	BelowLogStart bool  `json:"below_log_start,omitempty"`
	LogStart      int64 `json:"log_start,omitempty"`
	// Unread (in unread.jsonl only): the message was not read, and its
	// partition was not read to its end: not shown lost.
	Unread bool `json:"unread,omitempty"`
}

// DuplicateLine is one line of duplicates.jsonl: the message's first copy
// (lowest partition and offset) and every further copy's offset in the
// same partition.
type DuplicateLine struct {
	ID           string  `json:"id"`
	Partition    int32   `json:"partition"`
	Offset       int64   `json:"offset"`
	OtherOffsets []int64 `json:"other_offsets"`
	AckedOffset  *int64  `json:"acked_offset,omitempty"`
	SentS        float64 `json:"sent_s"`
}

// ReorderedLine is one line of reordered.jsonl: a message whose first copy
// sits at Offset, before PreviousOffset, where the first copy of the same
// producer's previous sequence sits.
type ReorderedLine struct {
	ID             string  `json:"id"`
	Partition      int32   `json:"partition"`
	Offset         int64   `json:"offset"`
	PreviousOffset int64   `json:"previous_offset"`
	SentS          float64 `json:"sent_s"`
}

// spell is a stretch of time in which a fault was in force.
type spell struct {
	from, to int64 // Unix ns; to 0: until the end
	what     string
}

// faultSpells derives from the fault records when each fault was in force:
// a pause until its node's resume, a kill or stop until its node's restart,
// a power loss until its nodes answered again, an fsync-off until the next
// fsync-on of the same target, a mode switched on until it is switched off,
// a node that died unasked until its restart, a network fault until the
// next heal-network. loadStart places "since".
func faultSpells(recs []faults.Record, loadStart time.Time) []spell {
	var out []spell
	since := func(r faults.Record) string {
		return fmt.Sprintf("since %.1f s", r.At.Sub(loadStart).Seconds())
	}
	until := func(i int, match func(faults.Record) bool) int64 {
		for _, r := range recs[i+1:] {
			if r.Result == faults.Applied && match(r) {
				return r.At.UnixNano()
			}
		}
		return 0
	}
	for i, r := range recs {
		if r.Result != faults.Applied && r.Result != faults.Observed {
			continue
		}
		node := r.Node
		sameNode := func(a faults.Action) func(faults.Record) bool {
			return func(x faults.Record) bool { return x.Action == a && x.Node == node }
		}
		switch {
		case r.Action == faults.Pause:
			out = append(out, spell{r.At.UnixNano(), until(i, sameNode(faults.Resume)), fmt.Sprintf("node %d paused (%s)", node, since(r))})
		case r.Action == faults.Kill || r.Action == faults.Stop:
			verb := map[faults.Action]string{faults.Kill: "killed", faults.Stop: "stopped"}[r.Action]
			out = append(out, spell{r.At.UnixNano(), until(i, sameNode(faults.Restart)), fmt.Sprintf("node %d %s (%s)", node, verb, since(r))})
		case r.Action == faults.UnexpectedDeath:
			out = append(out, spell{r.At.UnixNano(), until(i, sameNode(faults.Restart)), fmt.Sprintf("node %d died unasked (%s)", node, since(r))})
		case r.Action == faults.DiedOnDiskError:
			out = append(out, spell{r.At.UnixNano(), until(i, sameNode(faults.Restart)), fmt.Sprintf("node %d stopped on its disk errors (%s)", node, since(r))})
		case r.Action == faults.PowerLoss:
			to := int64(0)
			if !r.ReadyAt.IsZero() {
				to = r.ReadyAt.UnixNano()
			}
			out = append(out, spell{r.At.UnixNano(), to, fmt.Sprintf("power loss of %s (%s)", r.Target, since(r))})
		case r.Action.IsNetwork() && r.Action != faults.HealNetwork:
			// Every network fault is in force until a heal-network removes
			// them all (or the run's end heals them).
			out = append(out, spell{r.At.UnixNano(), until(i, func(x faults.Record) bool { return x.Action == faults.HealNetwork }),
				fmt.Sprintf("%s %s (%s)", r.Action, r.Target, since(r))})
		case r.Action == faults.FsyncOff:
			target := r.Target
			out = append(out, spell{r.At.UnixNano(), until(i, func(x faults.Record) bool { return x.Action == faults.FsyncOn && x.Target == target }),
				fmt.Sprintf("fsync off for %s (%s)", target, since(r))})
		default:
			if name, on, ok := r.Action.Switch(); ok && on {
				off := faults.SwitchAction(name, false)
				out = append(out, spell{r.At.UnixNano(), until(i, func(x faults.Record) bool { return x.Action == off }),
					fmt.Sprintf("%s on (%s)", name, since(r))})
			}
		}
	}
	return out
}

// ended is a spell that ended ago before an ack.
type ended struct {
	what string
	ago  time.Duration
}

// endedBefore lists the spells that ended at or before t (Unix ns) and at
// most AfterFaultWindow before it, the last to end first. Every one is
// named, not only the last: a kill healed inside a partition must not
// hide the partition whose leader's late acks were lost.
func endedBefore(spells []spell, t int64) []ended {
	var out []ended
	for _, s := range spells {
		if s.to != 0 && s.to <= t && t-s.to <= int64(AfterFaultWindow) {
			out = append(out, ended{s.what, time.Duration(t - s.to)})
		}
	}
	slices.SortStableFunc(out, func(a, b ended) int { return cmp.Compare(a.ago, b.ago) })
	return out
}

// inForce lists the spells that cover t (Unix ns).
func inForce(spells []spell, t int64) []string {
	var out []string
	for _, s := range spells {
		if t >= s.from && (s.to == 0 || t < s.to) {
			out = append(out, s.what)
		}
	}
	return out
}

// jsonl writes one listing file, capped at max lines (0: no cap).
type jsonl struct {
	listing Listing
	f       *os.File
	w       *bufio.Writer
	enc     *json.Encoder
	max     int64
	err     error
}

// finish closes the list (a capped one ends with a line that says so, and
// why when why is not "") and renames it into place in dir; its error is
// j.err. It reports false for a list that was never opened (no dir).
func (j *jsonl) finish(dir, why string) bool {
	l := &j.listing
	l.Capped = l.Listed < l.Total
	if j.f == nil {
		return false
	}
	if l.Capped && j.err == nil {
		capped := map[string]any{"capped": true, "listed": l.Listed, "total": l.Total}
		if why != "" {
			capped["why"] = why
		}
		j.err = j.enc.Encode(capped)
	}
	if j.err == nil {
		j.err = j.w.Flush()
	}
	if j.err == nil {
		j.err = j.f.Sync()
	}
	if err := j.f.Close(); j.err == nil {
		j.err = err
	}
	if j.err == nil {
		j.err = os.Rename(j.f.Name(), filepath.Join(dir, l.File))
	}
	if j.err != nil {
		os.Remove(j.f.Name()) // abort will not: finish owns the file now
	}
	j.f = nil // finished: nothing for abort to remove
	return true
}

// createLists opens each list's temporary file in dir ("" opens none:
// nothing is listed, the totals are counted still). When one cannot be
// made, those made are removed; what follows a list's class in the error
// ("" or " messages").
func createLists(dir string, lists []*jsonl, what string) error {
	if dir == "" {
		return nil
	}
	for _, j := range lists {
		if err := j.create(dir); err != nil {
			abortLists(lists)
			return fmt.Errorf("write the list of %s%s: %w (is the run directory writable?)", j.listing.Class, what, err)
		}
	}
	return nil
}

// abortLists removes the lists' half-written temporary files; a list
// already finished (renamed into place) is left alone.
func abortLists(lists []*jsonl) {
	for _, j := range lists {
		if j.f != nil {
			j.f.Close()
			os.Remove(j.f.Name())
			j.f = nil
		}
	}
}

// create opens the list's temporary file in dir for writing.
func (j *jsonl) create(dir string) error {
	f, err := os.Create(filepath.Join(dir, j.listing.File+".tmp"))
	if err != nil {
		return err
	}
	j.f, j.w = f, bufio.NewWriterSize(f, 1<<16)
	j.enc = json.NewEncoder(j.w)
	return nil
}

func (j *jsonl) write(v any) {
	j.listing.Total++
	if j.enc == nil || j.err != nil || (j.max > 0 && j.listing.Listed >= j.max) {
		return
	}
	j.listing.Listed++
	j.err = j.enc.Encode(v)
}

// investigation gathers, during the classification, what a user needs to
// investigate each failing class (see the top of this file).
type investigation struct {
	loadStart time.Time
	spells    []spell
	byPart    map[int32]*PartitionLoss
	unreadBy  map[int32]*PartitionLoss
	lost      jsonl
	dups      jsonl
	reorders  jsonl
	unread    jsonl
}

// newInvestigation starts the listings in dir ("" writes none; Total is
// counted still) capped at max lines each (0: no cap).
func newInvestigation(dir string, max int, loadStart time.Time, recs []faults.Record) (*investigation, error) {
	inv := &investigation{loadStart: loadStart, spells: faultSpells(recs, loadStart),
		byPart: map[int32]*PartitionLoss{}, unreadBy: map[int32]*PartitionLoss{},
		lost:     jsonl{listing: Listing{File: LostFile, Class: CheckLost}, max: int64(max)},
		dups:     jsonl{listing: Listing{File: DuplicatesFile, Class: CheckDuplicates}, max: int64(max)},
		reorders: jsonl{listing: Listing{File: ReorderedFile, Class: CheckReordered}, max: int64(max)},
		unread:   jsonl{listing: Listing{File: UnreadFile, Class: ClassUnread}, max: int64(max)}}
	if err := createLists(dir, inv.files(), " messages"); err != nil {
		return nil, err
	}
	return inv, nil
}

func (inv *investigation) files() []*jsonl {
	return []*jsonl{&inv.lost, &inv.dups, &inv.reorders, &inv.unread}
}

func (inv *investigation) seconds(t int64) float64 {
	return float64(t-inv.loadStart.UnixNano()) / float64(time.Second)
}

// addLost records a lost message: sent at sent, acked at acked (Unix ns)
// at partition/offset; logStart > 0 is where the partition's log now
// begins, past offset.
func (inv *investigation) addLost(id string, partition int32, offset, sent, acked, logStart int64) {
	if inv == nil {
		return
	}
	l := inv.sum(inv.byPart, id, partition, offset, sent, acked)
	l.BelowLogStart, l.LogStart = logStart > 0, logStart
	inv.lost.write(l)
}

// addUnread records an acked message not read from a partition not read
// to its end, as addLost does a lost one, apart from them.
func (inv *investigation) addUnread(id string, partition int32, offset, sent, acked int64) {
	if inv == nil {
		return
	}
	l := inv.sum(inv.unreadBy, id, partition, offset, sent, acked)
	l.Unread = true
	inv.unread.write(l)
}

// sum counts a message not read back into its partition's sums in by,
// and returns its line.
func (inv *investigation) sum(by map[int32]*PartitionLoss, id string, partition int32, offset, sent, acked int64) LostLine {
	pl := by[partition]
	sentS := inv.seconds(sent)
	if pl == nil {
		pl = &PartitionLoss{FirstOffset: offset, LastOffset: offset, FirstSentS: sentS, LastSentS: sentS, AckedWhile: map[string]int64{}}
		by[partition] = pl
	}
	pl.Count++
	if offset >= 0 && (pl.FirstOffset < 0 || offset < pl.FirstOffset) {
		pl.FirstOffset = offset
	}
	pl.LastOffset = max(pl.LastOffset, offset)
	pl.FirstSentS = min(pl.FirstSentS, sentS)
	pl.LastSentS = max(pl.LastSentS, sentS)
	forces := inForce(inv.spells, acked)
	key := strings.Join(forces, "; ")
	var after string
	if key == "" {
		key = NoFaultInForce
		var parts []string
		for _, e := range endedBefore(inv.spells, acked) {
			parts = append(parts, fmt.Sprintf("%s, ended %.1f s before the ack", e.what, e.ago.Seconds()))
			if pl.AckedSoonAfter == nil {
				pl.AckedSoonAfter = map[string]int64{}
			}
			pl.AckedSoonAfter[e.what]++
		}
		after = strings.Join(parts, "; ")
	}
	pl.AckedWhile[key]++
	return LostLine{ID: id, Partition: partition, AckedOffset: offset,
		SentAt: time.Unix(0, sent).UTC(), SentS: sentS, AckedAt: time.Unix(0, acked).UTC(), AckedS: inv.seconds(acked), InForce: forces, AfterFault: after}
}

func (inv *investigation) addDuplicate(l DuplicateLine, sent int64) {
	if inv == nil {
		return
	}
	l.SentS = inv.seconds(sent)
	inv.dups.write(l)
}

func (inv *investigation) addReordered(l ReorderedLine, sent int64) {
	if inv == nil {
		return
	}
	l.SentS = inv.seconds(sent)
	inv.reorders.write(l)
}

// finish closes the listings (each capped one ends with a line that says
// so), puts them in place, and fills res.
func (inv *investigation) finish(dir string, res *Result) error {
	if len(inv.byPart) > 0 {
		res.LostByPartition = inv.byPart
	}
	if len(inv.unreadBy) > 0 {
		res.UnreadByPartition = inv.unreadBy
	}
	var errs []string
	for _, j := range inv.files() {
		l := &j.listing
		if !j.finish(dir, "--list-max caps each list; rerun `ackcheck report` with a larger --list-max (0: no cap) to list all") {
			continue
		}
		if j.err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", l.File, j.err))
			continue
		}
		res.Listings = append(res.Listings, *l)
	}
	if len(errs) > 0 {
		return fmt.Errorf("write the lists of failing messages: %s (is the disk full?)", strings.Join(errs, "; "))
	}
	return nil
}

// abort removes the half-written listings (Check failed); after finish
// it does nothing.
func (inv *investigation) abort() { abortLists(inv.files()) }

// WorstPartitions returns the partitions with the most lost messages,
// most first (ties: lower partition first), at most n.
func (r *Result) WorstPartitions(n int) []int32 {
	parts := make([]int32, 0, len(r.LostByPartition))
	for p := range r.LostByPartition {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		a, b := r.LostByPartition[parts[i]], r.LostByPartition[parts[j]]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return parts[i] < parts[j]
	})
	return parts[:min(n, len(parts))]
}

// PartitionLossText says one partition's loss in a line: "partition 1:
// 1640 lost, acked offsets 860-2499, sent 10.4-30.0 s; acked while node 1
// paused (since 10.0 s)".
func (r *Result) PartitionLossText(p int32) string {
	pl := r.LostByPartition[p]
	if pl == nil {
		return ""
	}
	s := fmt.Sprintf("partition %d: %d lost, acked offsets %d-%d, sent %.1f-%.1f s", p, pl.Count, pl.FirstOffset, pl.LastOffset, pl.FirstSentS, pl.LastSentS)
	keys := mostFirst(pl.AckedWhile)
	var parts []string
	for _, k := range keys {
		if len(keys) == 1 {
			parts = append(parts, k)
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d)", k, pl.AckedWhile[k]))
		}
	}
	if len(parts) > 0 {
		s += "; acked while " + strings.Join(parts, ", ")
	}
	if len(pl.AckedSoonAfter) > 0 {
		after := mostFirst(pl.AckedSoonAfter)
		for i, k := range after {
			after[i] = fmt.Sprintf("%d within %.0f s after %s ended", pl.AckedSoonAfter[k], AfterFaultWindow.Seconds(), k)
		}
		s += "; of those with no fault in force, " + strings.Join(after, ", ")
	}
	return s
}

// mostFirst is counts' keys, the highest count first, equal counts by
// name.
func mostFirst(counts map[string]int64) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := counts[b] - counts[a]; d != 0 {
			return int(d)
		}
		return strings.Compare(a, b)
	})
	return keys
}

// writeInvestigation prints the worst partitions of a loss and where the
// lists are, for the summary.
func (r *Result) writeInvestigation(w io.Writer) {
	if worst := r.WorstPartitions(5); len(worst) > 0 {
		fmt.Fprintf(w, "  lost by partition (%d partitions lost messages; worst first):\n", len(r.LostByPartition))
		for _, p := range worst {
			fmt.Fprintf(w, "    %s\n", r.PartitionLossText(p))
		}
	}
	for _, l := range r.Listings {
		if l.Total == 0 {
			continue
		}
		if l.Capped {
			fmt.Fprintf(w, "  %s lists %d of %d %s messages (capped by --list-max)\n", l.File, l.Listed, l.Total, l.Class)
		} else {
			fmt.Fprintf(w, "  %s lists all %d %s messages\n", l.File, l.Listed, l.Class)
		}
	}
}

// FaultWhen says when a fault fired, and when it was due if it fired more
// than faults.SlipNote away from that: "30.0 s (due 28.0 s, 2.0 s late)".
func (f FaultReport) FaultWhen() string {
	s := fmt.Sprintf("%.1f s", f.AtS)
	if f.DueS == nil {
		return s
	}
	slip := f.AtS - *f.DueS
	if slip > faults.SlipNote.Seconds() || slip < -faults.SlipNote.Seconds() {
		s += fmt.Sprintf(" (due %.1f s, %.2f s late)", *f.DueS, slip)
	}
	return s
}

// slipWarnings warns, in res.Warnings, of every fault that fired more
// than faults.SlipWarn after it was due: the run tested another schedule
// than the one asked for.
func slipWarnings(res *Result) {
	for _, f := range res.Faults {
		if f.DueS == nil {
			continue
		}
		if slip := f.AtS - *f.DueS; slip > faults.SlipWarn.Seconds() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s %s due at %.1f s fired at %.1f s, %.1f s late: the run tested a different schedule than the one asked for", f.Action, f.Target, *f.DueS, f.AtS, slip))
		}
	}
}
