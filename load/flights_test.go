package load

import (
	"testing"
)

// The sweeper's bookkeeping across slabs: every flight is expired exactly
// once, oldest first, whether it sits in the first slab, straddles a slab
// boundary or comes after the sweeper emptied every slab; a sweep with
// nothing left expires nothing, and the flights added after it are still
// found.
func TestFlightsExpireOnceAcrossSlabs(t *testing.T) {
	type step struct {
		add    int   // flights to add first, sent at the next free times 1, 2, ...
		cutoff int64 // then expire everything sent before this
		want   int   // how many expire, the oldest still pending first
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"within one slab, swept twice", []step{{add: 3, cutoff: 3, want: 2}, {cutoff: 100, want: 1}, {cutoff: 100, want: 0}}},
		{"exactly one slab, then more", []step{{add: flightSlab, cutoff: 1 << 40, want: flightSlab}, {cutoff: 1 << 40, want: 0}, {add: 2, cutoff: 1 << 40, want: 2}}},
		{"a slab and a few, in two sweeps", []step{{add: flightSlab + 3, cutoff: flightSlab + 1, want: flightSlab}, {cutoff: 1 << 40, want: 3}, {cutoff: 1 << 40, want: 0}}},
		{"three slabs at once, then more", []step{{add: 2*flightSlab + 5, cutoff: 1 << 40, want: 2*flightSlab + 5}, {add: 1, cutoff: 1 << 40, want: 1}}},
		{"added between sweeps across a boundary", []step{{add: flightSlab - 1, cutoff: 1 << 40, want: flightSlab - 1}, {add: 4, cutoff: 1 << 40, want: 4}, {add: flightSlab, cutoff: 1 << 40, want: flightSlab}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &flights{}
			var added, next uint64 // flights added; seq of the next flight expected to expire
			for i, s := range tc.steps {
				for range s.add {
					fl.add(added, 0, int64(added)+1)
					added++
				}
				got := 0
				fl.expire(s.cutoff, func(f *flight) {
					if f.seq != next {
						t.Fatalf("step %d: expired flight %d, want %d (oldest pending first, each once)", i, f.seq, next)
					}
					next++
					got++
				})
				if got != s.want {
					t.Fatalf("step %d: %d flights expired, want %d", i, got, s.want)
				}
			}
		})
	}
}
