package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The schedule words of the network faults: their targets (split, one-way,
// pair, follower) and their amounts (30%, 1mbit, 100ms), which the action
// table (actions.go) names for each action. Past these parsers every
// value is typed.

// parseNetTarget reads the argument of split:1|2,3, one-way:1->2 and
// pair:1-2; whole is the target as written, for errors.
func parseNetTarget(kind TargetKind, arg, whole string) (Target, error) {
	switch kind {
	case Split:
		a, b, ok := strings.Cut(arg, "|")
		sa, errA := parseIDs(a)
		sb, errB := parseIDs(b)
		if !ok || errA != nil || errB != nil {
			return Target{}, fmt.Errorf("target %q: write split:<ids>|<ids>, e.g. split:1|2,3", whole)
		}
		var sides [2]NodeSet
		for i, ids := range [][]int32{sa, sb} {
			for _, id := range ids {
				if id < 0 || id > 255 {
					return Target{}, fmt.Errorf("target %q: node %d: a split names nodes 0 to 255", whole, id)
				}
				if sides[0].Has(id) {
					return Target{}, fmt.Errorf("target %q: node %d is on both sides", whole, id)
				}
				sides[i].add(id)
			}
		}
		return Target{Kind: Split, Sides: sides}, nil
	case OneWayPath, Pair:
		sep, example := "->", "one-way:1->2"
		if kind == Pair {
			sep, example = "-", "pair:1-2"
		}
		a, b, ok := strings.Cut(arg, sep)
		ia, errA := strconv.ParseInt(a, 10, 32)
		ib, errB := strconv.ParseInt(b, 10, 32)
		if !ok || errA != nil || errB != nil || ia == ib {
			return Target{}, fmt.Errorf("target %q: write %s:<id>%s<id> with two different nodes, e.g. %s", whole, kind, sep, example)
		}
		return Target{Kind: kind, Node: int32(ia), Peer: int32(ib)}, nil
	}
	return Target{}, fmt.Errorf("target %q: not a network target", whole)
}

// NodeSet is a set of node IDs 0 to 255, comparable (Target is compared
// with ==).
type NodeSet [4]uint64

func (s *NodeSet) add(id int32) { s[id/64] |= 1 << (id % 64) }

// Has reports whether id is in the set.
func (s NodeSet) Has(id int32) bool { return id >= 0 && id < 256 && s[id/64]&(1<<(id%64)) != 0 }

// IDs are the set's node IDs in ascending order.
func (s NodeSet) IDs() []int32 {
	var ids []int32
	for id := int32(0); id < 256; id++ {
		if s.Has(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// parseIDs reads "1,2,3": distinct node IDs, at least one, sorted.
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("node ID %q", f)
		}
		if slices.Contains(ids, int32(n)) {
			return nil, fmt.Errorf("node %d twice", n)
		}
		ids = append(ids, int32(n))
	}
	slices.Sort(ids)
	return ids, nil
}

func idsText(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// follower picks a replica of t.Partition that is not its leader: an
// in-sync one first (a cut that shrinks the in-sync set is the point of
// cutting a follower), the lowest ID among equals, so that a run can be
// repeated.
func (t Target) follower(topo drivers.Topology) (int32, error) {
	for _, p := range topo.Partitions {
		if p.Partition != t.Partition {
			continue
		}
		best, inSync := int32(-1), false
		for _, r := range p.Replicas {
			if r == p.Leader {
				continue
			}
			isr := slices.Contains(p.ISR, r)
			if best < 0 || (isr && !inSync) || (isr == inSync && r < best) {
				best, inSync = r, isr
			}
		}
		if best < 0 {
			return -1, fmt.Errorf("%s: partition has no replica besides its leader %d (replicas %v): %w", t, p.Leader, p.Replicas, ErrNoTarget)
		}
		return best, nil
	}
	return -1, fmt.Errorf("%s: no such partition: %w", t, ErrNoTarget)
}

// parsePercent reads the amount of a loss: 30%.
func parsePercent(s string) (Amount, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if !strings.HasSuffix(s, "%") || err != nil || n < 1 || n > 100 {
		return Amount{}, fmt.Errorf("loss %q: give a percentage from 1%% to 100%%, e.g. 30%%", s)
	}
	return Amount{Percent: n}, nil
}

// parseRate reads the amount of a bandwidth limit: 1mbit, 500kbit, 2gbit,
// or bits a second.
func parseRate(s string) (Amount, error) {
	low := strings.ToLower(s)
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(low, u.suffix) {
			low, mult = strings.TrimSuffix(low, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(low, 10, 64)
	if err != nil || n == 0 || n*mult < 8000 {
		return Amount{}, fmt.Errorf("bandwidth %q: give a rate of at least 8kbit, e.g. 1mbit, 500kbit", s)
	}
	return Amount{RateBits: n * mult}, nil
}

// parseDelay reads the amount of a delay: 100ms.
func parseDelay(s string) (Amount, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Amount{}, fmt.Errorf("delay %q: give a duration, e.g. 100ms", s)
	}
	return Amount{Delay: d}, nil
}

// rateText is a rate as a schedule writes it: 1mbit, 500kbit.
func rateText(b uint64) string {
	switch {
	case b%1e9 == 0:
		return fmt.Sprintf("%dgbit", b/1e9)
	case b%1e6 == 0:
		return fmt.Sprintf("%dmbit", b/1e6)
	case b%1e3 == 0:
		return fmt.Sprintf("%dkbit", b/1e3)
	}
	return fmt.Sprintf("%dbit", b)
}
