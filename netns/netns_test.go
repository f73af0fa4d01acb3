package netns

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
)

// testNet makes a 3-node Net with a prefix of this test's own, deleted
// at the end.
func testNet(t *testing.T) *Net {
	t.Helper()
	need.NetnsTools(t)
	prefix := fmt.Sprintf("ackt%d-%d", os.Getpid()%100000, time.Now().UnixNano()%1000)
	n, err := Create(context.Background(), prefix, []int32{3, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Delete(context.Background()); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	return n
}

// hostLinks lists the links of the machine's own network namespace.
func hostLinks(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, strings.TrimSuffix(f[1], ":"))
		}
	}
	return names
}

// A Net is made, found again, refused twice, reachable end to end, and
// deleted without a trace; the machine's own namespace never changes.
func TestNetLifecycle(t *testing.T) {
	need.NetnsTools(t)
	ctx := context.Background()
	before := hostLinks(t)
	n := testNet(t)
	if !slices.Equal(n.Nodes, []int32{1, 2, 3}) {
		t.Fatalf("nodes %v", n.Nodes)
	}
	if after := hostLinks(t); !slices.Equal(before, after) {
		t.Fatalf("the machine's own links changed: %v -> %v", before, after)
	}
	found, ok, err := Open(ctx, n.Prefix)
	if err != nil || !ok || !slices.Equal(found.Nodes, n.Nodes) {
		t.Fatalf("Open: %+v %v %v", found, ok, err)
	}
	if _, err := Create(ctx, n.Prefix, []int32{1}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second Create of %s: %v", n.Prefix, err)
	}
	reach, err := n.Probe(ctx, 9, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(reach) != 9 || len(reach.Cut()) != 0 {
		t.Fatalf("a fresh net: %s (%d paths)", reach, len(reach))
	}
	if err := n.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := Open(ctx, n.Prefix); ok {
		t.Fatalf("%s still there after Delete", n.Hub())
	}
	all, _ := namespaces(ctx)
	for _, name := range all {
		if strings.HasPrefix(name, n.Prefix) {
			t.Errorf("namespace %s left after Delete", name)
		}
	}
	if err := n.Delete(ctx); err != nil {
		t.Errorf("a second Delete: %v", err)
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		nodes  []int32
		want   string
	}{
		{"Bad", []int32{1}, "lower-case"},
		{"a/b", []int32{1}, "lower-case"},
		{strings.Repeat("a", 33), []int32{1}, "at most 32"},
		{"ok", nil, "no nodes"},
		{"ok", []int32{0}, "from 1 to 253"},
		{"ok", []int32{254}, "from 1 to 253"},
		{"ok", []int32{2, 2}, "twice"},
	} {
		// Refused before anything is made: no root needed to see it.
		if _, err := Create(context.Background(), tc.prefix, tc.nodes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%q, %v): %v, want %q", tc.prefix, tc.nodes, err, tc.want)
		}
	}
}

