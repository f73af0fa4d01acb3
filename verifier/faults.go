package verifier

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// FaultReport is one fault with what was measured around it. Durations are
// in milliseconds from the fault; -1 means "not observed" (the node never
// came back within the run, say).
type FaultReport struct {
	faults.Record
	// AtS is when the fault fired, in seconds after the load started.
	AtS float64 `json:"at_s"`
	// DueS is when the schedule wanted it, in seconds after the load
	// started (absent for a fault applied outside the schedule, and for
	// what was observed rather than done).
	DueS *float64 `json:"due_s,omitempty"`
	// ReadyMs: until the node answered as a broker again after coming back.
	ReadyMs float64 `json:"ready_ms"`
	// InSyncMs: until every partition had its full replica set in sync.
	InSyncMs float64 `json:"in_sync_ms"`
	// FirstAckMs: per partition, from the fault until the first ack of a
	// message whose intended send time is at or after the fault. Acks of
	// messages already in flight at the fault do not count: they say
	// nothing about whether the partition took new writes again.
	FirstAckMs map[int32]float64 `json:"first_ack_ms,omitempty"`
	// SlowestFirstAckMs is the largest of FirstAckMs (-1 when a partition
	// never acked a message sent after the fault).
	SlowestFirstAckMs float64 `json:"slowest_first_ack_ms"`
	// StallMs: per partition, its longest stretch without any ack that
	// overlaps the time from the fault to its FirstAckMs (10 ms buckets).
	StallMs map[int32]float64 `json:"stall_ms,omitempty"`
	// LongestStallMs is the largest of StallMs.
	LongestStallMs float64 `json:"longest_stall_ms"`
	// PartitionsListed, set beyond 1,000 partitions, says that FirstAckMs
	// and StallMs keep only the 100 slowest partitions each (those that
	// never acked again first): a million partitions a fault would be two
	// million entries in result.json. The largest figures are kept whole.
	PartitionsListed string `json:"partitions_listed,omitempty"`
	// KillProof, for kills: that the process really died and came back.
	KillProof *KillProof `json:"kill_proof,omitempty"`
	// OracleReadyMs and OracleInSyncMs are Record.Oracle's figures (the
	// brokers' own logs) in milliseconds from the fault, beside ReadyMs
	// and InSyncMs; nil when the logs were not read or do not say.
	OracleReadyMs  *float64 `json:"oracle_ready_ms,omitempty"`
	OracleInSyncMs *float64 `json:"oracle_in_sync_ms,omitempty"`
}

// oracleMs fills the oracle figures of rep from its record.
func (rep *FaultReport) oracleMs() {
	o := rep.Oracle
	if o == nil {
		return
	}
	at := func(e *drivers.LogEvent) *float64 {
		if e == nil || e.At.IsZero() {
			return nil
		}
		v := float64(e.At.Sub(rep.At)) / float64(time.Millisecond)
		return &v
	}
	rep.OracleReadyMs, rep.OracleInSyncMs = at(o.Ready), at(o.InSync)
}

// oracleEvent is the brokers' account of one figure: the ready one or
// the in-sync one, with its time in milliseconds from the fault; nil
// when the logs were not read or do not say.
func (rep *FaultReport) oracleEvent(ready bool) (*drivers.LogEvent, *float64) {
	if rep.Oracle == nil {
		return nil, nil
	}
	if ready {
		return rep.Oracle.Ready, rep.OracleReadyMs
	}
	return rep.Oracle.InSync, rep.OracleInSyncMs
}

// OracleText is a figure's cross-check as the summary and the reports
// print it beside the figure: " (Kafka's logs (nodes [1 2 3]): the
// controller unfenced broker 2 at 26214 ms)", or for a bound " (...: no
// earlier than node 3 (PID 9) last failed /healthz (...) at 9618 ms)",
// or, for in sync on a broker without replicas, why the logs have none;
// "" without one.
func (rep *FaultReport) OracleText(ready bool) string {
	e, ms := rep.oracleEvent(ready)
	if !ready && e == nil && rep.Oracle != nil && rep.Oracle.NoInSync != "" {
		return fmt.Sprintf(" (%s: %s)", rep.Oracle.Source, rep.Oracle.NoInSync)
	}
	if ms == nil || e == nil {
		return ""
	}
	return fmt.Sprintf(" (%s: %s%s at %s)", rep.Oracle.Source, e.Bound.Words(), e.What, msText(*ms))
}

