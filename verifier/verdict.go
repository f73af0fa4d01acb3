package verifier

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// Stage 4 of Check: the verdict. It is a list of rules (verdictRules),
// each a small checker that reads the counts and figures the earlier
// stages wrote into res and reports what it found. Every finding is a
// reason; a finding of a check is recorded against it (Result.Failures,
// for JUnit and tools); and each asks for an outcome. The verdict is the
// strongest outcome any rule asked for, in this explicit order:
//
//	fail > aborted > incomplete > unproven > pass
//
// A proven failure of the broker's stands whatever else is wrong with the
// run. A run that was not the experiment asked for (aborted) cannot be
// mended by reading it back again, so it outranks an unfinished
// read-back; an unfinished read-back can still turn into a failure, so
// it outranks a ledger that cannot be proven whole.
//
// A read-back that did not finish (Result.Unfinished) proves no loss in
// the partitions it did not read to their end: an acked message not read
// there may be in what was not read (Unread, never counted in Lost).
// Those are no failure; a loss in a partition read to its end is, and so
// is a message acked below where its partition's log now begins.
func applyVerdict(res *Result, opts Options) {
	checks := ChecksOf(opts)
	res.Checks = &checks
	res.CheckChanges, res.ChecksUnknown = opts.Changes, opts.ChecksUnknown
	res.Notes = append(slices.Clip(res.Notes), opts.Changes...)
	slipWarnings(res)
	networkWarnings(res)
	oracleWarnings(res)
	worst := outcomePass
	for _, r := range verdictRules {
		for _, f := range r.judge(res, opts) {
			res.Reasons = append(res.Reasons, f.message)
			if f.check != "" {
				res.Failures = append(res.Failures, Failure{Check: f.check, Message: f.message})
			}
			worst = max(worst, f.outcome)
		}
	}
	res.Verdict = worst.verdict()
}

// outcome is what a finding asks of the verdict; a larger one wins.
type outcome int

const (
	outcomePass       outcome = iota // a reason only
	outcomeUnproven                  // no verdict: the ledger cannot be proven whole
	outcomeIncomplete                // no verdict yet: the read-back did not finish
	outcomeAborted                   // not the experiment asked for
	outcomeFail                      // the broker failed a check
)

func (o outcome) verdict() string {
	return [...]string{Pass, Unproven, Incomplete, Aborted, Fail}[o]
}

// finding is one thing a rule found: a reason, the check it is recorded
// against ("" for a reason that fails no check), and the outcome it asks.
type finding struct {
	outcome outcome
	check   string
	message string
}

func failed(check, format string, args ...any) finding {
	return finding{outcomeFail, check, fmt.Sprintf(format, args...)}
}

// rule is one checker of the verdict. judge must only read res: the
// rules are independent, and their order is the order of the reasons.
type rule struct {
	name  string
	judge func(res *Result, opts Options) []finding
}

// verdictRules are the verdict's checkers, in the order their reasons
// are written. A new check is one entry here (and its name in CheckNames
// and its flag in checkFlags when it has one).
var verdictRules = []rule{
	{"lost", ruleLost},
	{"corrupt", ruleCorrupt},
	{"phantom", rulePhantom},
	{"duplicates", ruleDuplicates},
	{"reordered", ruleReordered},
	{"read-back", ruleReadBack},
	{"sent", ruleSent},
	{"acked", ruleAcked},
	{"max-no-ack", ruleMaxNoAck},
	{"recovery deadlines", ruleRecoveryDeadlines},
	{"unexpected death", ruleUnexpectedDeath},
	{"skipped", ruleSkipped},
	{"commit lost", ruleCommitLost},
	{"redelivered", ruleRedelivered},
	{"group progress", ruleGroupProgress},
	{"group delivered", ruleGroupDelivered},
	{"group undelivered", ruleGroupUndelivered},
	{"experiment", ruleExperiment},
	{"ledger whole", ruleLedgerWhole},
}

func one(ok bool, f finding) []finding {
	if !ok {
		return nil
	}
	return []finding{f}
}

