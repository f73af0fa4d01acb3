package runner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// partitionsOf lists the partitions of kind k's events in a shard's
// ledger.
func partitionsOf(t *testing.T, dir string, k ledger.Kind) []int32 {
	t.Helper()
	l, err := ledger.OpenReadOnly(runner.LedgerDir(dir), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Scan(k)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[int32]bool{}
	for run, ok := c.NextRun(); ok; run, ok = c.NextRun() {
		for _, e := range run {
			seen[e.Partition] = true
		}
	}
	var ps []int32
	for p := range seen {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// Issue 27, CPU per message: an unkeyed load's shards write disjoint
// partitions (shard I the partitions at places I, I+N, ...), and each
// shard's live consumer reads only those, so no shard reads the others'
// messages; a keyed load keeps every partition in every shard. Either
// way the merged verdict reads every partition back and passes.
func TestShardsSplitPartitions(t *testing.T) {
	c, d := fakeKafka(t)
	for _, keys := range []int{0, 50} {
		t.Run(fmt.Sprintf("keys=%d", keys), func(t *testing.T) {
			dirs := runShards(t, c.ListenAddrs(), fmt.Sprintf("split-%d", keys), 2, func(cfg *runner.Config) { cfg.Load.Keys = keys })
			all := []int32{0, 1, 2, 3}
			for i, dir := range dirs {
				want := all
				if keys == 0 {
					want = []int32{int32(i), int32(i + 2)}
				}
				for _, k := range []ledger.Kind{ledger.Outcome, ledger.LiveRead} {
					if got := partitionsOf(t, dir, k); !slices.Equal(got, want) {
						t.Fatalf("shard %d, kind %c: partitions %v, want %v", i, k, got, want)
					}
				}
			}
			res := verifyShards(t, d, dirs)
			if res.Verdict != verifier.Pass || res.Lost != 0 || len(res.PartitionGaps) != len(all) {
				t.Fatalf("verdict %s %v, lost %d, partitions %d: want PASS over all %d partitions", res.Verdict, res.Reasons, res.Lost, len(res.PartitionGaps), len(all))
			}
		})
	}
}
