package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// The guard route.
//
// A Net's addresses exist only inside its namespaces. From the machine's
// own namespace, without a route of its own, a packet for them follows the
// default route off the machine, where the subnet may be someone else's
// network (a connect to 10.213.0.x from there was answered by a host off
// the machine). So while any Net of a subnet exists, the machine's own
// namespace holds `prohibit <subnet> proto 213`: a connect or a packet for
// it fails there at once (EACCES, "Permission denied"), and nothing of it
// leaves. Protocol 213 marks the route as ackcheck's, so that it is never
// taken for, nor confused with, a route of the machine's owner.
//
// Invariants: the route exists before the first namespace of a Net in the
// subnet and goes only with the last (Delete, ReleaseUnused); a subnet that
// the machine routes or holds otherwise is refused (SubnetFree), since the
// guard would then hide real hosts. Create and Delete hold a lock file
// while they check and change it, so that one process's Delete cannot
// remove the guard of a Net another process is making.

// guardProto is the route protocol number that marks ackcheck's guard.
const guardProto = "213"

// ErrSubnetInUse is returned (wrapped) when the machine already routes or
// holds addresses of a subnet a Net would use.
var ErrSubnetInUse = errors.New("already routed or assigned on this machine")

// ParseSubnet reads a subnet for Nets (`--netns-subnet`): an IPv4 prefix
// of /8 to /24, written as its first address (10.214.0.0/24), neither
// loopback, link-local, multicast nor 0.0.0.0/8. Node N gets the address
// whose last byte is N, the hub the one ending in .254.
func ParseSubnet(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet %q: want an IPv4 prefix such as 10.214.0.0/24", s)
	}
	return p, checkSubnet(p)
}

func checkSubnet(p netip.Prefix) error {
	a := p.Addr()
	switch {
	case !p.IsValid() || !a.Is4():
		return fmt.Errorf("subnet %s: want an IPv4 prefix such as 10.214.0.0/24", p)
	case p.Bits() < 8 || p.Bits() > 24:
		return fmt.Errorf("subnet %s: want a prefix length from /8 to /24 (the nodes take the last byte)", p)
	case p.Masked() != p:
		return fmt.Errorf("subnet %s: write it as its first address, %s", p, p.Masked())
	case a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.As4()[0] == 0 || a.As4()[0] >= 240:
		return fmt.Errorf("subnet %s: not a range for hosts (loopback, link-local, multicast or reserved)", p)
	}
	return nil
}

// route is one IPv4 route of the machine's own namespace.
type route struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Dev      string `json:"dev"`
	Gateway  string `json:"gateway"`
	Protocol string `json:"protocol"`
	Table    string `json:"table"`
	prefix   netip.Prefix
}

// ours reports whether r is an ackcheck guard route.
func (r route) ours() bool { return r.Type == "prohibit" && r.Protocol == guardProto }

func (r route) String() string {
	s := r.Dst
	if r.Type != "" && r.Type != "unicast" {
		s = r.Type + " " + s
	}
	if r.Gateway != "" {
		s += " via " + r.Gateway
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Table != "" && r.Table != "main" {
		s += " table " + r.Table
	}
	return s
}

// routes lists the IPv4 routes of every table of the machine's own
// namespace (ip -j route show table all).
func routes(ctx context.Context) ([]route, error) {
	out, err := run(ctx, "ip", "-j", "-4", "route", "show", "table", "all")
	if err != nil {
		return nil, fmt.Errorf("list the machine's routes: %w", err)
	}
	return parseRoutes(out)
}

// parseRoutes reads ip -j route's output.
func parseRoutes(out []byte) ([]route, error) {
	var rs []route
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Errorf("read ip -j route's output: %w", err)
	}
	kept := rs[:0]
	for _, r := range rs {
		switch {
		case r.Dst == "default":
			r.prefix = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		case strings.Contains(r.Dst, "/"):
			p, err := netip.ParsePrefix(r.Dst)
			if err != nil {
				continue
			}
			r.prefix = p.Masked()
		default:
			a, err := netip.ParseAddr(r.Dst)
			if err != nil {
				continue
			}
			r.prefix = netip.PrefixFrom(a, a.BitLen())
		}
		kept = append(kept, r)
	}
	return kept, nil
}

// SubnetFree says whether a Net may use subnet on this machine: nil when
// no route of the machine's own namespace but the default route and
// ackcheck's own guards covers any of it (an address assigned here has a
// route in the local table, so this finds those too), else an error
// wrapping ErrSubnetInUse that names the routes.
func SubnetFree(ctx context.Context, subnet netip.Prefix) error {
	rs, err := routes(ctx)
	if err != nil {
		return err
	}
	return subnetFree(rs, subnet)
}