func ruleLost(res *Result, _ Options) []finding {
	if res.Lost == 0 {
		return nil
	}
	deleted := ""
	if res.LostBelowLogStart > 0 {
		deleted = fmt.Sprintf("; %d of them were acked below the offset where their partition's log now begins: deleted (see lost.jsonl, below_log_start)", res.LostBelowLogStart)
	}
	if res.Unread == 0 {
		return []finding{failed(CheckLost, "%d acked messages were not read back%s", res.Lost, deleted)}
	}
	where := "from partitions read to their end"
	if res.LostBelowLogStart > 0 {
		where = "from partitions read to their end, or were acked below where their partition's log now begins"
	}
	return []finding{failed(CheckLost, "%d acked messages were not read back %s%s (%d more in partitions not read to their end are unread, not judged)", res.Lost, where, deleted, res.Unread)}
}

// ruleCorrupt fails on a copy whose checksum failed, and on a batch the
// broker served whose own checksum failed even when none of its records
// is counted corrupt: records that did not parse, or that were no
// message of this run, are still a broker serving damaged data.
func ruleCorrupt(res *Result, _ Options) []finding {
	spans := 0
	for _, ss := range res.ReadBackDamaged {
		spans += len(ss)
	}
	switch {
	case res.Corrupt > 0:
		return []finding{failed(CheckCorrupt, "%d copies failed their checksum", res.Corrupt)}
	case spans > 0:
		return []finding{failed(CheckCorrupt, "the broker served %d record batches whose checksum fails (see read_back_damaged in result.json): records of theirs that did not parse, or were not messages of this run, count as corrupt nowhere else", spans)}
	}
	return nil
}

// unproven reports whether the run's ledger was judged and cannot be
// proven whole.
func (r *Result) unproven() bool { return r.Ledger != nil && !r.Ledger.Whole }

func rulePhantom(res *Result, _ Options) []finding {
	switch {
	case res.Phantom > 0 && res.unproven():
		// A send missing from a ledger nothing vouches for reads back as
		// a phantom: blaming the broker for it would be a guess.
		return []finding{{outcomePass, "", fmt.Sprintf("%d messages were read whose sends the ledger does not hold; "+
			"as the ledger cannot be proven whole, they are not counted against the broker", res.Phantom)}}
	case res.Phantom > 0:
		return []finding{failed(CheckPhantom, "%d messages were read that ackcheck never sent", res.Phantom)}
	}
	return nil
}

func ruleDuplicates(res *Result, opts Options) []finding {
	return one(opts.NoDuplicates && res.Duplicates > 0, failed(CheckDuplicates, "%d duplicate copies (--no-duplicates)", res.Duplicates))
}

func ruleReordered(res *Result, opts Options) []finding {
	return one(opts.Ordered && res.Reordered > 0, failed(CheckReordered, "%d messages out of order (--ordered)", res.Reordered))
}

func ruleReadBack(res *Result, _ Options) []finding {
	switch {
	case res.TopicGone:
		return []finding{failed(CheckReadBack, "topic %s does not exist any more: the %d acked messages in it cannot be read", res.Topic, res.Lost)}
	case res.Unfinished():
		// Not a failure of the broker's: no verdict yet. Recorded as the
		// read-back check's failure so that tools see which check is open.
		return []finding{{outcomeIncomplete, CheckReadBack, "the read-back did not finish" + res.readBackWhy() +
			fmt.Sprintf("; %d acked messages are not read so far; %s", res.Unread, ResumeHint)}}
	}
	return nil
}

func ruleSent(res *Result, _ Options) []finding {
	return one(res.Sent == 0, failed(CheckSent, "nothing was sent: there is nothing to judge"))
}

// ruleAcked: "nothing acked was lost" is vacuous when nothing was acked:
// a run whose writes were all refused (a message over the topic's
// max.message.bytes, an ACL) tested nothing. Under 1% fails too, unless
// a fault that ran can explain it.
func ruleAcked(res *Result, _ Options) []finding {
	if res.Sent == 0 || res.Acked*100 >= res.Sent {
		return nil
	}
	faulted := slices.ContainsFunc(res.Faults, func(f FaultReport) bool { return f.Result == faults.Applied })
	return one(res.Acked == 0 || !faulted, failed(CheckAcked, "only %d of %d sent messages were acked: the run tested almost nothing%s", res.Acked, res.Sent, topErrors(res.Errors, 3)))
}

