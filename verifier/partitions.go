package verifier

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// summaryNotes is the most partitions' read-back notes the summary
// prints; the rest are counted, and all are in result.json. With a
// million partitions a line each would bury the verdict.
const summaryNotes = 5

// writePartitions prints the partition counts: how many the run wrote to
// and how many got an acked message (issue 37: --partitions-touched).
func (r *Result) writePartitions(w io.Writer) {
	if r.Partitions == 0 {
		return // a result.json from before the count
	}
	fmt.Fprintf(w, "  partitions: %d, %d of them with at least one acked message\n", r.Partitions, r.PartitionsTouched)
}

// writeReadBackNotes prints the read-back notes of the first
// summaryNotes partitions in partition order, then how many more there
// are: the summary stays short whatever the partition count.
func (r *Result) writeReadBackNotes(w io.Writer) {
	ps := make([]int32, 0, len(r.ReadBackNotes))
	for p := range r.ReadBackNotes {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for i, p := range ps {
		if i == summaryNotes {
			fmt.Fprintf(w, "    ... and %d more partitions (result.json read_back_notes)\n", len(ps)-summaryNotes)
			break
		}
		fmt.Fprintf(w, "    partition %d: %s\n", p, r.ReadBackNotes[p])
	}
}

// writeDamaged prints the spans the broker served with a failing
// checksum of its own, the first summaryNotes of them in partition and
// offset order, then how many more there are.
func (r *Result) writeDamaged(w io.Writer) {
	if len(r.ReadBackDamaged) == 0 {
		return
	}
	ps := make([]int32, 0, len(r.ReadBackDamaged))
	for p := range r.ReadBackDamaged {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	fmt.Fprintln(w, "  served with a failing checksum (records read corrupt):")
	shown, total := 0, 0
	for _, p := range ps {
		for _, s := range r.ReadBackDamaged[p] {
			total++
			if shown == summaryNotes {
				continue
			}
			shown++
			fmt.Fprintf(w, "    partition %d: offsets %d-%d, %d records parsed; %s\n", p, s.First, s.Last, s.Records, s.Why)
		}
	}
	if total > shown {
		fmt.Fprintf(w, "    ... and %d more (result.json read_back_damaged)\n", total-shown)
	}
}

// PartitionsFile is where Check writes, in Options.ListDir, every
// partition's figures: a PartitionLine a line, in partition order.
const PartitionsFile = "partitions.jsonl"

// PartitionLine is one partition's figures in PartitionsFile.
type PartitionLine struct {
	Partition int32 `json:"partition"`
	Acked     int64 `json:"acked"`
	// Gaps are its stretches of at least gap_min_ms without acks during
	// the load, as Result.PartitionGaps.
	Gaps []Gap `json:"gaps"`
}

// maxGapPartitions is the most partitions result.json lists in
// partition_gaps whole; beyond it lists the listedGapPartitions with the
// longest stretch without acks, and PartitionsFile has every one.
const (
	maxGapPartitions    = 1000
	listedGapPartitions = 100
)

// partitionFigures fills res.PartitionGaps and, with dir set, writes
// PartitionsFile. Up to maxGapPartitions partitions every one is in
// PartitionGaps, gaps or not (as before issue 37); beyond, only the
// listedGapPartitions with the longest gap, so that result.json and the
// report's lanes stay readable at a million partitions. Memory beyond
// the partitions' own acks: the listed partitions' gaps.
func (t *timelines) partitionFigures(res *Result, parts []int32, loadLen int64, dir string) error {
	var w *bufio.Writer
	var f *os.File
	if dir != "" {
		var err error
		if f, err = os.Create(filepath.Join(dir, PartitionsFile+".tmp")); err != nil {
			return fmt.Errorf("write the partitions' figures: %w (is the run directory writable?)", err)
		}
		defer f.Close()                   // after the rename, a no-op error
		w = bufio.NewWriterSize(f, 1<<20) // a million partitions' lines are some 60 MB: 60 writes, not 900
	}
	whole := len(parts) <= maxGapPartitions
	res.PartitionGaps = map[int32][]Gap{}
	var worst gapHeap
	// One partition's buckets, gaps and line at a time, reused, or its
	// shape's, kept: at a million partitions a slice of each per
	// partition was a tenth of the run's CPU (issue 37's flat cost). A
	// partition kept in PartitionGaps gets a copy of its gaps.
	var spans [][2]int64
	var scratch shapeFigures // a partition's own figures, reused
	var text boundaryText
	var one [1]uint64
	var head [64]byte
	shapes := map[oneWord]*shapeFigures{}
	for _, p := range parts {
		bm, base := t.partAckBuckets(p, &one)
		// Partitions whose acks fit one word share their gaps and the
		// text of them with every partition of the same word: a million
		// partitions of an ack or two have few distinct ones.
		var sf *shapeFigures
		if len(bm) <= 1 {
			k := oneWord{base: base}
			if len(bm) == 1 {
				k.word = bm[0]
			}
			if sf = shapes[k]; sf == nil && len(shapes) < maxShapes {
				sf = text.shape(bm, base, loadLen)
				shapes[k] = sf
			}
		}
		if sf == nil {
			scratch.gaps, scratch.text = scratch.gaps[:0], scratch.text[:0]
			sf = text.figures(&scratch, &spans, bm, base, loadLen)
		}
		if w != nil {
			w.Write(appendHead(head[:0], p, t.partAcks.get(p).acked))
			w.Write(sf.text)
		}
		longest, gs := sf.longest, sf.gaps
		switch {
		case whole:
			res.PartitionGaps[p] = append([]Gap{}, gs...) // every partition is listed, gaps or not
		case len(gs) > 0 && (worst.Len() < listedGapPartitions || longest > worst[0].longest):
			heap.Push(&worst, gapEntry{p: p, longest: longest, gaps: slices.Clone(gs)})
			if worst.Len() > listedGapPartitions {
				heap.Pop(&worst)
			}
		}
	}
	for _, e := range worst {
		res.PartitionGaps[e.p] = e.gaps
	}
	if !whole {
		res.PartitionGapsListed = fmt.Sprintf("the %d partitions (of %d) with the longest stretch without acks; every partition's in %s", len(worst), len(parts), PartitionsFile)
	}
	if w == nil {
		return nil
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write the partitions' figures: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the partitions' figures: %w", err)
	}
	return os.Rename(f.Name(), filepath.Join(dir, PartitionsFile))
}

// bucketSeconds is gap boundary k (buckets of gapResolution from the
// load's start) in seconds, as Gap holds it.
func bucketSeconds(k int64) float64 { return (time.Duration(k) * gapResolution).Seconds() }

// boundaryText writes partitions.jsonl lines from gap boundaries in
// buckets, formatting each distinct boundary once: a million partitions'
// lines hold millions of boundaries but only as many distinct ones as the
// load has buckets. Its lines are encoding/json's of a PartitionLine,
// byte for byte, without reflection (a million lines took a second).
type boundaryText struct {
	memo [][]byte // boundary k's text, for k below maxMemoBoundary
}

// maxMemoBoundary bounds the memo: an hour's load is 360,000 buckets of
// 10 ms, a few MiB of text; beyond, boundaries are formatted each time.
const maxMemoBoundary = 1 << 20

func (bt *boundaryText) appendBoundary(b []byte, k int64) []byte {
	if k < 0 || k >= maxMemoBoundary {
		return appendSeconds(b, bucketSeconds(k))
	}
	if int(k) >= len(bt.memo) {
		bt.memo = append(bt.memo, make([][]byte, int(k)+1-len(bt.memo))...)
	}
	if bt.memo[k] == nil {
		bt.memo[k] = appendSeconds(nil, bucketSeconds(k))
	}
	return append(b, bt.memo[k]...)
}

// appendLine appends partition p's line: acked, and its gaps as [from,
// to) bucket pairs.
func (bt *boundaryText) appendLine(b []byte, p int32, acked int64, spans [][2]int64) []byte {
	return bt.appendGaps(appendHead(b, p, acked), spans)
}

// appendHead appends the start of partition p's line, up to its gaps.
func appendHead(b []byte, p int32, acked int64) []byte {
	b = append(b, `{"partition":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"acked":`...)
	b = strconv.AppendInt(b, acked, 10)
	return append(b, `,"gaps":`...)
}

// appendGaps appends the rest of a line: its gaps as [from, to) bucket
// pairs, and its end.
func (bt *boundaryText) appendGaps(b []byte, spans [][2]int64) []byte {
	b = append(b, '[')
	for i, g := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"from_s":`...)
		b = bt.appendBoundary(b, g[0])
		b = append(b, `,"to_s":`...)
		b = bt.appendBoundary(b, g[1])
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// oneWord is the shape of a partition whose 10 ms buckets with acks fit
// one word: the word and where it lies in the load (word 0 at base 0:
// no ack).
type oneWord struct {
	base int64
	word uint64
}

// maxShapes bounds the shapes partitionFigures keeps: the load's words
// times the acks' patterns in one are many only when partitions have
// many acks each, and then there are few partitions.
const maxShapes = 1 << 16

// shapeFigures are what partitionFigures writes and keeps of a
// partition, apart from its number and acks: its gaps, the longest, and
// the text of its line from its gaps on.
type shapeFigures struct {
	gaps    []Gap
	longest float64
	text    []byte
}

// shape makes the figures of one shape, to keep.
func (bt *boundaryText) shape(bm []uint64, base, loadLen int64) *shapeFigures {
	var spans [][2]int64
	return bt.figures(&shapeFigures{}, &spans, bm, base, loadLen)
}

// figures fills sf (its gaps and text reused) from the buckets bm whose
// first word is word base, spans a scratch.
func (bt *boundaryText) figures(sf *shapeFigures, spans *[][2]int64, bm []uint64, base, loadLen int64) *shapeFigures {
	*spans = gapsFrom((*spans)[:0], bm, base, loadLen, int64(gapMin/gapResolution))
	sf.longest = 0
	for _, g := range *spans {
		gap := Gap{FromS: bucketSeconds(g[0]), ToS: bucketSeconds(g[1])}
		sf.gaps = append(sf.gaps, gap)
		sf.longest = max(sf.longest, gap.ToS-gap.FromS)
	}
	sf.text = bt.appendGaps(sf.text, *spans)
	return sf
}

// appendSeconds appends v as encoding/json does: plain decimals from
// 1e-6 to 1e21 (every gap's seconds), else encoding/json's own.
func appendSeconds(b []byte, v float64) []byte {
	if a := math.Abs(v); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	j, _ := json.Marshal(v)
	return append(b, j...)
}

// gapEntry is a partition in gapHeap; gapHeap is a min-heap by longest
// gap, so that its root is the first to go when a longer one comes.
type gapEntry struct {
	p       int32
	longest float64
	gaps    []Gap
}

type gapHeap []gapEntry

func (h gapHeap) Len() int           { return len(h) }
func (h gapHeap) Less(i, j int) bool { return h[i].longest < h[j].longest }
func (h gapHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *gapHeap) Push(x any)        { *h = append(*h, x.(gapEntry)) }
func (h *gapHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
