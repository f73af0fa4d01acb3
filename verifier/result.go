package verifier

import (
	"encoding/json"
	"fmt"
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Verdicts. Incomplete is neither: the read-back could not finish and
// nothing it did read proves a failure, so the run is not judged yet
// (`ackcheck verify` finishes it). A failure the reads made so far prove
// (a corrupt copy, a phantom, a missed deadline) is Fail all the same.
// Unproven is neither too: the run's ledger could not be proven whole
// (ledger.Proof), so a PASS cannot be given from it; a loss it does
// prove (an ack it holds, not read back) is Fail all the same.
//
// Aborted is neither as well: the run was not the experiment it was
// asked for (its load stopped before the schedule's end, or a scheduled
// fault never fired; see Experiment), so "nothing lost" would answer
// another question; a loss it proves is Fail all the same. Reading it
// back again cannot change it: only running it again can.
const (
	Pass       = "pass"
	Fail       = "fail"
	Incomplete = "incomplete"
	Unproven   = "unproven"
	Aborted    = "aborted"
)

// Latency summarises one histogram in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Sample locates one message of a failing class.
type Sample struct {
	ID        string  `json:"id"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Others    []int64 `json:"other_offsets,omitempty"` // duplicates: the further copies
}

// Window is one slice of the load (by intended send time).
type Window struct {
	StartS  float64 `json:"start_s"`
	Sent    int64   `json:"sent"`
	Acked   int64   `json:"acked"`
	Failed  int64   `json:"failed"`
	Lost    int64   `json:"lost"`
	Publish Latency `json:"publish_latency_ms"`
	E2E     Latency `json:"e2e_latency_ms"`
}

// Result is the verdict and everything it rests on. It is what
// <out>/result.json holds.
type Result struct {
	RunID  string `json:"run_id"`
	Driver string `json:"driver"`
	Topic  string `json:"topic"`

	Sent      int64 `json:"sent"`
	Acked     int64 `json:"acked"`
	Failed    int64 `json:"failed"`
	Rejected  int64 `json:"rejected"`
	Unknown   int64 `json:"unknown"`
	NoOutcome int64 `json:"no_outcome"`
	// Shed is how many scheduled sends were dropped at the in-flight
	// bound; nil (null) when the load never recorded its end, so it was
	// never measured.
	Shed        *int64 `json:"shed"`
	Read        int64  `json:"read"`
	RecordsRead int64  `json:"records_read"`
	// Lost counts the acked messages shown lost: not read back intact from
	// a partition read to its end, or acked at an offset below where the
	// partition's log now begins (LostBelowLogStart of them), or in a
	// topic or partition that no longer exists.
	Lost int64 `json:"lost"`
	// LostBelowLogStart counts, of Lost, the messages acked at an offset
	// below the partition's log start (ReadBackReport.LogStarts): deleted
	// (DeleteRecords, retention), not merely unread.
	LostBelowLogStart int64 `json:"lost_below_log_start,omitempty"`
	// Unread counts the acked messages not read back whose partition the
	// read-back did not read to its end (a broker that did not answer):
	// not shown lost, only not read. They are never in Lost,
	// LostByPartition or lost.jsonl, but in UnreadByPartition and
	// unread.jsonl. (A result.json from before this field counted them
	// in lost and lost_unread; reading it moves them here.)
	Unread        int64 `json:"unread"`
	Corrupt       int64 `json:"corrupt"`
	Phantom       int64 `json:"phantom"`
	Duplicates    int64 `json:"duplicates"`
	Reordered     int64 `json:"reordered"`
	Indeterminate int64 `json:"indeterminate"`
	NotWritten    int64 `json:"not_written"`
	Unrecorded    int64 `json:"unrecorded"`
	// UnrecordedPastWindow counts, of Unrecorded, the reads sent after
	// the ledger's crash window ends: more than a crash of ackcheck can
	// have kept out of the ledger, which is then unproven (crashwindow.go).
	UnrecordedPastWindow int64 `json:"unrecorded_past_window,omitempty"`
	Foreign              int64 `json:"foreign"`
	// OtherRun counts intact records of another ackcheck run found in this
	// run's range: two runs wrote the same topic at once.
	OtherRun int64 `json:"other_run"`
	// AckPositionMismatch counts acked messages none of whose copies is at
	// the acked position (the broker reported one offset and stored it at
	// another). Informational.
	AckPositionMismatch int64 `json:"ack_position_mismatch"`

	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
	// Failures are the reasons with the check each belongs to, so that
	// tools (JUnit) group them without parsing sentences.
	Failures []Failure `json:"failures,omitempty"`
	// Checks are the checks the verdict was judged by (nil in a
	// result.json written before they were recorded).
	Checks *Checks `json:"checks,omitempty"`
	// CheckChanges says how a re-read's checks differ from the run's
	// ("--max-no-ack: 1ms at the run, none at this verify"), or that the
	// run's are unknown (ChecksUnknown).
	CheckChanges  []string `json:"check_changes,omitempty"`
	ChecksUnknown bool     `json:"checks_unknown,omitempty"`
	// Resume is the command that finishes an incomplete verdict.
	Resume string `json:"resume,omitempty"`

	// Partitions is the number of partitions the run wrote to (its
	// topic's, or its shard's), and PartitionsTouched how many of them got
	// at least one acked message (Queen makes a partition at its first
	// push: these are the ones that exist). Both 0 in result.json of runs
	// from before they were counted.
	Partitions        int   `json:"partitions,omitempty"`
	PartitionsTouched int64 `json:"partitions_touched"`

	LongestNoAckMs float64 `json:"longest_no_ack_ms"`
	LongestNoAckAt float64 `json:"longest_no_ack_start_s"`
	Publish        Latency `json:"publish_latency_ms"`
	E2E            Latency `json:"e2e_latency_ms"`
	// PacingLag is how late ackcheck handed sends to the driver after
	// their scheduled times: the part of every latency above that is
	// ackcheck's own (P999 is not kept). Count 0: not recorded.
	PacingLag Latency `json:"pacing_lag_ms"`
	// CallbackTime is how long ackcheck's outcome callback ran per ack on
	// the client library's callback path, where every later ack of the
	// same client queues behind it: ackcheck's share of the publish
	// latency of the acks after it. Count 0: not recorded.
	CallbackTime Latency `json:"callback_time_ms"`
	// StealPct is the share of the load machine's CPU time that its
	// hypervisor gave to something else while the load sent (nil: not
	// known). Every latency above includes the waits it caused.
	StealPct *float64 `json:"steal_pct,omitempty"`
	// AckedByClass counts the acks by how the broker stored them, for a
	// broker that acks in more than one way (Queen: queued in PostgreSQL,
	// or buffered in the server's file buffer). Every class counts in
	// Acked, and a lost message of any class fails the verdict.
	AckedByClass map[string]int64 `json:"acked_by_class,omitempty"`
	Windows      []Window         `json:"windows"`

	// Experiment is how far the run got against the experiment it was
	// asked for (nil for a run recorded before plans were kept).
	Experiment *Experiment `json:"experiment,omitempty"`

	LoadStart   time.Time `json:"load_start"`
	LoadEnd     time.Time `json:"load_end"`
	CleanLedger bool      `json:"clean_ledger"`
	// Ledger is what opening the run's ledger read-only proved about it
	// (nil when the ledger was judged open for writing, as tests do).
	Ledger *ledger.Proof `json:"ledger,omitempty"`
	// Shards, for a load spread over processes (run --shard), is each
	// shard's ledger as the merged verify found it, in shard order, with
	// its own messages' counts; Ledger is then their combined proof, not
	// whole when any shard is missing, damaged or unproven.
	Shards []ShardStatus `json:"shards,omitempty"`
	// ReadBackComplete: every partition was read to the end the broker
	// reported after the load. False when a request failed
	// (ReadBackError), a partition made no progress, or the topic is gone.
	ReadBackComplete bool             `json:"read_back_complete"`
	ReadBackNotes    map[int32]string `json:"read_back_notes,omitempty"`
	// ReadBackDamaged are the spans the broker served with a checksum of
	// its own that fails (ReadBackReport.Damaged): their records were
	// read corrupt.
	ReadBackDamaged map[int32][]drivers.DamagedSpan `json:"read_back_damaged,omitempty"`
	// ReadBackError names the request that failed when the read-back
	// could not finish.
	ReadBackError string `json:"read_back_error,omitempty"`
	// TopicGone: the broker answered that the topic does not exist any
	// more (what was acked in it is lost, not unread).
	TopicGone bool `json:"topic_gone,omitempty"`
	// ReadBackAt is when the read-back judged here began (zero in a
	// result.json from before it was kept).
	ReadBackAt time.Time `json:"read_back_at,omitempty"`
	// ReadBackS is how long the read-back took, in seconds.
	ReadBackS float64          `json:"read_back_s"`
	Errors    map[string]int64 `json:"errors,omitempty"`

	Samples map[string][]Sample `json:"samples,omitempty"`
	// LostByPartition sums the lost messages of each partition that lost
	// any (see investigate.go); Listings say which files in the run
	// directory list every lost, duplicate and reordered message.
	LostByPartition map[int32]*PartitionLoss `json:"lost_by_partition,omitempty"`
	// UnreadByPartition sums, in the same way, the unread messages of
	// each partition not read to its end (see Unread).
	UnreadByPartition map[int32]*PartitionLoss `json:"unread_by_partition,omitempty"`
	Listings          []Listing                `json:"listings,omitempty"`
	// Group is what the verdict found of the run's consumer group (run
	// --group); nil when the run had none.
	Group *GroupResult `json:"group,omitempty"`
	// Warnings do not fail the verdict but say the run was not quite the
	// one asked for (a fault that fired over a second late).
	Warnings []string `json:"warnings,omitempty"`

	// Faults are the faults injected during the run, in order, with their
	// recovery figures.
	Faults []FaultReport `json:"faults,omitempty"`

	// AckMeanings says, for each phase of the run, what an ack meant, as
	// read from the cluster's settings when the phase began.
	AckMeanings []Phase `json:"ack_meanings,omitempty"`
	// Notes are facts the report must state (e.g. a host key accepted
	// without being in known_hosts).
	Notes []string `json:"notes,omitempty"`

	// Timeline has one entry per second of the load.
	Timeline []Second `json:"timeline,omitempty"`
	// PartitionGaps lists, per partition, the stretches of at least
	// GapMinMs during the load in which it got no ack.
	// Beyond 1,000 partitions it lists only the 100 with the longest
	// stretch, and PartitionGapsListed says so; partitions.jsonl in the
	// run directory has every partition's (PartitionsFile).
	PartitionGaps       map[int32][]Gap `json:"partition_gaps,omitempty"`
	PartitionGapsListed string          `json:"partition_gaps_listed,omitempty"`
	GapMinMs            float64         `json:"gap_min_ms,omitempty"`

	// Hist holds the histograms (not in result.json: reports write them
	// as .hlog files).
	Hist *Histograms `json:"-"`
}

// UnmarshalJSON reads a result.json, including one written before Unread
// was kept apart: its lost counted the unread messages too, and
// lost_unread said how many; they are moved from Lost to Unread, so that
// no tool reading an old result counts them lost.
func (r *Result) UnmarshalJSON(data []byte) error {
	type plain Result
	var v struct {
		*plain
		LegacyLostUnread int64 `json:"lost_unread"`
	}
	v.plain = (*plain)(r)
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v.LegacyLostUnread > 0 && r.Unread == 0 {
		r.Unread = v.LegacyLostUnread
		r.Lost = max(0, r.Lost-v.LegacyLostUnread)
	}
	return nil
}

// The checks a verdict can fail, as named in Failure.Check.
const (
	CheckLost            = "lost"
	CheckCorrupt         = "corrupt"
	CheckPhantom         = "phantom"
	CheckDuplicates      = "duplicates"
	CheckReordered       = "reordered"
	CheckReadBack        = "read-back"
	CheckSent            = "sent"
	CheckAcked           = "acked"
	CheckMaxNoAck        = "max-no-ack"
	CheckMaxReady        = "max-ready"
	CheckMaxInSync       = "max-in-sync"
	CheckUnexpectedDeath = "unexpected-death"
	CheckLedgerWhole     = "ledger-whole"
	// CheckExperiment: the run was the experiment asked for (its load ran
	// its whole schedule and every scheduled fault fired).
	CheckExperiment = "experiment"
)

// CheckNames lists every check a verdict can fail, for tools that must
// show each one (JUnit): a check added above belongs here too.
var CheckNames = []string{CheckLost, CheckCorrupt, CheckPhantom, CheckDuplicates, CheckReordered, CheckReadBack,
	CheckSent, CheckAcked, CheckMaxNoAck, CheckMaxReady, CheckMaxInSync, CheckUnexpectedDeath, CheckExperiment, CheckLedgerWhole}

// Failure is one reason the verdict failed.
type Failure struct {
	Check   string `json:"check"`
	Message string `json:"message"`
}

// Second is one second of the schedule (by intended send time for sent
// and failed, by ack time for acked).
type Second struct {
	T      int   `json:"t"`
	Sent   int64 `json:"sent"`
	Acked  int64 `json:"acked"`
	Failed int64 `json:"failed"`
}

// Gap is a stretch in which one partition got no ack.
type Gap struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
}

// Histograms are the run's latency histograms in microseconds: one per
// window and one for the whole run. Reports write them as HdrHistogram
// interval logs.
type Histograms struct {
	Start        time.Time
	Window       time.Duration
	Publish, E2E []*hdrhistogram.Histogram
	PublishAll   *hdrhistogram.Histogram
	E2EAll       *hdrhistogram.Histogram
	// Commit and CommitAll are the consumer group's commit latency
	// (GroupResult.CommitLatency), by the window of the poll a commit
	// followed; nil without a group.
	Commit    []*hdrhistogram.Histogram
	CommitAll *hdrhistogram.Histogram
}

// Phase is a stretch of the run under one durability setting.
type Phase struct {
	FromS   float64 `json:"from_s"`
	Since   string  `json:"since"`
	Meaning string  `json:"meaning"`
}

// LatencyBetween summarises the latency of the messages sent in the
// windows that lie wholly within [from, to) of the load: the steady state
// before a fault, say. ok is false when no window does (or the histograms
// are not at hand: a Result read back from result.json has none).
func (r *Result) LatencyBetween(from, to time.Duration) (publish, e2e Latency, ok bool) {
	h := r.Hist
	if h == nil || h.Window <= 0 {
		return
	}
	pub := h.mergeWithin(h.Publish, h.PublishAll, from, to)
	if pub == nil {
		return
	}
	end := h.mergeWithin(h.E2E[:min(len(h.E2E), len(h.Publish))], h.E2EAll, from, to)
	if end == nil {
		end = hdrhistogram.New(1, h.E2EAll.HighestTrackableValue(), 3)
	}
	return summarize(pub), summarize(end), true
}

// mergeWithin merges the windows of ws that lie wholly within [from, to)
// into one histogram of all's range; nil when no window does.
func (h *Histograms) mergeWithin(ws []*hdrhistogram.Histogram, all *hdrhistogram.Histogram, from, to time.Duration) *hdrhistogram.Histogram {
	var out *hdrhistogram.Histogram
	for i, w := range ws {
		start := time.Duration(i) * h.Window
		if start < from || start+h.Window > to {
			continue
		}
		if out == nil {
			out = hdrhistogram.New(1, all.HighestTrackableValue(), 3)
		}
		out.Merge(w)
	}
	return out
}

// CommitLatencyBetween summarises the group's commit latency of the
// commits that followed polls in the windows wholly within [from, to),
// as LatencyBetween does for publish latency. ok is false without a group
// or without such a window.
func (r *Result) CommitLatencyBetween(from, to time.Duration) (Latency, bool) {
	h := r.Hist
	if h == nil || h.Window <= 0 || h.CommitAll == nil {
		return Latency{}, false
	}
	c := h.mergeWithin(h.Commit, h.CommitAll, from, to)
	if c == nil {
		return Latency{}, false
	}
	return summarize(c), true
}

// ShedText is Shed as the reports print it: a count, or "unknown".
func (r *Result) ShedText() string {
	if r.Shed == nil {
		return "unknown"
	}
	return fmt.Sprint(*r.Shed)
}

// WriteSummary prints the verdict as a table a person reads first: the
// counts, the latencies, the errors, what the investigation listed, each
// fault, and the verdict with its reasons.
func (r *Result) WriteSummary(w io.Writer) {
	r.writeCounts(w)
	r.writeLatencies(w)
	r.writeErrors(w)
	r.writeInvestigation(w)
	for i := range r.Faults {
		r.Faults[i].writeSummary(w)
	}
	r.writeVerdict(w)
}

// writeCounts is the summary's table: the run, then a row per count with
// what it means, FAIL on the counts that fail the run.
func (r *Result) writeCounts(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, n int64, note string) { fmt.Fprintf(tw, "  %s\t%d\t%s\n", name, n, note) }
	fmt.Fprintf(tw, "run %s  driver %s  topic %s\n", r.RunID, r.Driver, r.Topic)
	row("sent", r.Sent, "")
	row("acked", r.Acked, r.AckClassesText())
	row("failed", r.Failed, fmt.Sprintf("rejected %d, unknown %d, no outcome %d", r.Rejected, r.Unknown, r.NoOutcome))
	if r.Shed != nil {
		row("shed", *r.Shed, "scheduled but not sent: max-in-flight reached")
	} else {
		fmt.Fprintf(tw, "  shed	unknown	not measured: the load never recorded its end\n")
	}
	row("read", r.Read, fmt.Sprintf("distinct IDs read intact, of %d records", r.RecordsRead))
	lostNote := flag(r.Lost > 0, "FAIL: acked, never read")
	if r.LostBelowLogStart > 0 {
		lostNote += fmt.Sprintf("; %d of them acked below where the log now begins: deleted", r.LostBelowLogStart)
	}
	row("lost", r.Lost, lostNote)
	if r.Unread > 0 {
		row("unread", r.Unread, "acked, not read: in partitions not read to their end, not judged")
	}
	row("corrupt", r.Corrupt, flag(r.Corrupt > 0, "FAIL: checksum mismatch"))
	row("phantom", r.Phantom, flag(r.Phantom > 0, "FAIL: read, never sent"))
	row("duplicates", r.Duplicates, "extra copies")
	row("reordered", r.Reordered, "")
	row("indeterminate", r.Indeterminate, "read; outcome was an error or unknown")
	row("not written", r.NotWritten, "sent, not acked, not read")
	if r.Unrecorded > 0 {
		row("unrecorded", r.Unrecorded, "read; send not in the ledger (ackcheck died)")
	}
	if r.Foreign > 0 {
		row("foreign", r.Foreign, "records in range not written by ackcheck")
	}
	if r.OtherRun > 0 {
		row("other run", r.OtherRun, "records of another ackcheck run in range: two runs shared the topic")
	}
	if g := r.Group; g != nil {
		fmt.Fprintf(tw, "group %s  %d members  commits: %s\n", g.Name, g.Members, cmpOr(g.Promise, "meaning not known"))
		row("delivered", g.Delivered, fmt.Sprintf("distinct IDs delivered to the group, in %d deliveries; %d commits acknowledged", g.Deliveries, g.Commits))
		row("skipped", g.Skipped, flag(g.Skipped > 0, "FAIL: acked, never delivered, behind an acknowledged commit"))
		lostNote := "acknowledged, then forgotten"
		if g.CommitsLost > 0 {
			lostNote = "counted: the broker does not promise durable commits here"
			if g.Durable {
				lostNote = "FAIL: acknowledged, then forgotten"
			}
		}
		row("commits lost", g.CommitsLost, lostNote)
		if l := g.CommitLatency; l.Count > 0 {
			row("commit calls", l.Count, fmt.Sprintf("timed from the poll's return to the broker's answer, ms: p50 %.2f  p99 %.2f  max %.2f", l.P50, l.P99, l.Max))
		}
		row("redelivered", g.Redelivered, fmt.Sprintf("delivered more than once; %d after a commit covered them", g.RedeliveredAfterCommit))
	}
	tw.Flush()
	r.writePartitions(w)
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// writeLatencies is the summary's lines of time: the longest stretch
// without acks, publish latency, ackcheck's own pacing lag and callback
// time, CPU steal and end-to-end latency, each that was measured.
func (r *Result) writeLatencies(w io.Writer) {
	fmt.Fprintf(w, "  longest without acks: %.0f ms (from %.1f s)\n", r.LongestNoAckMs, r.LongestNoAckAt)
	fmt.Fprintf(w, "  publish latency ms: p50 %.2f  p99 %.2f  p999 %.2f  max %.2f\n", r.Publish.P50, r.Publish.P99, r.Publish.P999, r.Publish.Max)
	if r.PacingLag.Count > 0 {
		fmt.Fprintf(w, "  ackcheck's own pacing lag ms (send time minus scheduled time): p50 %.3f  p99 %.3f  max %.3f\n", r.PacingLag.P50, r.PacingLag.P99, r.PacingLag.Max)
	}
	if r.CallbackTime.Count > 0 {
		fmt.Fprintf(w, "  ackcheck's own ack callback ms (later acks queue behind it): p50 %.3f  p99 %.3f  max %.3f\n", r.CallbackTime.P50, r.CallbackTime.P99, r.CallbackTime.Max)
	}
	if r.StealPct != nil {
		fmt.Fprintf(w, "  the hypervisor took %.1f%% of this machine's CPU time during the load (steal: waits in the latencies above)\n", *r.StealPct)
	}
	if r.E2E.Count > 0 {
		fmt.Fprintf(w, "  end-to-end ms:      p50 %.2f  p99 %.2f  p999 %.2f  max %.2f\n", r.E2E.P50, r.E2E.P99, r.E2E.P999, r.E2E.Max)
	}
}

// writeErrors lists the five most frequent kinds of send error, most
// frequent first, and how many kinds more there were.
func (r *Result) writeErrors(w io.Writer) {
	if len(r.Errors) == 0 {
		return
	}
	type kv struct {
		k string
		v int64
	}
	var es []kv
	for k, v := range r.Errors {
		es = append(es, kv{k, v})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].v > es[j].v })
	fmt.Fprintln(w, "  errors:")
	for i, e := range es {
		if i == 5 {
			fmt.Fprintf(w, "    ... and %d more kinds\n", len(es)-5)
			break
		}
		fmt.Fprintf(w, "    %8d  %s\n", e.v, e.k)
	}
}

// writeSummary is a fault's lines in the summary: when, what, on which
// node, its result, and once measured its recovery, the nodes' PIDs and
// losses, and its kill and network proofs.
func (f *FaultReport) writeSummary(w io.Writer) {
	if f.Node >= 0 {
		fmt.Fprintf(w, "  fault at %s: %s %s -> node %d: %s", f.FaultWhen(), f.Action, f.Target, f.Node, f.Result)
	} else {
		fmt.Fprintf(w, "  fault at %s: %s %s: %s", f.FaultWhen(), f.Action, f.Target, f.Result)
	}
	if f.Error != "" {
		fmt.Fprintf(w, " (%s)", f.Error)
	}
	fmt.Fprintln(w)
	if f.FirstAckMs != nil {
		fmt.Fprintf(w, "    slowest partition's first ack of a message sent after it: %s   longest partition stall over it: %s\n",
			msOrNever(f.SlowestFirstAckMs), msOrNever(f.LongestStallMs))
		fmt.Fprintf(w, "    node ready again: %s%s   all replicas in sync: %s%s\n",
			msOrNever(f.ReadyMs), f.OracleText(true), msOrNever(f.InSyncMs), f.OracleText(false))
		if f.InSyncEvidence != "" {
			fmt.Fprintf(w, "    rejoin seen as: %s\n", f.InSyncEvidence)
		}
	}
	for _, id := range f.Nodes {
		fmt.Fprintf(w, "    node %d: PID %d -> %d; lost: %s\n", id, f.PIDs[id], f.Restarted[id], f.Lost[id])
	}
	if kp := f.KillProof; kp != nil {
		fmt.Fprintf(w, "    kill proof: %s\n", kp)
	}
	if np := f.NetworkProof; np != nil {
		fmt.Fprintf(w, "    network proof: %s\n", np)
	}
}

// writeVerdict ends the summary: what an ack meant in each phase, the
// notes, what the read-back could not read, and the verdict with its
// reasons and warnings.
func (r *Result) writeVerdict(w io.Writer) {
	for _, p := range r.AckMeanings {
		fmt.Fprintf(w, "  from %.1fs (%s) an ack meant: %s\n", p.FromS, p.Since, p.Meaning)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if !r.ReadBackComplete {
		fmt.Fprintln(w, "  read-back incomplete:")
	}
	r.writeReadBackNotes(w)
	r.writeDamaged(w)
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(r.Verdict))
	for _, reason := range r.Reasons {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
}

func flag(bad bool, s string) string {
	if bad {
		return s
	}
	return ""
}

func msOrNever(ms float64) string {
	if ms < 0 {
		return "not observed"
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// AckClassesText says how the acks were stored, by class in name order
// ("" when the broker acks one way): "buffered 4500, duplicate 0, queued
// 4500".
func (r *Result) AckClassesText() string {
	m := r.AckedByClass
	if len(m) == 0 {
		return ""
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(m))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
