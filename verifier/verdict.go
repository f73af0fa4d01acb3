package verifier

import (
	"fmt"
	"github.com/ackcheck/ackcheck/faults"
	"slices"
	"strings"
	"time"
)

// Stage 4 of Check: the verdict. Each rule reads the counts and figures
// the earlier stages wrote into res and fails the verdict with a reason
// and the check it belongs to (Result.Failures, for JUnit and tools). It
// records the checks it judged by (Result.Checks) and how a re-read
// changed them.
//
// A read-back that did not finish (Result.Unfinished) proves no loss in
// the partitions it did not read to their end: an acked message not read
// there may be in what was not read (Unread, never counted in Lost).
// Those are no failure; a loss in a partition read to its end is, and so
// is a message acked below where its partition's log now begins. Unless a check fails on what
// was read, the verdict is then Incomplete, never Pass.
func applyVerdict(res *Result, opts Options) {
	res.Verdict = Pass
	checks := ChecksOf(opts)
	res.Checks = &checks
	res.CheckChanges, res.ChecksUnknown = opts.Changes, opts.ChecksUnknown
	res.Notes = append(slices.Clip(res.Notes), opts.Changes...)
	slipWarnings(res)
	networkWarnings(res)
	oracleWarnings(res)
	fail := func(check, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		res.Verdict = Fail
		res.Reasons = append(res.Reasons, msg)
		res.Failures = append(res.Failures, Failure{Check: check, Message: msg})
	}
	unfinished := res.Unfinished()
	deleted := ""
	if res.LostBelowLogStart > 0 {
		deleted = fmt.Sprintf("; %d of them were acked below the offset where their partition's log now begins: deleted (see lost.jsonl, below_log_start)", res.LostBelowLogStart)
	}
	switch {
	case res.Lost > 0 && res.Unread == 0:
		fail(CheckLost, "%d acked messages were not read back%s", res.Lost, deleted)
	case res.Lost > 0:
		where := "from partitions read to their end"
		if res.LostBelowLogStart > 0 {
			where = "from partitions read to their end, or were acked below where their partition's log now begins"
		}
		fail(CheckLost, "%d acked messages were not read back %s%s (%d more in partitions not read to their end are unread, not judged)", res.Lost, where, deleted, res.Unread)
	}
	if res.Corrupt > 0 {
		fail(CheckCorrupt, "%d copies failed their checksum", res.Corrupt)
	}
	unproven := res.Ledger != nil && !res.Ledger.Whole
	switch {
	case res.Phantom > 0 && unproven:
		// A send missing from a ledger nothing vouches for reads back as
		// a phantom: blaming the broker for it would be a guess.
		res.Reasons = append(res.Reasons, fmt.Sprintf("%d messages were read whose sends the ledger does not hold; "+
			"as the ledger cannot be proven whole, they are not counted against the broker", res.Phantom))
	case res.Phantom > 0:
		fail(CheckPhantom, "%d messages were read that ackcheck never sent", res.Phantom)
	}
	if opts.NoDuplicates && res.Duplicates > 0 {
		fail(CheckDuplicates, "%d duplicate copies (--no-duplicates)", res.Duplicates)
	}
	if opts.Ordered && res.Reordered > 0 {
		fail(CheckReordered, "%d messages out of order (--ordered)", res.Reordered)
	}
	switch {
	case res.TopicGone:
		fail(CheckReadBack, "topic %s does not exist any more: the %d acked messages in it cannot be read", res.Topic, res.Lost)
	case unfinished:
		// Not a failure of the broker's: no verdict yet. Recorded as the
		// read-back check's failure so that tools see which check is open.
		msg := "the read-back did not finish" + res.readBackWhy() +
			fmt.Sprintf("; %d acked messages are not read so far; %s", res.Unread, ResumeHint)
		res.Reasons = append(res.Reasons, msg)
		res.Failures = append(res.Failures, Failure{Check: CheckReadBack, Message: msg})
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
			faulted = faulted || f.Result == faults.Applied
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
		if f.Action == faults.UnexpectedDeath {
			// As in roachtest: a crash nobody scheduled means the run did
			// not test what it says it tested.
			fail(CheckUnexpectedDeath, "node %d died at %.1fs and no fault killed it", f.Node, f.AtS)
		}
	}
	if unproven {
		// Recorded against its check, as an unfinished read-back is, but
		// not a failure of the broker's.
		msg := "the run's ledger cannot be proven whole: " + res.Ledger.Reason
		res.Reasons = append(res.Reasons, msg)
		res.Failures = append(res.Failures, Failure{Check: CheckLedgerWhole, Message: msg})
	}
	if unfinished && res.Verdict == Pass {
		res.Verdict = Incomplete
	}
	if unproven && res.Verdict == Pass {
		res.Verdict = Unproven
	}
}

// ResumeHint ends the reason of an unfinished read-back; a caller that
// knows the run directory replaces it with the command itself.
const ResumeHint = "run `ackcheck verify` on this run directory when the brokers answer"

// Unfinished reports whether the read-back ended before every partition's
// end without the broker saying the data is gone: what was not read is
// not judged.
func (r *Result) Unfinished() bool { return !r.ReadBackComplete && !r.TopicGone }

// readBackWhy says which request or partitions stopped the read-back,
// partitions in order: ": reading ...; partition 3: stopped at ...".
func (r *Result) readBackWhy() string {
	var parts []string
	if r.ReadBackError != "" {
		parts = append(parts, r.ReadBackError)
	}
	ps := make([]int32, 0, len(r.ReadBackNotes))
	for p := range r.ReadBackNotes {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for i, p := range ps {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more partitions", len(ps)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("partition %d: %s", p, r.ReadBackNotes[p]))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
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
