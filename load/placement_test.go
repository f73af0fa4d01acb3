package load

import (
	"strings"
	"testing"
)

func TestParsePlacement(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Placement
		error string
	}{
		{"", Placement{}, ""},
		{"round-robin", Placement{}, ""},
		{"batch:1", Placement{Batch: 1}, ""},
		{"batch:100", Placement{Batch: 100}, ""},
		{"batch:0", Placement{}, "at least 1"},
		{"batch:x", Placement{}, "at least 1"},
		{"random", Placement{}, "want round-robin or batch:N"},
	} {
		got, err := ParsePlacement(tc.in)
		switch {
		case tc.error == "" && (err != nil || got != tc.want):
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
			t.Errorf("%q: got %v, want an error with %q", tc.in, err, tc.error)
		}
	}
}

// Round-robin and batch:1 put slot i on partition i mod P; batch:N gives
// each producer runs of N on one partition, the producers take the
// partitions in turn, and a long enough load spreads evenly.
func TestPlacementPartition(t *testing.T) {
	const producers, nparts = 3, 7
	for _, pl := range []Placement{{}, {Batch: 1}} {
		for i := uint64(0); i < 100; i++ {
			if got := pl.partition(i, producers, nparts); got != i%nparts {
				t.Fatalf("%s: slot %d on %d, want %d", pl, i, got, i%nparts)
			}
		}
	}
	const batch = 5
	pl := Placement{Batch: batch}
	count := make([]int, nparts)
	slots := uint64(producers * batch * nparts * 4)
	for k := uint64(0); k < producers; k++ {
		var run []uint64
		for i := k; i < slots; i += producers {
			run = append(run, pl.partition(i, producers, nparts))
		}
		for j, p := range run {
			count[p]++
			if j%batch != 0 && p != run[j-1] {
				t.Fatalf("producer %d: slot %d of its run moved from partition %d to %d inside a batch of %d", k, j, run[j-1], p, batch)
			}
			if j%batch == 0 && j > 0 && p == run[j-1] {
				t.Fatalf("producer %d: batch at its slot %d stayed on partition %d", k, j, p)
			}
		}
		if run[0] != k {
			t.Errorf("producer %d starts on partition %d, want %d", k, run[0], k)
		}
	}
	for p, n := range count {
		if n != int(slots)/nparts {
			t.Errorf("partition %d got %d messages, want %d: %v", p, n, int(slots)/nparts, count)
		}
	}
}
