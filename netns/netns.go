// Package netns builds the private networks that network faults on local
// clusters need, and the rules those faults install in them.
//
// A Net is a set of Linux network namespaces ackcheck creates for one
// local cluster: a hub namespace holding a bridge, and one namespace per
// node, each joined to the bridge by a veth pair. The nodes get addresses
// in the Net's Subnet (node N is .N), the hub .254: the client side (ackcheck's load,
// read-back and admin calls) dials from the hub (Dial), as a machine on
// the nodes' network would.
//
// Invariants:
//   - Nothing outside the Net's own namespaces is changed but one route:
//     the machine's own network namespace gets no link, address or rule,
//     and only the guard route `prohibit <subnet>` (guard.go), which
//     makes a packet for the subnet sent from the machine's own namespace
//     fail there at once instead of following the default route off the
//     machine. It is added before the first namespace of any Net in the
//     subnet and removed with the last. A veth pair is created inside the
//     hub with its peer moved straight into the node's namespace, so
//     neither end ever exists outside them.
//   - A Net is made only in a subnet nothing on the machine routes or
//     holds (SubnetFree): the guard route would otherwise hide real hosts.
//   - Every namespace of a Net is named Prefix+"-hub" or Prefix+"-n<N>",
//     so that Open finds a Net again after a crash, and Delete removes all
//     of it (deleting a namespace removes its links, rules and qdiscs).
//   - Rules (rules.go) live in the node namespaces only, each fault in
//     its own nft chains or qdisc, so that one fault is removed without
//     touching another.
//
// It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2's ip and tc,
// and nft for the filtering rules. Preflight says which of these is
// missing, and which kinds of fault cannot run without it.
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultSubnet is the address range inside a Net unless another is
// chosen (`cluster <broker> up --netns-subnet`). Nets are isolated from one
// another and from the machine, so they can all use the same one.
var DefaultSubnet = netip.MustParsePrefix("10.213.0.0/24")

// hubHost is the hub's host number in the subnet.
const hubHost = 254

// Net is one cluster's namespaces. Its zero value is not usable: make it
// with Create or Open.
type Net struct {
	// Prefix names its namespaces (validPrefix).
	Prefix string
	// Nodes are the node IDs, each 1..253, in ascending order.
	Nodes []int32
	// Subnet is the Net's address range (ParseSubnet's rules); the zero
	// value is DefaultSubnet.
	Subnet netip.Prefix
}

// subnet is n.Subnet, or DefaultSubnet when unset.
func (n *Net) subnet() netip.Prefix {
	if n.Subnet.IsValid() {
		return n.Subnet
	}
	return DefaultSubnet
}

// validPrefix keeps a namespace name short and plain: Linux allows 255
// bytes, but the prefix also names the bridge's ports in error messages
// and nft's tables, and it must never hold a path separator.
var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Hub is the name of the hub namespace.
func (n *Net) Hub() string { return n.Prefix + "-hub" }

// NodeNS is the name of node id's namespace.
func (n *Net) NodeNS(id int32) string { return fmt.Sprintf("%s-n%d", n.Prefix, id) }

// NodeAddr is node id's address inside the Net.
func (n *Net) NodeAddr(id int32) netip.Addr { return hostAddr(n.subnet(), int(id)) }

// HubAddr is the client side's address: where the load and admin calls
// come from, as far as the nodes can tell.
func (n *Net) HubAddr() netip.Addr { return hostAddr(n.subnet(), hubHost) }

// hostAddr is host's address in subnet: its last byte (ParseSubnet keeps
// the last byte of every subnet free for hosts).
func hostAddr(subnet netip.Prefix, host int) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = byte(host)
	return netip.AddrFrom4(a)
}

// Create is CreateIn with DefaultSubnet.
func Create(ctx context.Context, prefix string, nodes []int32) (*Net, error) {
	return CreateIn(ctx, DefaultSubnet, prefix, nodes)
}

