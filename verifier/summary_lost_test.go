package verifier

import (
	"strings"
	"testing"
)

// The summary's lost row says FAIL for every loss shown; acked messages
// in partitions not read to their end have a row of their own, unread,
// which says they are not judged; no loss, neither.
func TestSummaryLostRow(t *testing.T) {
	for _, tc := range []struct {
		lost, unread, deleted int64
		want, wantUnread      string
	}{
		{0, 0, 0, "lost    0  \n", ""},
		{3, 1, 0, "lost    3  FAIL: acked, never read\n", "unread  1  acked, not read: in partitions not read to their end, not judged\n"},
		{0, 3, 0, "lost    0  \n", "unread  3  acked, not read: in partitions not read to their end, not judged\n"},
		{2, 0, 0, "lost    2  FAIL: acked, never read\n", ""},
		{2, 0, 2, "lost    2  FAIL: acked, never read; 2 of them acked below where the log now begins: deleted\n", ""},
	} {
		var b strings.Builder
		(&Result{Lost: tc.lost, Unread: tc.unread, LostBelowLogStart: tc.deleted}).WriteSummary(&b)
		var row, unread string
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "lost ") {
				row = strings.TrimLeft(l, " ")
			}
			if strings.HasPrefix(strings.TrimSpace(l), "unread ") {
				unread = strings.TrimLeft(l, " ")
			}
		}
		norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		if norm(row) != norm(tc.want) || norm(unread) != norm(tc.wantUnread) {
			t.Errorf("lost %d, unread %d: rows %q and %q, want %q and %q", tc.lost, tc.unread, row, unread, tc.want, tc.wantUnread)
		}
	}
}
