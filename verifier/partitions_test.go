package verifier

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// Issue 37, point 5: every partition's figures go to partitions.jsonl;
// result.json lists every partition's gaps up to 1,000 partitions, and
// beyond only the 100 with the longest stretch, saying so.
func TestPartitionsFileAndListedGaps(t *testing.T) {
	for _, tc := range []struct {
		partitions int
		listed     int
		partial    bool
	}{
		{16, 16, false},
		{maxGapPartitions + 500, listedGapPartitions, true}, // fires: 1,500 partitions, 100 listed
	} {
		dir := t.TempDir()
		l, err := ledger.Open(filepath.Join(dir, "l"), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ids := int64(tc.partitions) * 2
		if err := SyntheticRun(l, ids, 2, tc.partitions); err != nil {
			t.Fatal(err)
		}
		res, err := Check(context.Background(), l, Options{ListDir: dir})
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.PartitionGaps) != tc.listed || (res.PartitionGapsListed != "") != tc.partial {
			t.Errorf("%d partitions: %d listed in partition_gaps, listed note %q", tc.partitions, len(res.PartitionGaps), res.PartitionGapsListed)
		}
		raw, err := os.ReadFile(filepath.Join(dir, PartitionsFile))
		if err != nil {
			t.Fatal(err)
		}
		var acked int64
		var lines int
		for _, ln := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var pl PartitionLine
			if err := json.Unmarshal([]byte(ln), &pl); err != nil {
				t.Fatalf("%q: %v", ln, err)
			}
			if int(pl.Partition) != lines {
				t.Errorf("line %d is partition %d", lines, pl.Partition)
			}
			if len(pl.Gaps) == 0 {
				t.Errorf("partition %d: no gaps, but its two acks are half an hour apart", pl.Partition)
			}
			acked += pl.Acked
			lines++
		}
		if lines != tc.partitions || acked != ids {
			t.Errorf("%d partitions: %s has %d lines and %d acked, want %d and %d", tc.partitions, PartitionsFile, lines, acked, tc.partitions, ids)
		}
	}
}

// appendSeconds writes what encoding/json writes for a gap's seconds,
// in its plain range and beyond it.
func TestAppendSecondsAsJSON(t *testing.T) {
	for _, v := range []float64{0, 0.51, 1.5, 12345.67, 1e-7, 3e21, 0.1 + 0.2} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendSeconds(nil, v); string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", v, got, want)
		}
	}
}

// gaps skips whole words and finds what the bit-by-bit scan found.
func TestGapsWordAtATime(t *testing.T) {
	slow := func(bm []uint64, n, minLen int64) [][2]int64 {
		var out [][2]int64
		start := int64(-1)
		for i := int64(0); i <= n; i++ {
			set := i == n || (i/64 < int64(len(bm)) && bm[i/64]>>(i%64)&1 == 1)
			switch {
			case !set && start < 0:
				start = i
			case set && start >= 0:
				if i-start >= minLen {
					out = append(out, [2]int64{start, i})
				}
				start = -1
			}
		}
		return out
	}
	for seed := uint64(1); seed < 300; seed++ {
		bm := make([]uint64, seed%9)
		x := seed * 0x9e3779b97f4a7c15
		for i := range bm {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			switch x % 4 {
			case 0:
				bm[i] = 0
			case 1:
				bm[i] = ^uint64(0)
			default:
				bm[i] = x
			}
		}
		for _, n := range []int64{0, 1, 63, 64, 65, 200, 700} {
			for _, minLen := range []int64{1, 3, 50} {
				got, want := gaps(bm, n, minLen), slow(bm, n, minLen)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("bm %x, n %d, min %d: got %v, want %v", bm, n, minLen, got, want)
				}
				// The same bitmap kept from its first non-empty word on.
				base := 0
				for base < len(bm) && bm[base] == 0 {
					base++
				}
				if got := gapsFrom(nil, bm[base:], int64(base), n, minLen); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("bm %x from word %d, n %d, min %d: got %v, want %v", bm, base, n, minLen, got, want)
				}
			}
		}
	}
}

// Issue 37, point 5: beyond 1,000 partitions a fault's first_ack_ms and
// stall_ms keep the 100 slowest partitions each, those that never acked
// again first, and say so; up to 1,000 every partition is kept.
func TestFaultPartitionFiguresBounded(t *testing.T) {
	for _, tc := range []struct {
		partitions, kept int
		listed           bool
	}{
		{16, 16, false},
		{1500, listedGapPartitions, true}, // fires
	} {
		const at = int64(1_000_000_000)
		ft := &faultTracker{reports: []FaultReport{{}}, at: []int64{at}, first: []byPartition[int64]{{}}}
		var parts []int32
		for p := range int32(tc.partitions) {
			parts = append(parts, p)
			if p%10 != 3 { // every tenth never acks again
				*ft.first[0].at(p) = at + int64(p)*1_000_000 // p ms after the fault
			}
		}
		reps := ft.finish(parts, func(p int32, _, _ int64) float64 { return float64(p) })
		f := reps[0]
		if len(f.FirstAckMs) != tc.kept || len(f.StallMs) != tc.kept || (f.PartitionsListed != "") != tc.listed {
			t.Fatalf("%d partitions: %d first acks, %d stalls kept, listed %q", tc.partitions, len(f.FirstAckMs), len(f.StallMs), f.PartitionsListed)
		}
		last := int32(tc.partitions - 1)
		if f.StallMs[last] != float64(last) || f.FirstAckMs[3] != -1 || f.SlowestFirstAckMs != -1 || f.LongestStallMs != float64(last) {
			t.Errorf("%d partitions: the slowest were dropped: stall of %d %v, first ack of 3 %v, slowest %v, longest %v",
				tc.partitions, last, f.StallMs[last], f.FirstAckMs[3], f.SlowestFirstAckMs, f.LongestStallMs)
		}
		if tc.listed {
			for p, v := range f.FirstAckMs {
				if v != -1 {
					t.Errorf("partition %d kept at %v ms while %d partitions never acked again", p, v, tc.partitions/10)
				}
			}
		}
	}
}

// boundaryText's lines are encoding/json's byte for byte, for every
// boundary of an hour's load (formatted once, then from its memo) and for
// boundaries past the memo.
func TestBoundaryTextLinesAsPartitionLine(t *testing.T) {
	var bt boundaryText
	check := func(spans [][2]int64) {
		t.Helper()
		pl := PartitionLine{Partition: 7, Acked: 3, Gaps: []Gap{}}
		for _, s := range spans {
			pl.Gaps = append(pl.Gaps, Gap{FromS: bucketSeconds(s[0]), ToS: bucketSeconds(s[1])})
		}
		j, err := json.Marshal(pl)
		if err != nil {
			t.Fatal(err)
		}
		want := append(j, '\n')
		for range 2 { // the second time from the memo
			if got := bt.appendLine(nil, pl.Partition, pl.Acked, spans); string(got) != string(want) {
				t.Fatalf("spans %v: got %s, want %s", spans, got, want)
			}
		}
	}
	check(nil)
	for k := int64(0); k < 360_000; k += 7 {
		check([][2]int64{{k, k + 13}})
	}
	check([][2]int64{{maxMemoBoundary - 1, maxMemoBoundary + 5}, {3 * maxMemoBoundary, 3*maxMemoBoundary + 1}})
}
