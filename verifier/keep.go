package verifier

import (
	"fmt"
	"slices"
)

// A re-read that could not read (a broker that does not answer) must not
// undo what an earlier read-back proved: judged alone, its acked messages
// are unread, not lost, and its verdict incomplete, so writing it over
// a proven FAIL would put "not judged" where a loss was shown. Adds
// decides, before a verify replaces anything, whether its read-back adds
// to the earlier verdict of the same run; when it does not, the earlier
// one (result.json, the reads ledger, the lists, the reports) is kept as
// it is and the verify says why (runner).

// Adds reports whether next, the verdict of a re-read, should replace
// earlier, the verdict the run directory holds (read from its
// result.json), and when it should not, says why in a sentence.
//
// next replaces earlier when its read-back finished (every partition read
// to its end, or the broker said the topic is gone): it is then the
// broker's state now, whatever it says. It replaces an earlier verdict
// that proved nothing either (incomplete), or that is another run's. A
// next whose read-back did not finish replaces a proven earlier verdict
// (pass, fail, unproven, or aborted, whose counts are proven too) only when it proves something the earlier did
// not: a check it fails that the earlier did not fail, more lost,
// corrupt, phantom, duplicate or reordered messages than the earlier
// counted, or more lost in any one partition. So an unread partition never hides a loss shown in a partition
// that was read to its end, and a broker that does not answer never turns
// a proven FAIL into a count of unread messages.
func Adds(earlier, next *Result) (adds bool, why string) {
	if earlier == nil || next == nil || !next.Unfinished() || earlier.RunID != next.RunID {
		return true, ""
	}
	switch earlier.Verdict {
	case Pass, Fail, Unproven, Aborted:
	default:
		return true, "" // the earlier verdict proved nothing either
	}
	var newChecks []string
	for _, f := range next.Failures {
		if f.Check == CheckReadBack || f.Check == CheckLedgerWhole {
			continue // no failure of the broker's
		}
		if !slices.ContainsFunc(earlier.Failures, func(e Failure) bool { return e.Check == f.Check }) && !slices.Contains(newChecks, f.Check) {
			newChecks = append(newChecks, f.Check)
		}
	}
	more := next.Lost > earlier.Lost || next.Corrupt > earlier.Corrupt || next.Phantom > earlier.Phantom ||
		next.Duplicates > earlier.Duplicates || next.Reordered > earlier.Reordered
	for p, pl := range next.LostByPartition {
		if was := earlier.LostByPartition[p]; was == nil || pl.Count > was.Count {
			more = true // a loss in a partition the earlier verdict did not show
		}
	}
	if len(newChecks) > 0 || more {
		return true, ""
	}
	why = "the read-back did not finish" + next.readBackWhy() +
		fmt.Sprintf(" (%d acked messages not read); it proves nothing that the run directory's verdict (%s, judged from a read-back of %s%s) does not, so that verdict, its read-back and its lists and reports are kept as they were",
			next.Unread, earlier.Verdict, earlier.ReadBackWhen(), earlier.lostText())
	return false, why
}

// ReadBackWhen says when the read-back a result was judged from ran:
// "2026-12-03 13:40:05 UTC", or "an unknown time" for a result.json that
// does not say.
func (r *Result) ReadBackWhen() string {
	if r.ReadBackAt.IsZero() {
		return "an unknown time"
	}
	return r.ReadBackAt.UTC().Format("2006-01-02 15:04:05 MST")
}

func (r *Result) lostText() string {
	if r.Lost == 0 {
		return ""
	}
	return fmt.Sprintf(", %d acked messages lost", r.Lost)
}
