package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
)

// routeGet is `ip route get addr` in the machine's own namespace: what
// the kernel would do with a packet for addr sent from here. It sends
// nothing.
func routeGet(t *testing.T, addr netip.Addr) (string, error) {
	t.Helper()
	out, err := exec.Command("ip", "route", "get", addr.String()).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// testSubnet is a subnet of this test process's own, so that Nets of
// other processes (another test package, a cluster) in DefaultSubnet do
// not keep its guard route.
func testSubnet() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(100 + os.Getpid()%100), 0}), 24)
}

// While a Net exists, a packet for its subnet sent from the machine's own
// namespace is refused there (the guard route): `ip route get` answers
// "Permission denied" instead of a route through the default gateway,
// and a connect fails at once with EACCES, before any packet leaves.
// Once the last Net of the subnet is deleted, the route is gone.
func TestGuardRouteKeepsTheSubnetOnTheMachine(t *testing.T) {
	need.NetnsTools(t)
	ctx := context.Background()
	sub := testSubnet()
	if ok, err := Guarded(ctx, sub); ok || err != nil {
		t.Fatalf("a guard route for %s before any Net (%v)", sub, err)
	}
	prefix := fmt.Sprintf("acktg%d", os.Getpid()%100000)
	n, err := CreateIn(ctx, sub, prefix, []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(context.Background()) })
	second, err := CreateIn(ctx, sub, prefix+"-b", []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Delete(context.Background()) })

	addr := n.NodeAddr(1)
	if !sub.Contains(addr) {
		t.Fatalf("node 1 at %s, outside the Net's subnet %s", addr, sub)
	}
	said, err := routeGet(t, addr)
	if err == nil || !strings.Contains(said, "Permission denied") {
		// Never dial when the guard is not verified: the packet could
		// leave the machine.
		t.Fatalf("ip route get %s from the machine's namespace: %q (%v); want it refused by the guard route", addr, said, err)
	}
	start := time.Now()
	d := net.Dialer{Timeout: 2 * time.Second}
	c, local := d.Dial("tcp", netip.AddrPortFrom(addr, 9).String())
	took := time.Since(start)
	if local == nil {
		c.Close()
		t.Fatalf("a connect to %s from the machine's own namespace succeeded", addr)
	}
	if !errors.Is(local, syscall.EACCES) || took > 500*time.Millisecond {
		t.Errorf("connect to %s from the machine's namespace: %v after %s; want EACCES at once", addr, local, took)
	}
	// From the hub it is reached (refused by nobody listening: an answer).
	hc, err := n.Dial(ctx, "tcp", netip.AddrPortFrom(addr, 9).String())
	if err == nil {
		hc.Close()
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("from the hub: %v, want connection refused (the node answers)", err)
	}
	t.Logf("ip route get %s: %q; connect from here: %v in %s", addr, said, local, took.Round(time.Microsecond))

	// The first Net goes: the second keeps the guard.
	if err := n.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := Guarded(ctx, sub); !ok || err != nil {
		t.Fatalf("guard route gone (%v) while a Net of %s is left", err, sub)
	}
	if err := second.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := Guarded(ctx, sub); ok || err != nil {
		t.Fatalf("guard route for %s still there after the last Net went (%v)", sub, err)
	}
	if said, err := routeGet(t, addr); err != nil || strings.Contains(said, "Permission denied") {
		t.Errorf("after the last Net: ip route get %s: %q %v", addr, said, err)
	}
}

// A guard left behind (its Net's namespaces deleted by hand) is removed
// by ReleaseUnused, as `ackcheck heal` calls it; a guard whose Net still
// exists is kept.
func TestReleaseUnusedGuards(t *testing.T) {
	need.NetnsTools(t)
	ctx := context.Background()
	sub := testSubnet()
	prefix := fmt.Sprintf("acktu%d", os.Getpid()%100000)
	n, err := CreateIn(ctx, sub, prefix, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(context.Background()) })
	if released, err := ReleaseUnused(ctx); err != nil || containsPrefix(released, sub) {
		t.Fatalf("released %v (%v) while the Net of %s exists", released, err, sub)
	}
	for _, ns := range []string{n.Hub(), n.NodeNS(1)} {
		if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns delete %s: %v %s", ns, err, out)
		}
	}
	if ok, _ := Guarded(ctx, sub); !ok {
		t.Fatal("the guard went with the namespaces deleted by hand: nothing left to release")
	}
	released, err := ReleaseUnused(ctx)
	if err != nil || !containsPrefix(released, sub) {
		t.Fatalf("released %v (%v), want %s", released, err, sub)
	}
	if ok, err := Guarded(ctx, sub); ok || err != nil {
		t.Errorf("guard of %s still there after ReleaseUnused (%v)", sub, err)
	}
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// The subnet check, on routes as ip -j prints them: the default route and
// ackcheck's own guards are no refusal; a route covering part of the
// subnet, an address assigned in it, or a wider route are.
func TestSubnetFree(t *testing.T) {
	sub := netip.MustParsePrefix("10.213.0.0/24")
	cases := []struct {
		name, routes string
		refused      string // in the error; "" for none
	}{
		{"default only", `[{"dst":"default","gateway":"192.0.2.1","dev":"eth0"}]`, ""},
		{"our guard", `[{"type":"prohibit","dst":"10.213.0.0/24","protocol":"213"}]`, ""},
		{"another subnet", `[{"dst":"192.0.2.0/24","dev":"eth0","protocol":"kernel"}]`, ""},
		{"a wider route", `[{"dst":"10.0.0.0/8","gateway":"192.0.2.7","dev":"eth0"}]`, "10.0.0.0/8 via 192.0.2.7 dev eth0"},
		{"a narrower route", `[{"dst":"10.213.0.128/25","dev":"eth1"}]`, "10.213.0.128/25 dev eth1"},
		{"an address here", `[{"type":"local","dst":"10.213.0.9","dev":"eth1","table":"local"}]`, "local 10.213.0.9 dev eth1 table local"},
		{"someone's prohibit", `[{"type":"prohibit","dst":"10.213.0.0/24"}]`, "prohibit 10.213.0.0/24"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := parseRoutes([]byte(c.routes))
			if err != nil {
				t.Fatal(err)
			}
			err = subnetFree(rs, sub)
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.refused != "" && (err == nil || !errors.Is(err, ErrSubnetInUse) || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("error %v, want ErrSubnetInUse naming %q", err, c.refused)
			}
		})
	}
}

func TestParseSubnet(t *testing.T) {
	for in, want := range map[string]string{
		"10.214.0.0/24": "", "172.31.0.0/16": "", "10.213.0.1/24": "10.213.0.0", "10.214.0.0/25": "/8 to /24",
		"fd00::/64": "IPv4", "127.0.0.0/24": "not a range", "224.1.0.0/24": "not a range", "nonsense": "IPv4 prefix",
	} {
		_, err := ParseSubnet(in)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("ParseSubnet(%q): %v, want %q", in, err, want)
		}
	}
}
