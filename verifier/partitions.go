package verifier

import (
	"fmt"
	"io"
	"slices"
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
