package report

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/verifier"
)

// The reports' counts show unread messages on a row of their own, apart
// from the lost (issue 35 point 4), and only when there are any.
func TestCountsUnreadRow(t *testing.T) {
	for _, tc := range []struct {
		lost, unread int64
	}{{0, 0}, {3, 0}, {0, 500}, {3, 500}} {
		rows := counts(&verifier.Result{Lost: tc.lost, Unread: tc.unread})
		got := map[string][3]string{}
		for _, r := range rows {
			got[r[0]] = r
		}
		lost, unread := got["acked lost"], got["acked unread (partitions not read to their end: not judged)"]
		wantFail := map[bool]string{true: "FAIL", false: ""}[tc.lost > 0]
		if lost[1] != itoa(tc.lost) || lost[2] != wantFail {
			t.Errorf("lost %d, unread %d: lost row %q", tc.lost, tc.unread, lost)
		}
		if (unread[0] != "") != (tc.unread > 0) || (tc.unread > 0 && (unread[1] != itoa(tc.unread) || unread[2] != "")) {
			t.Errorf("lost %d, unread %d: unread row %q", tc.lost, tc.unread, unread)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The consumer group's rows carry its commit latency once a commit call
// was timed, and no such row before.
func TestGroupCountsShowCommitLatency(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    verifier.Latency
		want bool
	}{
		{"timed", verifier.Latency{Count: 12, P50: 3.5, P99: 40, Max: 41}, true},
		{"none timed", verifier.Latency{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &verifier.Result{Group: &verifier.GroupResult{Commits: 20, CommitLatency: tc.l}}
			r.Group.Name = "g"
			var got *[3]string
			for _, row := range groupCounts(r) {
				if row[0] == "group g: commit calls timed" {
					got = &row
				}
			}
			if (got != nil) != tc.want {
				t.Fatalf("commit latency row %v, want one: %v", got, tc.want)
			}
			if got != nil && (got[1] != "12" || !strings.Contains(got[2], "p50 3.50, p99 40.00, max 41.00")) {
				t.Fatalf("row %q", *got)
			}
		})
	}
}
