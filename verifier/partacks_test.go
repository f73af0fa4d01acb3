package verifier

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMarkPartMatchesBitmap holds the pointer-free per-partition buckets
// (partAcks: one word in place, more in the arena, moved as they grow
// either way) against a plain bitmap of the whole load per partition:
// acks in random order, each partition with a different spread (one ack,
// a few in one word, acks over the whole load, acks going backwards),
// outside the load ignored by both.
func TestMarkPartMatchesBitmap(t *testing.T) {
	for seed := range uint64(20) {
		markPartAgainstBitmap(t, seed)
	}
}

func markPartAgainstBitmap(t *testing.T, seed uint64) {
	start := time.Unix(1_700_000_000, 0).UnixNano()
	loadLen := 30 * time.Second
	tl := &timelines{start: start, end: start + int64(loadLen), partAcks: newByPartition[partAcks](40)}
	buckets := int64(loadLen / gapResolution)
	ref := map[int32][]uint64{} // partition: a bit per bucket of the load
	rng := rand.New(rand.NewPCG(seed, 2))
	type ack struct {
		p  int32
		at int64
	}
	var acks []ack
	for p := int32(0); p < 45; p++ { // 40 dense, 5 in byPartition's map
		spread := []int64{1, 60, 600, buckets, buckets}[p%5]
		first := rng.Int64N(buckets)
		for range 1 + rng.IntN(200) {
			k := first + rng.Int64N(spread) - spread/2
			acks = append(acks, ack{p, start + k*int64(gapResolution) + rng.Int64N(int64(gapResolution))})
		}
	}
	acks = append(acks, ack{3, start - 1}, ack{3, start + int64(loadLen) + 1}) // outside the load
	rng.Shuffle(len(acks), func(i, j int) { acks[i], acks[j] = acks[j], acks[i] })
	for _, a := range acks {
		tl.markPart(tl.partAcks.at(a.p), a.at)
		if k := (a.at - start) / int64(gapResolution); k >= 0 && a.at <= start+int64(loadLen) { // as markPart: the bucket by truncation
			bm := ref[a.p]
			for int64(len(bm))*64 <= k {
				bm = append(bm, 0)
			}
			bm[k/64] |= 1 << (k % 64)
			ref[a.p] = bm
		}
	}
	var one [1]uint64
	for p := int32(0); p < 45; p++ {
		bm, base := tl.partAckBuckets(p, &one)
		want := ref[p]
		for k := int64(0); k <= buckets; k++ {
			got := k/64 >= base && k/64 < base+int64(len(bm)) && bm[k/64-base]&(1<<(k%64)) != 0
			exp := k/64 < int64(len(want)) && want[k/64]&(1<<(k%64)) != 0
			if got != exp {
				t.Fatalf("seed %d, partition %d bucket %d: marked %v, the plain bitmap %v", seed, p, k, got, exp)
			}
		}
		if len(bm) > 0 && (bm[0] == 0 || bm[len(bm)-1] == 0) {
			t.Errorf("seed %d, partition %d: %d words from %d hold more than its first ack to its last", seed, p, len(bm), base)
		}
	}
	// Room left behind by moves is bounded by the room in use.
	used := 0
	for p := int32(0); p < 45; p++ {
		if pa := tl.partAcks.get(p); pa.n > 1 {
			used += int(arenaCap(pa.n))
		}
	}
	if len(tl.arena) > 2*used {
		t.Errorf("seed %d: arena of %d words for %d in use", seed, len(tl.arena), used)
	}
}