// Each kind of rule cuts exactly the paths it names, and its removal
// gives them back. TCP needs both ways, so a one-way rule shows as a cut
// both ways here; TestOneWay tells the directions apart.
func TestRulesCutWhatTheySay(t *testing.T) {
	n := testNet(t)
	ctx := context.Background()
	for _, tc := range []struct {
		rule Rule
		cut  []Path
	}{
		{Rule{Name: "f1", Kind: Cut, Node: 1}, []Path{{1, 2}, {1, 3}, {2, 1}, {3, 1}}},
		{Rule{Name: "f2", Kind: Cut, Node: 1, Client: true}, []Path{{0, 1}, {1, 2}, {1, 3}, {2, 1}, {3, 1}}},
		{Rule{Name: "f3", Kind: Cut, Node: 2, Peers: []int32{3}}, []Path{{2, 3}, {3, 2}}},
		{Rule{Name: "f4", Kind: OneWay, Node: 3, Peers: []int32{1}}, []Path{{1, 3}, {3, 1}}},
		{Rule{Name: "f5", Kind: Loss, Node: 2, Percent: 100}, []Path{{1, 2}, {2, 1}, {2, 3}, {3, 2}}},
	} {
		t.Run(tc.rule.String(), func(t *testing.T) {
			if err := n.Apply(ctx, tc.rule); err != nil {
				t.Fatal(err)
			}
			reach, err := n.Probe(ctx, 9, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := reach.Cut(); !slices.Equal(got, tc.cut) {
				t.Errorf("with %s: %s; want cut %v", tc.rule, reach, tc.cut)
			}
			if err := n.Remove(ctx, tc.rule); err != nil {
				t.Fatal(err)
			}
			if err := n.Remove(ctx, tc.rule); err != nil {
				t.Errorf("a second Remove: %v", err)
			}
			if reach, err := n.Probe(ctx, 9, 2*time.Second); err != nil || len(reach.Cut()) != 0 {
				t.Errorf("after removing %s: %s %v", tc.rule, reach, err)
			}
		})
	}
}

// Two rules on one node are removed one at a time: removing one leaves
// the other in force. HealAll removes whatever is left.
func TestRemoveOneOfTwoAndHealAll(t *testing.T) {
	n := testNet(t)
	ctx := context.Background()
	a := Rule{Name: "fa", Kind: Cut, Node: 1, Peers: []int32{2}}
	b := Rule{Name: "fb", Kind: Cut, Node: 1, Peers: []int32{3}}
	bw := Rule{Name: "fc", Kind: Bandwidth, Node: 2, RateBits: 1e6}
	for _, r := range []Rule{a, b, bw} {
		if err := n.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	reach, _ := n.Probe(ctx, 9, time.Second)
	if got, want := reach.Cut(), []Path{{1, 3}, {3, 1}}; !slices.Equal(got, want) {
		t.Fatalf("after removing %s of two: %s", a, reach)
	}
	if err := n.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if reach, _ := n.Probe(ctx, 9, 2*time.Second); len(reach.Cut()) != 0 {
		t.Fatalf("after HealAll: %s", reach)
	}
	if out, _ := n.exec(ctx, 2, "tc", "qdisc", "show", "dev", "eth0"); strings.Contains(string(out), "tbf") {
		t.Errorf("HealAll left node 2's tbf: %s", out)
	}
	if err := n.HealAll(ctx); err != nil {
		t.Errorf("a second HealAll: %v", err)
	}
}

// Removing the last rule of a node leaves its ruleset as it was before
// the first: no empty table of ackcheck's. Removing one of two keeps the
// table and the other rule.
func TestRemoveLastRuleDropsTable(t *testing.T) {
	n := testNet(t)
	ctx := context.Background()
	a := Rule{Name: "fa", Kind: Cut, Node: 1, Peers: []int32{2}}
	b := Rule{Name: "fb", Kind: Loss, Percent: 50, Node: 1, Peers: []int32{3}}
	for _, r := range []Rule{a, b} {
		if err := n.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ruleset := func() string {
		out, err := n.exec(ctx, 1, "nft", "list", "ruleset")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if err := n.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	if rs := ruleset(); !strings.Contains(rs, "table inet ackcheck") || !strings.Contains(rs, "fb_out") || strings.Contains(rs, "fa_out") {
		t.Fatalf("after removing %s of two, node 1's ruleset:\n%s", a, rs)
	}
	if err := n.Remove(ctx, b); err != nil {
		t.Fatal(err)
	}
	if rs := ruleset(); strings.Contains(rs, "ackcheck") {
		t.Fatalf("after removing the last rule, node 1's ruleset still has ackcheck's table:\n%s", rs)
	}
	if err := n.Remove(ctx, b); err != nil {
		t.Errorf("removing a rule again, its table gone: %v", err)
	}
}

func TestHasChains(t *testing.T) {
	for _, c := range []struct {
		listing string
		want    bool
	}{
		{"table inet ackcheck {\n}\n", false},
		{"table inet ackcheck {\n\tchain f1_out {\n\t\ttype filter hook output priority filter; policy accept;\n\t}\n}\n", true},
		{"", false},
	} {
		if got := hasChains(c.listing); got != c.want {
			t.Errorf("hasChains(%q) = %v, want %v", c.listing, got, c.want)
		}
	}
}

// udpCount listens on node id's UDP port and counts what arrives.
func udpCount(t *testing.T, n *Net, id int32) (addr string, got *atomic.Int64) {
	t.Helper()
	var pc net.PacketConn
	err := inNamespace(n.NodeNS(id), func() (err error) {
		pc, err = net.ListenPacket("udp", n.NodeAddr(id).String()+":0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	got = new(atomic.Int64)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	return pc.LocalAddr().String(), got
}

// send sends count UDP datagrams from node from (0: the hub) to addr.
func send(t *testing.T, n *Net, from int32, addr string, count int) {
	t.Helper()
	var c net.Conn
	var err error
	if from == 0 {
		c, err = n.Dial(context.Background(), "udp", addr)
	} else {
		c, err = n.DialFrom(context.Background(), from, "udp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range count {
		c.Write([]byte("x")) // a dropped datagram is no error to the sender
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // what is under way arrives
}

// A one-way rule drops one direction only: node 3's datagrams to node 1
// are dropped, node 1's to node 3 arrive.
func TestOneWay(t *testing.T) {
	n := testNet(t)
	r := Rule{Name: "f1", Kind: OneWay, Node: 3, Peers: []int32{1}}
	if err := n.Apply(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	at1, got1 := udpCount(t, n, 1)
	at3, got3 := udpCount(t, n, 3)
	send(t, n, 3, at1, 50)
	send(t, n, 1, at3, 50)
	if got1.Load() != 0 || got3.Load() != 50 {
		t.Fatalf("with %s: node 1 got %d of node 3's 50, node 3 got %d of node 1's 50; want 0 and 50", r, got1.Load(), got3.Load())
	}
}

// Loss drops about its share of packets, each on its own draw: 50% of
// 400 datagrams from the client to node 2 leaves 140..260 (the chance of
// falling outside is below 1e-9), and 0 dropped without the rule.
func TestLossDropsItsShare(t *testing.T) {
	n := testNet(t)
	at2, got := udpCount(t, n, 2)
	send(t, n, 0, at2, 400)
	if got.Load() != 400 {
		t.Fatalf("no rule: %d of 400 arrived", got.Load())
	}
	got.Store(0)
	r := Rule{Name: "f1", Kind: Loss, Node: 2, Percent: 50, Client: true}
	if err := n.Apply(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	send(t, n, 0, at2, 400)
	if g := got.Load(); g < 140 || g > 260 {
		t.Fatalf("with %s: %d of 400 arrived", r, g)
	}
}

// A bandwidth limit is in force: 256 KiB from node 1 at 1 Mbit/s takes
// about 2 s, so at least 1 s (a bound a busy machine cannot break).
func TestBandwidthLimits(t *testing.T) {
	n := testNet(t)
	var hubLn net.Listener
	if err := inNamespace(n.Hub(), func() (err error) {
		hubLn, err = net.Listen("tcp", n.HubAddr().String()+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer hubLn.Close()
	received := make(chan int64, 1)
	go func() {
		c, err := hubLn.Accept()
		if err != nil {
			received <- -1
			return
		}
		defer c.Close()
		got, _ := io.Copy(io.Discard, c)
		received <- got
	}()
	r := Rule{Name: "f1", Kind: Bandwidth, Node: 1, RateBits: 1e6}
	if err := n.Apply(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	c, err := n.DialFrom(context.Background(), 1, "tcp", hubLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	go func() {
		c.Write(make([]byte, 256<<10))
		c.Close()
	}()
	select {
	case got := <-received:
		if took := time.Since(start); got != 256<<10 || took < time.Second {
			t.Fatalf("%d bytes arrived in %s with %s; want 262144 in at least 1 s", got, took, r)
		}
	case <-time.After(time.Minute):
		t.Fatal("256 KiB did not arrive within a minute")
	}
}

// Preflight tells each kind apart, and says what is missing; where the
// kernel has no netem (this project's machines), delay cannot run and
// says so, while cut, loss and bandwidth can.
func TestPreflight(t *testing.T) {
	need.NetnsTools(t)
	caps := Preflight(context.Background())
	byKind := map[Kind]Capability{}
	for _, c := range caps {
		byKind[c.Kind] = c
		t.Logf("%s: ok=%v %s", c.Kind, c.OK, c.Why)
		if c.OK != (c.Why == "") {
			t.Errorf("%s: ok %v with reason %q", c.Kind, c.OK, c.Why)
		}
	}
	for _, k := range []Kind{Cut, OneWay, Loss, Bandwidth} {
		if !byKind[k].OK {
			t.Errorf("%s cannot run: %s", k, byKind[k].Why)
		}
	}
	if d := byKind[Delay]; !d.OK && !strings.Contains(d.Why, "netem is not available in this kernel") {
		t.Errorf("delay: %q", d.Why)
	}
	all, _ := namespaces(context.Background())
	for _, name := range all {
		if strings.HasPrefix(name, "ackcheck-preflight-") {
			t.Errorf("preflight left %s", name)
		}
	}
}

func TestApplyRefusesWhatItCannotDo(t *testing.T) {
	n := &Net{Prefix: "x", Nodes: []int32{1, 2, 3}}
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{Name: "", Kind: Cut, Node: 1}, "rule name"},
		{Rule{Name: "a-b", Kind: Cut, Node: 1}, "rule name"},
		{Rule{Name: "f", Kind: Cut, Node: 4}, "not in network"},
		{Rule{Name: "f", Kind: Cut, Node: 1, Peers: []int32{1}}, "not another node"},
		{Rule{Name: "f", Kind: Cut, Node: 1, Peers: []int32{9}}, "not another node"},
		{Rule{Name: "f", Kind: Loss, Node: 1, Percent: 0}, "give 1 to 100"},
		{Rule{Name: "f", Kind: Loss, Node: 1, Percent: 101}, "give 1 to 100"},
		{Rule{Name: "f", Kind: Bandwidth, Node: 1, RateBits: 100}, "at least 8 kbit/s"},
		{Rule{Name: "f", Kind: Bandwidth, Node: 1, RateBits: 1e6, Peers: []int32{2}}, "takes no peers"},
		{Rule{Name: "f", Kind: Delay, Node: 1}, "unknown network fault"},
	} {
		// Refused before any command runs: the Net need not exist.
		if err := n.Apply(context.Background(), tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Apply(%+v): %v, want %q", tc.r, err, tc.want)
		}
	}
}
