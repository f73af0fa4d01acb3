package report

import (
	"strconv"
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
