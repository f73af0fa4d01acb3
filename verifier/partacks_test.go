package verifier

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestPartitionLinesMemoizedMatchFresh: partitions.jsonl's lines, made
// once per one-word shape and shared, are the lines made afresh for each
// partition (encoding/json of its PartitionLine, its gaps from its own
// buckets), and PartitionGaps lists the same gaps; with shapes shared by
// many partitions, shapes of one partition, partitions of many words, and
// partitions without acks.
func TestPartitionLinesMemoizedMatchFresh(t *testing.T) {
	for _, n := range []int{900, 5000} { // every partition listed, then the longest
		start := time.Unix(1_700_000_000, 0).UnixNano()
		loadLen := 20 * time.Second
		tl := &timelines{start: start, end: start + int64(loadLen), partAcks: newByPartition[partAcks](n)}
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		buckets := int64(loadLen / gapResolution)
		parts := make([]int32, n)
		for i := range parts {
			p := int32(i)
			parts[i] = p
			var at []int64
			switch i % 4 {
			case 0: // one of 10 shared shapes
				at = []int64{int64(i/4%10) * 150}
			case 1: // its own ack time
				at = []int64{rng.Int64N(buckets)}
			case 2: // acks over the whole load
				for range 20 {
					at = append(at, rng.Int64N(buckets))
				}
			} // 3: no ack
			for _, k := range at {
				pa := tl.partAcks.at(p)
				pa.acked++
				tl.markPart(pa, start+k*int64(gapResolution))
			}
		}
		dir := t.TempDir()
		res := &Result{}
		l := int64(loadLen / gapResolution)
		if err := tl.partitionFigures(res, parts, l, dir); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, PartitionsFile))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(raw), "\n")
		var one [1]uint64
		for i, p := range parts {
			bm, base := tl.partAckBuckets(p, &one)
			pl := PartitionLine{Partition: p, Acked: tl.partAcks.get(p).acked, Gaps: []Gap{}}
			for _, g := range gapsFrom(nil, bm, base, l, int64(gapMin/gapResolution)) {
				pl.Gaps = append(pl.Gaps, Gap{FromS: bucketSeconds(g[0]), ToS: bucketSeconds(g[1])})
			}
			j, _ := json.Marshal(pl)
			if want := string(j) + "\n"; lines[i] != want {
				t.Fatalf("%d partitions, partition %d: line %s, made afresh %s", n, p, lines[i], want)
			}
			if got, listed := res.PartitionGaps[p]; listed && !slices.Equal(got, pl.Gaps) {
				t.Fatalf("%d partitions, partition %d: listed gaps %v, made afresh %v", n, p, got, pl.Gaps)
			} else if !listed && n <= maxGapPartitions {
				t.Fatalf("%d partitions: partition %d not listed", n, p)
			}
		}
	}
}
