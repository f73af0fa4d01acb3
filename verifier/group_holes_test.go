package verifier

import (
	"testing"

	"github.com/ackcheck/ackcheck/ledger"
)

// A run with --group whose members never delivered one of the run's
// acked messages (they never joined the partitions, every poll failed,
// or the only member stopped on its first delivery) judged nothing of
// the group: its 0 skipped and 0 commits lost read PASS before. It is
// not the experiment asked for; a group that delivered is judged as
// before.
func TestGroupThatDeliveredNothingIsNoPass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acked int64
		group GroupResult
		want  string
	}{
		{"never delivered, with an error", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g", Err: "member 0: poll: coordinator not available"}}, Aborted},
		{"never delivered, no error", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}}, Aborted},
		{"delivered", 100, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}, Delivered: 100, Deliveries: 100, Commits: 3}, Pass},
		{"nothing acked to deliver", 0, GroupResult{GroupInfo: ledger.GroupInfo{Name: "g"}}, Fail}, // the acked check fails it
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.group
			res := &Result{Sent: 100, Acked: tc.acked, Read: tc.acked, ReadBackComplete: true, Group: &g}
			applyVerdict(res, Options{})
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s; reasons %v", res.Verdict, tc.want, res.Reasons)
			}
		})
	}
}
