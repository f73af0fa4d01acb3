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

// sortBySeq allocates nothing when the scratch buffer it is given holds
// exactly the events (Flush hands the same buffers back every flush), and
// what it returns is the caller's two buffers, one sorted and one spare.
func TestSortBySeqReusesAScratchOfExactSize(t *testing.T) {
	src := make([]Event, 0, 64)
	for p := range 4 {
		for j := range 16 {
			src = append(src, Event{Seq: uint64(j*4 + p)})
		}
	}
	evs := make([]Event, len(src))
	scratch := make([]Event, len(src))
	bounds := make([]int, 0, 8)
	allocs := testing.AllocsPerRun(20, func() {
		copy(evs, src)
		sorted, spare, b := sortBySeq(evs, scratch, bounds)
		if !slices.IsSortedFunc(sorted, cmpSeq) {
			t.Fatal("not sorted")
		}
		same := func(a, b []Event) bool { return &a[:1][0] == &b[:1][0] }
		if !(same(sorted, evs) && same(spare, scratch) || same(sorted, scratch) && same(spare, evs)) {
			t.Fatal("sortBySeq returned buffers other than the two it was given")
		}
		bounds = b
	})
	if allocs != 0 {
		t.Fatalf("sortBySeq allocated %.0f times with a scratch of exactly len(evs)", allocs)
	}
}
