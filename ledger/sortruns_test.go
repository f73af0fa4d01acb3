package ledger

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortBySeq gives what a stable sort gives, for inputs of every shape the
// ledger meets and some it should not: sorted, one run per partition batch
// interleaved, duplicates (two reads of one message), descending, random,
// empty; and it reuses the buffers it is given.
func TestSortBySeqIsAStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	batches := func(parts, per int) []Event {
		var evs []Event
		for p := range parts {
			for j := range per {
				evs = append(evs, Event{Seq: uint64(j*parts + p), Offset: int64(j)})
			}
		}
		return evs
	}
	cases := map[string][]Event{
		"empty":                          nil,
		"one":                            {{Seq: 9}},
		"sorted":                         batches(1, 1000),
		"sixteen partition batches":      batches(16, 300),
		"three partition batches, odd":   batches(3, 7),
		"descending":                     {{Seq: 5}, {Seq: 4}, {Seq: 3}, {Seq: 2}, {Seq: 1}},
		"duplicates, told apart by Time": {{Seq: 2, Time: 1}, {Seq: 1, Time: 1}, {Seq: 2, Time: 2}, {Seq: 1, Time: 2}, {Seq: 2, Time: 3}},
	}
	random := make([]Event, 5000)
	for i := range random {
		random[i] = Event{Seq: rng.Uint64N(1000), Time: int64(i)}
	}
	cases["random with duplicates"] = random
	var scratch []Event
	var bounds []int
	for name, evs := range cases {
		want := slices.Clone(evs)
		slices.SortStableFunc(want, cmpSeq)
		var got []Event
		got, scratch, bounds = sortBySeq(slices.Clone(evs), scratch, bounds)
		if !slices.Equal(got, want) {
			t.Errorf("%s: sortBySeq differs from a stable sort", name)
		}
	}
}

func cmpSeq(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) }

// BenchmarkSortOutcomes: a flush's outcomes of one producer, 16 partition
// batches of 256 interleaved, sorted by sortBySeq and by the stable sort
// it replaced.
func BenchmarkSortOutcomes(b *testing.B) {
	var src []Event
	for p := range 16 {
		for j := range 256 {
			src = append(src, Event{Seq: uint64(j*16 + p)})
		}
	}
	b.Run("sortBySeq", func(b *testing.B) {
		w, scratch, bounds := make([]Event, len(src)), []Event(nil), []int(nil)
		for b.Loop() {
			copy(w, src)
			var sorted []Event
			sorted, scratch, bounds = sortBySeq(w, scratch, bounds)
			w = sorted
		}
	})
	b.Run("SortStableFunc", func(b *testing.B) {
		w := make([]Event, len(src))
		for b.Loop() {
			copy(w, src)
			slices.SortStableFunc(w, cmpSeq)
		}
	})
}
