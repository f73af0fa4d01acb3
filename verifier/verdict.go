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
// and the check it belongs to (Result.Failures, for JUnit and tools).
func applyVerdict(res *Result, opts Options) {
	res.Verdict = Pass
	slipWarnings(res)
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
