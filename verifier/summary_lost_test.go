package verifier

import (
	"strings"
	"testing"
)

// The summary's lost row says FAIL only for losses in partitions read to
// their end; those in partitions not read to their end are said to be
// not judged; no loss, neither.
func TestSummaryLostRow(t *testing.T) {
	for _, tc := range []struct {
		lost, unread int64
		want         string
	}{
		{0, 0, "lost    0  \n"},
		{3, 1, "lost    3  FAIL: acked, never read; 1 of them in partitions not read to their end: not judged\n"},
		{3, 3, "lost    3  3 of them in partitions not read to their end: not judged\n"},
		{2, 0, "lost    2  FAIL: acked, never read\n"},
	} {
		var b strings.Builder
		(&Result{Lost: tc.lost, LostUnread: tc.unread}).WriteSummary(&b)
		var row string
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "lost ") {
				row = strings.TrimLeft(l, " ")
			}
		}
		if strings.Join(strings.Fields(row), " ") != strings.Join(strings.Fields(tc.want), " ") {
			t.Errorf("lost %d, unread %d: row %q, want %q", tc.lost, tc.unread, row, tc.want)
		}
	}
}
