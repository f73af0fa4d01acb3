package netns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind is a kind of network fault.
type Kind string

const (
	// Cut drops every packet between Node and Peers, both ways (and
	// between Node and the client side too when Client is set): a
	// partition as seen from one side, which is enough, since a packet
	// dropped on one end never arrives at the other.
	Cut Kind = "cut"
	// OneWay drops what Node sends to Peers; what they send to it still
	// arrives.
	OneWay Kind = "one-way"
	// Loss drops Percent of the packets Node sends and receives (to and
	// from Peers, or all when Peers is empty), each on its own draw.
	Loss Kind = "loss"
	// Bandwidth limits what Node sends to RateBits a second (a tbf qdisc
	// on its link): its peers' sends to it are not limited.
	Bandwidth Kind = "bandwidth"
)

// Rule is one network fault as installed: what it is, and the name its
// nft chains (or its qdisc) carry, so that removing it touches nothing
// else. It is what a heal journal records before the rule is applied.
type Rule struct {
	// Name is unique among the rules in force in one Net ([a-z0-9_],
	// at most 24), e.g. "f3" for a run's fault 3.
	Name     string  `json:"name"`
	Kind     Kind    `json:"kind"`
	Node     int32   `json:"node"`
	Peers    []int32 `json:"peers,omitempty"`
	Client   bool    `json:"client,omitempty"`
	Percent  int     `json:"percent,omitempty"`
	RateBits uint64  `json:"rate_bits,omitempty"`
}

// String is the rule as a person reads it.
func (r Rule) String() string {
	peers := "every peer"
	if len(r.Peers) > 0 {
		peers = fmt.Sprintf("nodes %v", r.Peers)
	}
	switch r.Kind {
	case Cut:
		s := fmt.Sprintf("node %d cut off from %s", r.Node, peers)
		if r.Client {
			s += " and from the clients"
		}
		return s
	case OneWay:
		return fmt.Sprintf("node %d's packets to %s dropped", r.Node, peers)
	case Loss:
		return fmt.Sprintf("%d%% of node %d's packets to and from %s dropped", r.Percent, r.Node, peers)
	case Bandwidth:
		return fmt.Sprintf("node %d's sends limited to %s", r.Node, bitsText(r.RateBits))
	}
	return fmt.Sprintf("%s on node %d", r.Kind, r.Node)
}

func bitsText(b uint64) string {
	switch {
	case b >= 1e9 && b%1e9 == 0:
		return fmt.Sprintf("%d Gbit/s", b/1e9)
	case b >= 1e6 && b%1e6 == 0:
		return fmt.Sprintf("%d Mbit/s", b/1e6)
	case b >= 1e3 && b%1e3 == 0:
		return fmt.Sprintf("%d kbit/s", b/1e3)
	}
	return fmt.Sprintf("%d bit/s", b)
}

// check refuses a rule that would not do what it says in n.
func (r Rule) check(n *Net) error {
	if r.Name == "" || len(r.Name) > 24 || strings.Trim(r.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("rule name %q: want 1-24 of a-z, 0-9 and _", r.Name)
	}
	if !slices.Contains(n.Nodes, r.Node) {
		return fmt.Errorf("node %d is not in network %s (nodes %v)", r.Node, n.Prefix, n.Nodes)
	}
	for _, p := range r.Peers {
		if p == r.Node || !slices.Contains(n.Nodes, p) {
			return fmt.Errorf("peer %d of node %d: not another node of network %s (nodes %v)", p, r.Node, n.Prefix, n.Nodes)
		}
	}
	switch r.Kind {
	case Cut, OneWay:
	case Loss:
		if r.Percent < 1 || r.Percent > 100 {
			return fmt.Errorf("loss of %d%%: give 1 to 100", r.Percent)
		}
	case Bandwidth:
		if r.RateBits < 8000 {
			return fmt.Errorf("bandwidth of %d bit/s: give at least 8 kbit/s", r.RateBits)
		}
		if len(r.Peers) > 0 || r.Client {
			return fmt.Errorf("a bandwidth limit applies to all of node %d's sends: it takes no peers", r.Node)
		}
	default:
		return fmt.Errorf("unknown network fault %q", r.Kind)
	}
	return nil
}

// peerAddrs are the addresses the rule matches: its peers (every other
// node when none is named), and the hub when Client.
func (r Rule) peerAddrs(n *Net) []string {
	peers := r.Peers
	if len(peers) == 0 {
		for _, id := range n.Nodes {
			if id != r.Node {
				peers = append(peers, id)
			}
		}
	}
	var addrs []string
	for _, p := range peers {
		addrs = append(addrs, n.NodeAddr(p).String())
	}
	if r.Client {
		addrs = append(addrs, n.HubAddr().String())
	}
	return addrs
}

// table is the nft table every rule of ackcheck's lives in, in each node
// namespace.
const table = "inet ackcheck"

