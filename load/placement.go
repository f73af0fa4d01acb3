package load

import (
	"fmt"
	"strconv"
	"strings"
)

// Placement says which partition an unkeyed message goes to.
//
// Batch 0 or 1 is round-robin: message i (counting across all producers)
// goes to partition i mod P. Batch N > 1 sends N consecutive messages of
// a producer to one partition, then moves on: producer k's j-th slot of
// the schedule is in its batch b = j / N, which goes to partition
// (b x Producers + k) mod P, so that the producers take the partitions in
// turn and every partition gets batches when the load is long enough.
// Batch 1 places every message exactly as round-robin does.
//
// The placement of a message depends only on its schedule slot, never on
// what was shed before it: a stall does not shift later messages to other
// partitions.
type Placement struct {
	Batch int `json:"batch,omitempty"`
}

// RoundRobin is the default placement.
const RoundRobin = "round-robin"

// ParsePlacement reads --placement: "round-robin" or "batch:N" with N >= 1.
func ParsePlacement(s string) (Placement, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == RoundRobin {
		return Placement{}, nil
	}
	if n, ok := strings.CutPrefix(s, "batch:"); ok {
		b, err := strconv.Atoi(n)
		if err != nil || b < 1 {
			return Placement{}, fmt.Errorf("--placement %s: want batch:N with N a whole number of at least 1", s)
		}
		return Placement{Batch: b}, nil
	}
	return Placement{}, fmt.Errorf("--placement %s: want %s or batch:N (N messages of a producer to one partition, then the next)", s, RoundRobin)
}

// String is the placement as --placement takes it.
func (pl Placement) String() string {
	if pl.Batch <= 1 {
		return RoundRobin
	}
	return "batch:" + strconv.Itoa(pl.Batch)
}

// partition is the index into Config.Partitions of schedule slot i, for
// a load of producers producers over nparts partitions.
func (pl Placement) partition(i, producers, nparts uint64) uint64 {
	if pl.Batch <= 1 {
		return i % nparts
	}
	k, j := i%producers, i/producers
	b := j / uint64(pl.Batch)
	return (b*producers + k) % nparts
}
