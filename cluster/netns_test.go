package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
)

func TestNetnsPrefix(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	a, b := NetnsPrefix("/tmp/c1"), NetnsPrefix("/tmp/c2")
	for _, p := range []string{a, b} {
		if !valid.MatchString(p) || !strings.HasPrefix(p, "ackc-") {
			t.Errorf("prefix %q: want ackc-<hex>, a name netns.Create takes", p)
		}
	}
	if a == b {
		t.Errorf("two cluster dirs share the prefix %s", a)
	}
	if again := NetnsPrefix("/tmp/c1/"); again != a {
		t.Errorf("the same dir written with a trailing slash gives %s, want %s", again, a)
	}
}

func TestNetnsMissing(t *testing.T) {
	has := func(string) (string, error) { return "/usr/sbin/x", nil }
	lacks := func(tool string) func(string) (string, error) {
		return func(bin string) (string, error) {
			if bin == tool {
				return "", exec.ErrNotFound
			}
			return "/usr/sbin/" + bin, nil
		}
	}
	for _, tc := range []struct {
		name     string
		euid     int
		lookPath func(string) (string, error)
		want     string // "" when nothing is missing
	}{
		{"all there", 0, has, ""},
		{"not root", 1000, has, "root"},
		{"no ip", 0, lacks("ip"), "ip (Debian/Ubuntu package iproute2)"},
		{"no nft", 0, lacks("nft"), "nft (Debian/Ubuntu package nftables)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := netnsMissing(tc.euid, tc.lookPath)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("nothing missing, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--netns")):
				t.Fatalf("got %v, want an error about --netns naming %q", err, tc.want)
			}
		})
	}
}

func TestWaitProgram(t *testing.T) {
	// sh execs sleep after 300 ms: the wait ends only then.
	cmd := exec.Command("sh", "-c", "sleep 0.3; exec sleep 2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	start := time.Now()
	waitProgram(cmd.Process.Pid, "sleep", 5*time.Second)
	if took := time.Since(start); took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("waited %s for the exec of sleep, want about 300 ms", took)
	}
	// A program that never comes: the wait ends at its limit.
	start = time.Now()
	waitProgram(cmd.Process.Pid, "java", 200*time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("waited %s for a program that never runs, want the 200 ms limit", took)
	}
	// A process that is gone: at once.
	cmd.Process.Kill()
	cmd.Wait()
	start = time.Now()
	waitProgram(cmd.Process.Pid, "java", 5*time.Second)
	if took := time.Since(start); took > time.Second {
		t.Errorf("waited %s for a process that is gone", took)
	}
}

func TestEnsureNet(t *testing.T) {
	need.NetnsTools(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("acktc%d", os.Getpid()%100000)
	up := "ackcheck cluster x up --netns"
	if err := NeedNet(ctx, prefix, up); err == nil || !strings.Contains(err.Error(), up) {
		t.Fatalf("NeedNet before the Net exists: %v, want an error naming %q", err, up)
	}
	n, err := EnsureNet(ctx, prefix, netip.Prefix{}, []int32{2, 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(ctx) })
	if err := NeedNet(ctx, prefix, up); err != nil {
		t.Fatalf("NeedNet with the Net there: %v", err)
	}
	// Up again: the same Net, not a second one.
	if again, err := EnsureNet(ctx, prefix, netip.Prefix{}, []int32{1, 2}); err != nil || again.Prefix != prefix {
		t.Fatalf("EnsureNet of an existing Net: %v, %v", again, err)
	}
	// Brought up again, the subnet it holds is no refusal: its guard
	// route is ackcheck's.
	if err := NetnsUpPreflight(ctx, prefix, netip.Prefix{}); err != nil {
		t.Fatalf("preflight of a cluster whose namespaces exist: %v", err)
	}
	// Another subnet than it has: refused.
	if _, err := EnsureNet(ctx, prefix, netip.MustParsePrefix("10.214.0.0/24"), []int32{1, 2}); err == nil || !strings.Contains(err.Error(), "10.214.0.0/24") {
		t.Fatalf("EnsureNet in another subnet: %v, want a refusal naming both subnets", err)
	}
	// Other nodes than it has: refused, left as it is.
	if _, err := EnsureNet(ctx, prefix, netip.Prefix{}, []int32{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "[1 2]") {
		t.Fatalf("EnsureNet with other nodes: %v, want a refusal naming the nodes it has", err)
	}
	if got, ok, err := netns.Open(ctx, prefix); !ok || err != nil || len(got.Nodes) != 2 {
		t.Fatalf("after the refusal the Net is %+v (found %v, %v), want it untouched with 2 nodes", got, ok, err)
	}
	if err := n.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := NeedNet(ctx, prefix, up); err == nil {
		t.Fatal("NeedNet after the Net was deleted: no error")
	}
}

// `cluster up --netns` refuses a subnet the machine routes, before it
// makes anything, naming --netns-subnet: here the subnet of a route of the
// machine's own (its link's), whatever it is.
func TestNetnsUpPreflightRefusesARoutedSubnet(t *testing.T) {
	need.NetnsTools(t)
	ctx := context.Background()
	out, err := exec.Command("ip", "-j", "-4", "route", "show", "table", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	var routes []struct {
		Dst  string `json:"dst"`
		Type string `json:"type"` // "" for unicast; a guard route is "prohibit"
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		t.Fatal(err)
	}
	var held netip.Prefix
	for _, r := range routes {
		p, err := netip.ParsePrefix(r.Dst)
		if err != nil || r.Type != "" || p.Bits() < 8 || p.Bits() > 24 || p.Addr().IsLoopback() {
			continue
		}
		// The first /24 of it, as --netns-subnet would be written.
		if sn, err := netns.ParseSubnet(netip.PrefixFrom(p.Masked().Addr(), 24).String()); err == nil {
			held = sn
			break
		}
	}
	if !held.IsValid() {
		t.Skip("this machine has no IPv4 route of /8 to /24 to try")
	}
	prefix := fmt.Sprintf("acktr%d", os.Getpid()%100000)
	err = NetnsUpPreflight(ctx, prefix, held)
	if err == nil || !errors.Is(err, netns.ErrSubnetInUse) || !strings.Contains(err.Error(), "--netns-subnet") {
		t.Fatalf("preflight in %s, which the machine routes: %v; want a refusal naming --netns-subnet", held, err)
	}
	if _, ok, _ := netns.Open(ctx, prefix); ok {
		t.Error("the refusal made namespaces")
	}
	if _, err := netns.CreateIn(ctx, held, prefix, []int32{1}); err == nil || !errors.Is(err, netns.ErrSubnetInUse) {
		t.Fatalf("CreateIn in %s: %v, want ErrSubnetInUse", held, err)
	}
	if ok, err := netns.Guarded(ctx, held); ok || err != nil {
		t.Errorf("a guard route for %s after the refusal (%v)", held, err)
	}
}