// Apply installs the rule in its node's namespace. It is all or nothing:
// nft applies a script as one transaction, and a failed qdisc adds
// nothing.
func (n *Net) Apply(ctx context.Context, r Rule) error {
	if err := r.check(n); err != nil {
		return err
	}
	if r.Kind == Bandwidth {
		// burst: 10 ms at the rate, at least a 1500-byte packet and the
		// 32 KiB tbf wants for timer resolution; latency bounds the queue.
		burst := max(r.RateBits/8/100, 32<<10)
		_, err := n.exec(ctx, r.Node, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf",
			"rate", fmt.Sprintf("%dbit", r.RateBits), "burst", fmt.Sprint(burst), "latency", "400ms")
		if err != nil {
			return fmt.Errorf("limit node %d's bandwidth: %w", r.Node, err)
		}
		return nil
	}
	set := "{ " + strings.Join(r.peerAddrs(n), ", ") + " }"
	drop := "drop"
	if r.Kind == Loss && r.Percent < 100 {
		// numgen draws 0..99; nft refuses "< 100", and 100% is a drop.
		drop = fmt.Sprintf("numgen random mod 100 < %d drop", r.Percent)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "add table %s\n", table)
	fmt.Fprintf(&b, "add chain %s %s_out { type filter hook output priority 0; policy accept; }\n", table, r.Name)
	fmt.Fprintf(&b, "add rule %s %s_out ip daddr %s %s\n", table, r.Name, set, drop)
	if r.Kind != OneWay {
		fmt.Fprintf(&b, "add chain %s %s_in { type filter hook input priority 0; policy accept; }\n", table, r.Name)
		fmt.Fprintf(&b, "add rule %s %s_in ip saddr %s %s\n", table, r.Name, set, drop)
	}
	if _, err := n.nft(ctx, r.Node, b.String()); err != nil {
		return fmt.Errorf("install %s: %w", r, err)
	}
	return nil
}

// Remove takes the rule out again. A rule that is not there (removed
// before, or its namespace deleted) is no error: a heal may run twice.
func (n *Net) Remove(ctx context.Context, r Rule) error {
	if r.Kind == Bandwidth {
		_, err := n.exec(ctx, r.Node, "tc", "qdisc", "del", "dev", "eth0", "root")
		if err != nil && !gone(err) && !strings.Contains(err.Error(), "handle of zero") {
			return fmt.Errorf("remove node %d's bandwidth limit: %w", r.Node, err)
		}
		return nil
	}
	for _, c := range []string{r.Name + "_out", r.Name + "_in"} {
		_, err := n.nft(ctx, r.Node, fmt.Sprintf("flush chain %s %s\ndelete chain %s %s\n", table, c, table, c))
		if err != nil && !gone(err) {
			return fmt.Errorf("remove %s: %w", r, err)
		}
	}
	return n.dropTableIfEmpty(ctx, r.Node)
}

// dropTableIfEmpty deletes ackcheck's table on node id once the last of
// its chains is gone, so that a healed node's ruleset is what it was
// before the first fault: no empty "table inet ackcheck" left behind.
// A table that still holds a chain (another fault still in force) stays.
func (n *Net) dropTableIfEmpty(ctx context.Context, id int32) error {
	out, err := n.exec(ctx, id, "nft", "list", "table", table)
	if err != nil {
		if gone(err) {
			return nil
		}
		return fmt.Errorf("list node %d's %s table: %w", id, table, err)
	}
	if hasChains(string(out)) {
		return nil
	}
	if _, err := n.nft(ctx, id, "delete table "+table+"\n"); err != nil && !gone(err) {
		return fmt.Errorf("delete node %d's empty %s table: %w", id, table, err)
	}
	return nil
}

// hasChains reports whether `nft list table` output shows a chain.
func hasChains(listing string) bool {
	for _, line := range strings.Split(listing, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "chain ") {
			return true
		}
	}
	return false
}

// HealAll removes every rule and qdisc ackcheck installed in the Net,
// whatever installed it: the heal after a crash, and `cluster down`.
func (n *Net) HealAll(ctx context.Context) error {
	var errs []string
	for _, id := range n.Nodes {
		if _, err := n.nft(ctx, id, "delete table "+table+"\n"); err != nil && !gone(err) {
			errs = append(errs, err.Error())
		}
		if _, err := n.exec(ctx, id, "tc", "qdisc", "del", "dev", "eth0", "root"); err != nil && !gone(err) && !strings.Contains(err.Error(), "handle of zero") {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal network %s: %s", n.Prefix, strings.Join(errs, "; "))
	}
	return nil
}

// gone reports an error that says the thing to remove does not exist.
func gone(err error) bool {
	if errors.Is(err, ErrToolMissing) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "No such file or directory") || strings.Contains(s, "does not exist") ||
		strings.Contains(s, "Cannot find device") || strings.Contains(s, "Invalid argument") && strings.Contains(s, "qdisc")
}

// exec runs a tool inside node id's namespace.
func (n *Net) exec(ctx context.Context, id int32, name string, args ...string) ([]byte, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", n.NodeNS(id), name}, args...)...)
}

// nft runs an nft script inside node id's namespace, as one transaction.
func (n *Net) nft(ctx context.Context, id int32, script string) ([]byte, error) {
	cmd := []string{"netns", "exec", n.NodeNS(id), "nft", "-f", "-"}
	return runInput(ctx, script, "ip", cmd...)
}