// CreateIn makes the Net's namespaces, bridge and links, with addresses in
// subnet. A Net of that prefix that already exists (Open finds it) is
// refused: a crashed run's namespaces are removed by Delete first, never
// reused half-made. A subnet the machine already routes or holds is
// refused before anything is made (SubnetFree, ErrSubnetInUse); else the
// guard route is in place before the first namespace. On any failure,
// what CreateIn made so far is deleted again (the guard route with it,
// when no other Net is in the subnet).
func CreateIn(ctx context.Context, subnet netip.Prefix, prefix string, nodes []int32) (n *Net, err error) {
	if err := checkSubnet(subnet); err != nil {
		return nil, err
	}
	if !validPrefix.MatchString(prefix) {
		return nil, fmt.Errorf("network namespace prefix %q: want lower-case letters, digits and '-', starting with a letter, at most 32", prefix)
	}
	if len(nodes) == 0 {
		return nil, errors.New("a network for no nodes")
	}
	nodes = slices.Clone(nodes)
	slices.Sort(nodes)
	for i, id := range nodes {
		if id < 1 || id >= hubHost {
			return nil, fmt.Errorf("node %d: node IDs inside a network namespace go from 1 to %d", id, hubHost-1)
		}
		if i > 0 && nodes[i-1] == id {
			return nil, fmt.Errorf("node %d given twice", id)
		}
	}
	n = &Net{Prefix: prefix, Nodes: nodes, Subnet: subnet}
	unlock, err := lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if existing, err := namespaces(ctx); err != nil {
		return nil, err
	} else if slices.Contains(existing, n.Hub()) {
		return nil, fmt.Errorf("network namespace %s already exists (a run that did not clean up?): remove it with `ip netns delete %s` and its nodes' %s-n*, or `ackcheck heal`", n.Hub(), n.Hub(), prefix)
	}
	if err := SubnetFree(ctx, subnet); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.deleteLocked(context.WithoutCancel(ctx))
		}
	}()
	if err := guard(ctx, subnet); err != nil {
		return nil, err
	}
	hub := n.Hub()
	steps := [][]string{
		{"netns", "add", hub},
		{"-n", hub, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", "br0", "type", "bridge"},
		{"-n", hub, "addr", "add", prefixed(n.HubAddr(), subnet), "dev", "br0"},
		{"-n", hub, "link", "set", "br0", "up"},
	}
	for _, id := range nodes {
		ns, port := n.NodeNS(id), fmt.Sprintf("v%d", id)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			// Made inside the hub, its peer moved into the node at once:
			// no end of it ever exists in the machine's own namespace.
			[]string{"-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", hub, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", prefixed(n.NodeAddr(id), subnet), "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, args := range steps {
		if _, err := run(ctx, "ip", args...); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func prefixed(a netip.Addr, subnet netip.Prefix) string {
	return netip.PrefixFrom(a, subnet.Bits()).String()
}

// Open finds the Net of prefix that Create made, from the namespaces that
// exist, and its subnet from the hub's address; ok is false when its hub
// does not exist.
func Open(ctx context.Context, prefix string) (n *Net, ok bool, err error) {
	all, err := namespaces(ctx)
	if err != nil {
		return nil, false, err
	}
	n = &Net{Prefix: prefix}
	if !slices.Contains(all, n.Hub()) {
		return nil, false, nil
	}
	for _, name := range all {
		rest, found := strings.CutPrefix(name, prefix+"-n")
		if !found {
			continue
		}
		if id, err := strconv.Atoi(rest); err == nil && id >= 1 && id < hubHost {
			n.Nodes = append(n.Nodes, int32(id))
		}
	}
	slices.Sort(n.Nodes)
	if n.Subnet, err = hubSubnet(ctx, n.Hub()); err != nil {
		return nil, false, err
	}
	return n, true, nil
}

// Delete removes every namespace of the Net, and with them their links,
// rules and qdiscs, then the guard route of its subnet when no other Net
// is in it. Namespaces already gone are no error; it tries all of them
// and returns what failed.
func (n *Net) Delete(ctx context.Context) error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	return n.deleteLocked(ctx)
}

// deleteLocked is Delete under the lock.
func (n *Net) deleteLocked(ctx context.Context) error {
	all, err := namespaces(ctx)
	if err != nil {
		return err
	}
	subnet := n.subnet()
	if slices.Contains(all, n.Hub()) {
		// The hub's own address says the subnet, whatever n was made from.
		if sn, err := hubSubnet(ctx, n.Hub()); err == nil {
			subnet = sn
		}
	}
	var errs []error
	for _, name := range all {
		if name == n.Hub() || strings.HasPrefix(name, n.Prefix+"-n") {
			if _, err := run(ctx, "ip", "netns", "delete", name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if _, err := unguard(ctx, subnet); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Command is name run with args inside node id's namespace (ip netns
// exec): how a node's server is started in it.
func (n *Net) Command(ctx context.Context, id int32, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.NodeNS(id), name}, args...)...)
}

// namespaces lists the named network namespaces (ip netns list).
func namespaces(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		// "name (id: 3)" or "name"
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// ErrToolMissing is returned (wrapped) when ip, nft or tc is not
// installed; never taken for "already removed".
var ErrToolMissing = errors.New("not installed")

// run runs a command and returns its output; a failure names the command
// and what it printed.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return runInput(ctx, "", name, args...)
}

// runInput is run with stdin.
func runInput(ctx context.Context, stdin, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	msg := strings.TrimSpace(stderr.String())
	if errors.Is(err, exec.ErrNotFound) {
		return nil, fmt.Errorf("%s is %w (network faults on local clusters need iproute2 and nftables)", name, ErrToolMissing)
	}
	// ip netns exec reports a missing program as `exec of "nft" failed`.
	if m := execFailed.FindStringSubmatch(msg); m != nil {
		return nil, fmt.Errorf("%s is %w in the network namespace (network faults on local clusters need iproute2 and nftables)", m[1], ErrToolMissing)
	}
	if os.Geteuid() != 0 && strings.Contains(msg, "ermission") {
		msg += " (network namespaces need root)"
	}
	return out, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, msg)
}

var execFailed = regexp.MustCompile(`exec of "([^"]+)" failed: No such file or directory`)