func ruleMaxNoAck(res *Result, opts Options) []finding {
	d := opts.MaxNoAck
	return one(d > 0 && res.LongestNoAckMs > float64(d/time.Millisecond),
		failed(CheckMaxNoAck, "deadline: %.0f ms without acks exceeds --max-no-ack %s", res.LongestNoAckMs, d))
}

// ruleRecoveryDeadlines holds every fault that took a node away to
// --max-ready and --max-in-sync; never observed counts as missed.
func ruleRecoveryDeadlines(res *Result, opts Options) []finding {
	late := func(v float64, d time.Duration) bool { return d > 0 && (v < 0 || v > float64(d/time.Millisecond)) }
	var out []finding
	for _, f := range res.Faults {
		if f.FirstAckMs == nil {
			continue
		}
		if late(f.ReadyMs, opts.MaxReady) {
			out = append(out, failed(CheckMaxReady, "deadline: node %d ready %s after the %s at %.1fs, over --max-ready %s", f.Node, msText(f.ReadyMs), f.Action, f.AtS, opts.MaxReady))
		}
		if late(f.InSyncMs, opts.MaxInSync) {
			out = append(out, failed(CheckMaxInSync, "deadline: replicas in sync %s after the %s at %.1fs, over --max-in-sync %s", msText(f.InSyncMs), f.Action, f.AtS, opts.MaxInSync))
		}
	}
	return out
}

// ruleUnexpectedDeath: as in roachtest, a crash nobody scheduled means
// the run did not test what it says it tested.
func ruleUnexpectedDeath(res *Result, _ Options) []finding {
	var out []finding
	for _, f := range res.Faults {
		if f.Action == faults.UnexpectedDeath {
			out = append(out, failed(CheckUnexpectedDeath, "node %d died at %.1fs and no fault killed it", f.Node, f.AtS))
		}
	}
	return out
}

// ruleExperiment: a run whose load stopped before its schedule's end, or
// whose scheduled faults did not all fire, is not the experiment asked
// for. Recorded against its check; not a failure of the broker's.
func ruleExperiment(res *Result, _ Options) []finding {
	return one(res.Experiment.Aborted(), finding{outcomeAborted, CheckExperiment,
		"the run is not the experiment it was asked for: " + res.Experiment.Why(res.Sent) + "; no verdict can be given on it: run it again"})
}

// ruleLedgerWhole: recorded against its check, as an unfinished
// read-back is, but not a failure of the broker's.
func ruleLedgerWhole(res *Result, _ Options) []finding {
	if !res.unproven() {
		return nil
	}
	return []finding{{outcomeUnproven, CheckLedgerWhole, "the run's ledger cannot be proven whole: " + res.Ledger.Reason}}
}

// MarkUnproven records, after the verdict, a reason the run's evidence
// cannot be proven whole that only the caller could see (a sharded run's
// latency logs counting other messages than its ledgers): the ledger
// proof says so, the ledger-whole check records it, and a verdict that
// was Pass becomes Unproven. A stronger verdict stands.
func (r *Result) MarkUnproven(why string) {
	r.unprove(why)
	msg := "the run's ledger cannot be proven whole: " + why
	r.Reasons = append(r.Reasons, msg)
	r.Failures = append(r.Failures, Failure{Check: CheckLedgerWhole, Message: msg})
	if r.Verdict == Pass {
		r.Verdict = Unproven
	}
}

// unprove records in the ledger's proof why it cannot be proven whole
// (after any reason it had); the ledger-whole rule then judges it.
func (r *Result) unprove(why string) {
	p := ledger.Proof{}
	if r.Ledger != nil {
		p = *r.Ledger
	}
	if p.Whole || p.Reason == "" {
		p.Reason = why
	} else {
		p.Reason += "; " + why
	}
	p.Whole = false
	r.Ledger = &p
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