func subnetFree(rs []route, subnet netip.Prefix) error {
	var held []string
	for _, r := range rs {
		if r.prefix.Bits() == 0 || r.ours() || !r.prefix.Overlaps(subnet) {
			continue
		}
		held = append(held, r.String())
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("subnet %s is %w (%s): ackcheck's namespaces would hide those hosts from this machine; choose another subnet", subnet, ErrSubnetInUse, strings.Join(held, "; "))
}

// Guards lists the subnets ackcheck's guard routes refuse now.
func Guards(ctx context.Context) ([]netip.Prefix, error) {
	rs, err := routes(ctx)
	if err != nil {
		return nil, err
	}
	var gs []netip.Prefix
	for _, r := range rs {
		if r.ours() {
			gs = append(gs, r.prefix)
		}
	}
	return gs, nil
}

// Guarded reports whether the guard route of subnet is in place.
func Guarded(ctx context.Context, subnet netip.Prefix) (bool, error) {
	gs, err := Guards(ctx)
	return slices.Contains(gs, subnet), err
}

// guard adds subnet's guard route; one already there is no error.
func guard(ctx context.Context, subnet netip.Prefix) error {
	_, err := run(ctx, "ip", "route", "add", "prohibit", subnet.String(), "proto", guardProto)
	if err == nil {
		return nil
	}
	if ok, _ := Guarded(ctx, subnet); ok {
		return nil
	}
	return fmt.Errorf("add the route that keeps the subnet's packets on this machine: %w", err)
}

// unguard removes subnet's guard route unless the hub of a Net still
// holds an address in it; removed says whether it did.
func unguard(ctx context.Context, subnet netip.Prefix) (removed bool, err error) {
	if ok, err := Guarded(ctx, subnet); err != nil || !ok {
		return false, err
	}
	if used, err := hubIn(ctx, subnet); err != nil || used != "" {
		return false, err
	}
	if _, err := run(ctx, "ip", "route", "del", "prohibit", subnet.String(), "proto", guardProto); err != nil {
		return false, fmt.Errorf("remove the guard route of %s: %w", subnet, err)
	}
	return true, nil
}

// ReleaseUnused removes every guard route no Net needs any more (its last
// namespace deleted by hand, or by a crash between the two), and returns
// the subnets it released. `ackcheck heal` calls it.
func ReleaseUnused(ctx context.Context) ([]netip.Prefix, error) {
	unlock, err := lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	gs, err := Guards(ctx)
	if err != nil {
		return nil, err
	}
	var released []netip.Prefix
	var errs []error
	for _, g := range gs {
		removed, err := unguard(ctx, g)
		if err != nil {
			errs = append(errs, err)
		}
		if removed {
			released = append(released, g)
		}
	}
	return released, errors.Join(errs...)
}

// hubIn names the hub namespace of a Net whose address is in subnet, ""
// when there is none.
func hubIn(ctx context.Context, subnet netip.Prefix) (string, error) {
	all, err := namespaces(ctx)
	if err != nil {
		return "", err
	}
	for _, name := range all {
		if !strings.HasSuffix(name, "-hub") {
			continue
		}
		sn, err := hubSubnet(ctx, name)
		if err != nil {
			continue // not a hub of ours, or going away
		}
		if sn.Overlaps(subnet) {
			return name, nil
		}
	}
	return "", nil
}

// hubSubnet is the subnet of the Net whose hub is hub, read from the
// address of its bridge.
func hubSubnet(ctx context.Context, hub string) (netip.Prefix, error) {
	out, err := run(ctx, "ip", "-n", hub, "-j", "-4", "addr", "show", "dev", "br0")
	if err != nil {
		return netip.Prefix{}, err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return netip.Prefix{}, fmt.Errorf("read the address of %s's bridge: %w", hub, err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if addr, err := netip.ParseAddr(a.Local); err == nil {
				return netip.PrefixFrom(addr, a.PrefixLen).Masked(), nil
			}
		}
	}
	return netip.Prefix{}, fmt.Errorf("%s's bridge has no IPv4 address", hub)
}

// SubnetOf says which subnet of ackcheck's namespaces host (an IP
// address) is in: DefaultSubnet, or a subnet a guard route refuses now
// (a Net made with another subnet). Such an address is reached only from
// a Net's hub; from the machine's own namespace a connect to it fails (the
// guard), or, with no Net up, would follow the default route off the
// machine. ok is false for a name or an address outside them.
func SubnetOf(host string) (subnet netip.Prefix, ok bool) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	if DefaultSubnet.Contains(a) {
		return DefaultSubnet, true
	}
	gs, _ := Guards(context.Background()) // no ip here: no Net either
	for _, g := range gs {
		if g.Contains(a) {
			return g, true
		}
	}
	return netip.Prefix{}, false
}

// InSubnet reports whether host is an address of ackcheck's namespaces
// (SubnetOf); the drivers refuse one without --netns.
func InSubnet(host string) bool {
	_, ok := SubnetOf(host)
	return ok
}

// ValidPrefix reports whether p has the form of a prefix Create accepts;
// the drivers check a --netns flag with it before dialling anything.
func ValidPrefix(p string) bool { return validPrefix.MatchString(p) }

// lockPath is the lock file Create, Delete and ReleaseUnused hold.
var lockPath = filepath.Join(os.TempDir(), "ackcheck-netns.lock")

// lock takes the lock file, waiting for another process that holds it.
// Where it cannot be opened (not root: no Net can be made either), it
// locks nothing and the command that needs root says so.
func lock() (unlock func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return func() {}, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return func() { f.Close() }, nil
}
