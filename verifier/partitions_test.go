package verifier

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/ledger"
)

// Issue 37, point 2: partitions_touched counts the partitions that got at
// least one acked message; the summary says it beside the run's count.
// Fewer messages than partitions leave some untouched; enough touch all.
func TestPartitionsTouched(t *testing.T) {
	for _, tc := range []struct {
		ids        int64
		partitions int
		touched    int64
	}{
		{ids: 10, partitions: 16, touched: 10}, // fires: 6 partitions never acked
		{ids: 100, partitions: 16, touched: 16},
		{ids: 0, partitions: 4, touched: 0},
	} {
		l, err := ledger.Open(filepath.Join(t.TempDir(), "l"), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := SyntheticRun(l, tc.ids, 2, tc.partitions); err != nil {
			t.Fatal(err)
		}
		res, err := Check(context.Background(), l, Options{})
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.Partitions != tc.partitions || res.PartitionsTouched != tc.touched {
			t.Errorf("%+v: %d partitions, %d touched", tc, res.Partitions, res.PartitionsTouched)
		}
		var b strings.Builder
		res.WriteSummary(&b)
		want := fmt.Sprintf("partitions: %d, %d of them with at least one acked message", tc.partitions, tc.touched)
		if !strings.Contains(b.String(), want) {
			t.Errorf("%+v: summary lacks %q:\n%s", tc, want, b.String())
		}
	}
}

// Issue 37, point 5: the summary stays under 40 lines whatever the
// partition count: read-back notes of a million partitions print five
// and a count. A few notes print whole.
func TestSummaryShortAtManyPartitions(t *testing.T) {
	for _, n := range []int{3, 1_000_000} {
		r := &Result{RunID: "r", Verdict: Incomplete, ReadBackNotes: map[int32]string{}, Partitions: n, PartitionsTouched: int64(n)}
		for p := range n {
			r.ReadBackNotes[int32(p)] = "stopped short"
		}
		var b strings.Builder
		r.WriteSummary(&b)
		lines := strings.Count(b.String(), "\n")
		if lines >= 40 {
			t.Errorf("%d partitions with notes: summary of %d lines", n, lines)
		}
		more := strings.Contains(b.String(), fmt.Sprintf("... and %d more partitions", n-summaryNotes))
		if (n > summaryNotes) != more {
			t.Errorf("%d partitions with notes: 'and more' line %v:\n%s", n, more, b.String())
		}
		if !strings.Contains(b.String(), "partition 2: stopped short") {
			t.Errorf("%d partitions: the first notes are missing:\n%s", n, b.String())
		}
	}
}
