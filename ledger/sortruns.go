package ledger

// sortBySeq sorts evs by Seq, stably, and returns them sorted together
// with a buffer the caller may reuse: the sorted events are either in evs
// or in scratch (grown as needed), and spare is the other of the two.
//
// It is a natural merge sort. A flush's outcomes of one producer are a few
// ascending runs interleaved in their range, one per batch the broker
// acked (each partition's batch acked in send order), and the sends are
// one run: finding the runs and merging neighbours pass by pass takes
// log2(runs) sequential passes. slices.SortStableFunc (insertion sort of
// blocks, then in-place merges by rotation) was half of Flush's CPU in a
// bench --peer profile.
func sortBySeq(evs, scratch []Event, bounds []int) (sorted, spare []Event, boundsOut []int) {
	bounds = append(bounds[:0], 0)
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq < evs[i-1].Seq {
			bounds = append(bounds, i)
		}
	}
	if len(bounds) == 1 {
		return evs, scratch, bounds
	}
	bounds = append(bounds, len(evs))
	if cap(scratch) < len(evs) {
		scratch = make([]Event, len(evs))
	}
	src, dst := evs, scratch[:len(evs)]
	for len(bounds) > 2 {
		// Merge runs 0+1, 2+3, ...; an odd last run is copied as it is.
		// bounds is rewritten in place: entry j/2 is never read again
		// once written, since j/2 <= j.
		n := 0
		for j := 0; j+1 < len(bounds); j += 2 {
			lo, mid := bounds[j], bounds[j+1]
			hi := mid
			if j+2 < len(bounds) {
				hi = bounds[j+2]
			}
			mergeRuns(dst[lo:hi], src[lo:mid], src[mid:hi])
			bounds[n] = lo
			n++
		}
		bounds[n] = len(evs)
		bounds = bounds[:n+1]
		src, dst = dst, src
	}
	return src, dst, bounds
}

// mergeRuns merges the sorted a and b into out (len(a)+len(b)), taking
// from a on equal Seq, so that the merge is stable.
func mergeRuns(out, a, b []Event) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].Seq < a[i].Seq {
			out[k] = b[j]
			j++
		} else {
			out[k] = a[i]
			i++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}
