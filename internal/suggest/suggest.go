// Package suggest finds the word a user most likely meant, for "did you
// mean" in the errors of the scenario, matrix and workload files.
package suggest

import "slices"

// Distance is the edit distance (insertions, deletions, substitutions)
// between a and b, by bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Nearest is the candidate closest to word, if one is at most within
// edits away; of equally close ones, the first in sorted order. "" when
// none is that close.
func Nearest(word string, candidates []string, within int) string {
	best, bestD := "", within+1
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
