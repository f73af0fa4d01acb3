package verifier

import "github.com/ackcheck/ackcheck/ledger"

// byPartition holds a T per partition: in a slice indexed by partition
// for the partitions below its length, in a map for any other. A run's
// partitions are a topic's 0 to N-1 (or a shard's share of them), so the
// slice holds them all and the map stays empty: a million partitions are
// a million slice elements, not a million map entries (issue 37: map
// lookups by partition were most of the verifier's cost at a million
// partitions). The zero value holds nothing; elements start as T's zero
// value.
type byPartition[T any] struct {
	dense  []T
	sparse map[int32]*T
}

// newByPartition sizes the slice for partitions 0 to n-1.
func newByPartition[T any](n int) byPartition[T] {
	return byPartition[T]{dense: make([]T, n)}
}

// at returns partition p's element, made (zero) when it is the first use.
func (b *byPartition[T]) at(p int32) *T {
	if p >= 0 && int(p) < len(b.dense) {
		return &b.dense[p]
	}
	if b.sparse == nil {
		b.sparse = map[int32]*T{}
	}
	v := b.sparse[p]
	if v == nil {
		v = new(T)
		b.sparse[p] = v
	}
	return v
}

// get returns partition p's element, or T's zero value when it has none.
func (b *byPartition[T]) get(p int32) T {
	if p >= 0 && int(p) < len(b.dense) {
		return b.dense[p]
	}
	if v := b.sparse[p]; v != nil {
		return *v
	}
	var zero T
	return zero
}

// reset sets every element back to T's zero value.
func (b *byPartition[T]) reset() {
	clear(b.dense)
	clear(b.sparse)
}

// denseCount is how many partitions a byPartition of run's holds in its
// slice: as many as the run's start offsets have room for (a topic's 0
// to N-1, or a shard's share of them).
func denseCount(run ledger.RunInfo) int {
	return run.StartOffsets.Slots()
}