// OracleDisagreement is how a figure disagrees with the brokers' logs
// beyond the tolerances ("3.2 s after the log's line, tolerance 2 s
// late"); "" when it agrees, when the logs do not say, or when the
// figure was not observed. A bound is honoured as a bound: a figure
// after a NotBefore line never disagrees with it however late, since the
// log cannot say how much later the event came; one before it by more
// than the early tolerance does.
func (rep *FaultReport) OracleDisagreement(ready bool) string {
	e, theirs := rep.oracleEvent(ready)
	ours := rep.InSyncMs
	if ready {
		ours = rep.ReadyMs
	}
	if theirs == nil || e == nil || ours < 0 {
		return ""
	}
	d := time.Duration((ours - *theirs) * float64(time.Millisecond))
	early := d < -oracleEarly && e.Bound != drivers.NotAfter
	late := d > oracleLate && e.Bound != drivers.NotBefore
	switch {
	case early:
		return fmt.Sprintf("%s before the log's line, which says %s (tolerance %s early)", (-d).Round(time.Millisecond), boundText(e.Bound), oracleEarly)
	case late:
		return fmt.Sprintf("%s after the log's line, which says %s (tolerance %s late)", d.Round(time.Millisecond), boundText(e.Bound), oracleLate)
	}
	return ""
}

// boundText says what a line proves, for a disagreement.
func boundText(b drivers.Bound) string {
	switch b {
	case drivers.NotBefore:
		return "it came no earlier"
	case drivers.NotAfter:
		return "it came no later"
	}
	return "when it came"
}

// Oracle tolerances: how far ackcheck's figure may lie from the log's
// before the verdict warns. ackcheck sees a node ready when it answers a
// request, polled every 200 ms, so after the broker logged it, and a busy
// machine delays that; it may come a little before the log's line, which
// is written after the event it records. Log times are to the
// millisecond.
const (
	oracleEarly = 500 * time.Millisecond
	oracleLate  = 2 * time.Second
)

// oracleWarnings warns, in res.Warnings, of every figure that disagrees
// with the brokers' logs beyond the tolerances (OracleDisagreement):
// never hidden, never a failure of the broker's.
func oracleWarnings(res *Result) {
	for _, f := range res.Faults {
		for _, c := range []struct {
			ready bool
			name  string
			ours  float64
		}{{true, "the node ready", f.ReadyMs}, {false, "every replica in sync", f.InSyncMs}} {
			d := f.OracleDisagreement(c.ready)
			if d == "" {
				continue
			}
			e, theirs := f.oracleEvent(c.ready)
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s at %.1f s: ackcheck saw %s %s after it, %s say %s%s at %s: they disagree, ackcheck's figure is %s",
				f.Action, f.AtS, c.name, msText(c.ours), f.Oracle.Source, e.Bound.Words(), e.What, msText(*theirs), d))
		}
	}
}

// KillProof shows that a kill hit the process it meant to and that the node
// came back as a new process on the same data: a different PID, the same
// data dir inode, and the other nodes' processes untouched.
type KillProof struct {
	OldPID             int    `json:"old_pid"`
	NewPID             int    `json:"new_pid"`
	InodeBefore        uint64 `json:"inode_before"`
	InodeAfter         uint64 `json:"inode_after"`
	SameDataDir        bool   `json:"same_data_dir"`
	SurvivorsUnchanged bool   `json:"survivors_unchanged"`
	Restarts           int    `json:"restarts"`
}

// String is the proof as the summary and the reports state it. An inode
// of 0 is one the nodes could not report (the embedded demo's in-process
// brokers), said as unknown rather than as a changed data dir; the same
// PID before and after is said too, since it proves no process died.
func (kp KillProof) String() string {
	pid := fmt.Sprintf("PID %d -> %d", kp.OldPID, kp.NewPID)
	if kp.OldPID != 0 && kp.OldPID == kp.NewPID {
		pid += " (the same process: no process died)"
	}
	dir := "data dir inode unknown"
	if kp.InodeBefore != 0 || kp.InodeAfter != 0 {
		dir = fmt.Sprintf("data dir inode %d -> %d (same: %v)", kp.InodeBefore, kp.InodeAfter, kp.SameDataDir)
	}
	return fmt.Sprintf("%s, %s, survivors unchanged: %v, restarts: %d", pid, dir, kp.SurvivorsUnchanged, kp.Restarts)
}

// faultTracker accumulates, during Check's merge, each fault's first ack
// per partition.
type faultTracker struct {
	reports []FaultReport
	records []faults.Record
	at      []int64              // fault time, Unix ns; 0 for faults not tracked
	first   []byPartition[int64] // per fault, per partition: its first ack, Unix ns (0: none yet)
	parts   int                  // denseCount of the run: the partitions first holds in slices
}

// loadFaults tracks the run's fault records (faultRecords) against the
// acks, from loadStart.
func loadFaults(recs []faults.Record, loadStart time.Time) (*faultTracker, error) {
	ft := &faultTracker{records: recs, parts: -1}
	ms := func(from, to time.Time) float64 {
		if to.IsZero() {
			return -1
		}
		return float64(to.Sub(from)) / float64(time.Millisecond)
	}
	for i, r := range recs {
		rep := FaultReport{Record: r, AtS: r.At.Sub(loadStart).Seconds(),
			ReadyMs: ms(r.At, r.ReadyAt), InSyncMs: ms(r.At, r.InSyncAt), SlowestFirstAckMs: -1}
		rep.oracleMs()
		if !r.Due.IsZero() {
			due := r.Due.Sub(loadStart).Seconds()
			rep.DueS = &due
		}
		track := r.Result == faults.Applied && r.Action.TakesNodeAway()
		if r.Action == faults.Kill && r.Result == faults.Applied {
			rep.KillProof = killProof(recs, i)
		}
		ft.reports = append(ft.reports, rep)
		if track {
			ft.at = append(ft.at, r.At.UnixNano())
		} else {
			ft.at = append(ft.at, 0)
		}
		ft.first = append(ft.first, byPartition[int64]{})
	}
	return ft, nil
}

