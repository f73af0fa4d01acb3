package verifier

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/ledger"
)

// A re-read whose read-back did not finish replaces the run directory's
// verdict only when it adds something proven (issue 35 point 4): it keeps
// a proven PASS or FAIL when it proves nothing more, and replaces it
// whenever it proves a loss or failure the earlier verdict did not show,
// so that a partition not read never hides a loss in one that was.
func TestAdds(t *testing.T) {
	judged := func(mut func(*Result)) *Result {
		r := &Result{RunID: "r1", Sent: 1500, Acked: 1500, Read: 1500, ReadBackComplete: true}
		mut(r)
		applyVerdict(r, Options{})
		return r
	}
	unreachable := func(r *Result) {
		r.ReadBackComplete, r.Read, r.Unread = false, 0, 1500
		r.ReadBackError = "list offsets: no broker answered"
	}
	failed := func(r *Result) {
		r.Lost, r.Read = 100, 1400
		r.LostByPartition = map[int32]*PartitionLoss{0: {Count: 100}}
	}
	// halfRead read partition 0 to its end, where it found lost, and
	// not partition 1.
	halfRead := func(lost int64) func(*Result) {
		return func(r *Result) {
			r.ReadBackComplete, r.Read, r.Lost, r.Unread = false, 750-lost, lost, 750
			r.ReadBackNotes = map[int32]string{1: "no progress"}
			if lost > 0 {
				r.LostByPartition = map[int32]*PartitionLoss{0: {Count: lost}}
			}
		}
	}
	tests := []struct {
		name          string
		earlier, next *Result
		adds          bool
	}{
		{"a FAIL, then nothing read", judged(failed), judged(unreachable), false},
		{"a PASS, then nothing read", judged(func(*Result) {}), judged(unreachable), false},
		{"an aborted run, then nothing read", judged(func(r *Result) {
			r.Experiment = &Experiment{Scheduled: 3000, PlannedS: 6}
		}), judged(unreachable), false},
		{"an unproven verdict, then nothing read", judged(func(r *Result) { r.Ledger = &ledger.Proof{Reason: "older"} }), judged(unreachable), false},
		{"a FAIL, then half read and fewer lost", judged(failed), judged(halfRead(40)), false},
		{"a PASS, then half read with a loss", judged(func(*Result) {}), judged(halfRead(3)), true},
		{"a FAIL, then half read with more lost", judged(failed), judged(halfRead(150)), true},
		{"a FAIL, then a loss in a partition it did not show", judged(failed), judged(func(r *Result) {
			halfRead(0)(r)
			r.ReadBackNotes = map[int32]string{0: "no progress"}
			r.Lost, r.LostByPartition = 5, map[int32]*PartitionLoss{1: {Count: 5}}
		}), true},
		{"a FAIL, then half read with a corrupt copy", judged(failed), judged(func(r *Result) { unreachable(r); r.Corrupt = 1 }), true},
		{"a FAIL, then read to the end", judged(failed), judged(func(*Result) {}), true},
		{"a FAIL, then the topic is gone", judged(failed), judged(func(r *Result) {
			r.ReadBackComplete, r.TopicGone, r.Read, r.Lost = false, true, 0, 1500
		}), true},
		{"nothing proven, then nothing read", judged(unreachable), judged(unreachable), true},
		{"another run's verdict", judged(func(r *Result) { failed(r); r.RunID = "r0" }), judged(unreachable), true},
		{"no earlier verdict", nil, judged(unreachable), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			adds, why := Adds(tc.earlier, tc.next)
			if adds != tc.adds || (why == "") != adds {
				t.Fatalf("adds %v (%q), want %v", adds, why, tc.adds)
			}
			if !adds && (!strings.Contains(why, "the read-back did not finish") || !strings.Contains(why, "verdict ("+tc.earlier.Verdict)) {
				t.Fatalf("why %q does not say the read-back did not finish and which verdict is kept", why)
			}
			t.Logf("earlier %s (lost %d), next %s (lost %d, unread %d): adds %v %s", verdictOf(tc.earlier), lostOf(tc.earlier), tc.next.Verdict, tc.next.Lost, tc.next.Unread, adds, why)
		})
	}
}

func verdictOf(r *Result) string {
	if r == nil {
		return "none"
	}
	return r.Verdict
}

func lostOf(r *Result) int64 {
	if r == nil {
		return 0
	}
	return r.Lost
}

// A result.json from before unread was kept apart counted the unread in
// lost and lost_unread: reading it moves them to Unread, so that no tool
// (Adds, compare, matrix) counts them lost; a newer one reads as written.
func TestResultJSONBeforeUnread(t *testing.T) {
	for _, tc := range []struct {
		json         string
		lost, unread int64
	}{
		{`{"verdict":"incomplete","lost":1500,"lost_unread":1500}`, 0, 1500},
		{`{"verdict":"fail","lost":130,"lost_unread":30}`, 100, 30},
		{`{"verdict":"fail","lost":100}`, 100, 0},
		{`{"verdict":"fail","lost":100,"unread":30}`, 100, 30},
	} {
		var r Result
		if err := json.Unmarshal([]byte(tc.json), &r); err != nil {
			t.Fatal(err)
		}
		if r.Lost != tc.lost || r.Unread != tc.unread || r.Verdict == "" {
			t.Errorf("%s: lost %d, unread %d, verdict %q; want %d, %d", tc.json, r.Lost, r.Unread, r.Verdict, tc.lost, tc.unread)
		}
	}
}