// sizeFor sizes the first acks of every tracked fault for run's
// partitions (denseCount); a tracker not sized keeps them in maps.
func (ft *faultTracker) sizeFor(run ledger.RunInfo) {
	n := denseCount(run)
	for i := range ft.first {
		if ft.at[i] != 0 {
			ft.first[i] = newByPartition[int64](n)
		}
	}
}

func killProof(recs []faults.Record, i int) *KillProof {
	kill := recs[i]
	kp := &KillProof{OldPID: kill.PID, InodeBefore: kill.Inode}
	for _, r := range recs[i+1:] {
		if r.Node != kill.Node || r.Action != faults.Restart || r.Result != faults.Applied {
			continue
		}
		kp.Restarts++
		if kp.NewPID == 0 {
			kp.NewPID, kp.InodeAfter = r.PID, r.Inode
			kp.SameDataDir = r.Inode != 0 && r.Inode == kill.Inode
			kp.SurvivorsUnchanged = len(kill.Survivors) > 0
			for id, pid := range kill.Survivors {
				if pid == 0 || r.Survivors[id] != pid {
					kp.SurvivorsUnchanged = false
				}
			}
		}
	}
	return kp
}

// ack notes an ack on partition at time at of a message intended to be
// sent at intended (both Unix ns).
func (ft *faultTracker) ack(partition int32, intended, at int64) {
	for i, t := range ft.at {
		if t == 0 || intended < t {
			continue
		}
		if f := ft.first[i].at(partition); *f == 0 || at < *f {
			*f = at
		}
	}
}

// finish fills FirstAckMs and StallMs for every partition the run wrote
// to; stall(p, from, to) measures a partition's longest stretch without
// acks overlapping [from, to] (Unix ns, to 0: the end of the load).
// SlowestFirstAckMs is -1 when some partition never acked again.
func (ft *faultTracker) finish(partitions []int32, stall func(p int32, from, to int64) float64) []FaultReport {
	for i := range ft.reports {
		if ft.at[i] == 0 {
			continue
		}
		rep := &ft.reports[i]
		// Up to maxGapPartitions every partition is listed; beyond, the
		// figures go to slices and only the slowest reach the maps.
		whole := len(partitions) <= maxGapPartitions
		var firsts, stalls []partFigure
		if whole {
			rep.FirstAckMs = make(map[int32]float64, len(partitions))
			rep.StallMs = make(map[int32]float64, len(partitions))
		} else {
			firsts = make([]partFigure, 0, len(partitions))
			stalls = make([]partFigure, 0, len(partitions))
		}
		slowest, never := 0.0, false
		for _, p := range partitions {
			f := ft.first[i].get(p)
			stall := stall(p, ft.at[i], f)
			rep.LongestStallMs = max(rep.LongestStallMs, stall)
			v := -1.0
			if f == 0 {
				never = true
			} else {
				v = float64(f-ft.at[i]) / float64(time.Millisecond)
				slowest = max(slowest, v)
			}
			if whole {
				rep.StallMs[p], rep.FirstAckMs[p] = stall, v
			} else {
				stalls = append(stalls, partFigure{p, stall})
				firsts = append(firsts, partFigure{p, v})
			}
		}
		rep.SlowestFirstAckMs = slowest
		if never {
			rep.SlowestFirstAckMs = -1
		}
		if !whole {
			rep.FirstAckMs = slowestOf(firsts, listedGapPartitions)
			rep.StallMs = slowestOf(stalls, listedGapPartitions)
			rep.PartitionsListed = fmt.Sprintf("first_ack_ms and stall_ms: the %d slowest partitions of %d each", listedGapPartitions, len(partitions))
		}
	}
	return ft.reports
}

// partFigure is one partition's figure, for slowestOf.
type partFigure struct {
	p int32
	v float64
}

// slowestOf keeps the n largest figures of all, -1 (never) counted above
// every other, ties broken by partition. It reorders all.
func slowestOf(all []partFigure, n int) map[int32]float64 {
	key := func(v float64) float64 {
		if v < 0 {
			return math.Inf(1)
		}
		return v
	}
	slices.SortFunc(all, func(a, b partFigure) int {
		if c := cmp.Compare(key(b.v), key(a.v)); c != 0 {
			return c
		}
		return cmp.Compare(a.p, b.p)
	})
	out := make(map[int32]float64, min(n, len(all)))
	for _, e := range all[:min(n, len(all))] {
		out[e.p] = e.v
	}
	return out
}
