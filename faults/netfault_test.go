package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
)

var netSeq atomic.Int32

// testNet makes a 3-node Net whose prefix starts with "akf" and is this
// test's own, deleted at the end even when the test fails.
func testNet(t *testing.T) *netns.Net {
	t.Helper()
	need.NetnsTools(t)
	prefix := fmt.Sprintf("akf%d-%d", os.Getpid()%100000, netSeq.Add(1))
	n, err := netns.Create(context.Background(), prefix, []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Delete(context.Background()); err != nil {
			t.Errorf("delete network %s: %v", prefix, err)
		}
	})
	return n
}

// fakeNetPort is where the fake nodes listen inside their namespaces.
const fakeNetPort = 9092

// netCluster is a fake local cluster whose nodes are plain TCP listeners
// in the namespaces of a real Net: what a broker started with --netns
// looks like to the faults, without a broker. Its "processes" are this
// test process.
type netCluster struct {
	n   *netns.Net
	dir string
}

// newNetCluster listens on fakeNetPort in every node's namespace.
func newNetCluster(t *testing.T, n *netns.Net) *netCluster {
	t.Helper()
	for _, id := range n.Nodes {
		l, err := n.Listen(id, "tcp", fmt.Sprintf(":%d", fakeNetPort))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	return &netCluster{n: n, dir: t.TempDir()}
}

func (c *netCluster) Net() *netns.Net { return c.n }
func (c *netCluster) ProbePort() int  { return fakeNetPort }
func (c *netCluster) Nodes() []int32  { return c.n.Nodes }
func (c *netCluster) PID(int32) (int, error) {
	return os.Getpid(), nil
}
func (c *netCluster) Signal(int32, syscall.Signal) (int, error) {
	return 0, errors.New("the fake network cluster has no processes to signal")
}
func (c *netCluster) StopNode(context.Context, int32, time.Duration) error { return nil }
func (c *netCluster) StartNode(context.Context, int32) error               { return nil }
func (c *netCluster) DataDirInode(int32) (uint64, error)                   { return 1, nil }
func (c *netCluster) Dir() string                                          { return c.dir }
func (c *netCluster) LoseUnsynced(context.Context, int32) (string, error) {
	return "", errors.New("no lazyfs")
}
func (c *netCluster) CanLoseUnsynced(int32) error { return errors.New("no lazyfs") }

// plainCluster is a local cluster started without --netns.
type plainCluster struct{ *netCluster }

func (plainCluster) Net() *netns.Net { return nil }

// cutPaths probes n and returns its cut paths as the proof writes them.
func cutPaths(t *testing.T, n *netns.Net) []string {
	t.Helper()
	shot := probe(context.Background(), nsNetwork{n, fakeNetPort}, probeTimeout)
	if shot.Error != "" {
		t.Fatalf("probe: %s", shot.Error)
	}
	return shot.Cut
}

func paths(s ...string) []string {
	slices.Sort(s)
	return s
}

// Each network fault, from a schedule on the fake cluster, installs its
// rules, proves the cut it meant with the probe after, and heal-network
// removes it: the probe after the heal shows every path answering, the
// fault's record carries all three probes, and the journal holds nothing.
func TestNetworkFaultsFromSchedule(t *testing.T) {
	n := testNet(t)
	c := newNetCluster(t, n)
	tests := []struct {
		schedule string
		cut      []string // the probe after the fault, exactly
		meant    int
	}{
		{"at=0s partition node:2", paths("node 1 -> node 2", "node 2 -> node 1", "node 2 -> node 3", "node 3 -> node 2"), 4},
		{"at=0s partition-client node:2", paths("client -> node 2", "node 1 -> node 2", "node 2 -> node 1", "node 2 -> node 3", "node 3 -> node 2"), 5},
		{"at=0s partition split:1|2,3", paths("node 1 -> node 2", "node 2 -> node 1", "node 1 -> node 3", "node 3 -> node 1"), 4},
		// A TCP connect needs both directions: 2 -> 1 is cut too, as 1's
		// answers are dropped; only 1 -> 2 is claimed.
		{"at=0s partition one-way:1->2", paths("node 1 -> node 2", "node 2 -> node 1"), 1},
		{"at=0s loss 100% pair:1-3", paths("node 1 -> node 3", "node 3 -> node 1"), 2},
		{"at=0s bandwidth 1mbit node:3", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.schedule, func(t *testing.T) {
			steps, err := ParseSchedule(tc.schedule + "; at=100ms heal-network")
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Nodes: Local{Cluster: c}}
			if err := Preflight(context.Background(), env, steps); err != nil {
				t.Fatal(err)
			}
			j, err := OpenJournal(filepath.Join(t.TempDir(), "heal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			in := &Injector{Nodes: env.Nodes, Journal: j, Logf: t.Logf}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			in.Run(ctx, time.Now(), steps)
			recs := in.Records()
			if len(recs) != 2 {
				t.Fatalf("%d records: %+v", len(recs), recs)
			}
			f, h := recs[0], recs[1]
			if f.Result != Applied || h.Result != Applied {
				t.Fatalf("fault %s (%s), heal %s (%s)", f.Result, f.Error, h.Result, h.Error)
			}
			p := f.NetworkProof
			if p == nil || p.Before == nil || p.After == nil || p.Healed == nil {
				t.Fatalf("proof incomplete: %+v", p)
			}
			if len(p.Before.Cut) != 0 || p.Before.Paths != 9 {
				t.Errorf("before: %s", p.Before)
			}
			seenCut := slices.Clone(p.After.Cut)
			slices.Sort(seenCut)
			if !slices.Equal(seenCut, tc.cut) {
				t.Errorf("after: cut %v, want %v", seenCut, tc.cut)
			}
			if len(p.MeantCut) != tc.meant {
				t.Errorf("meant cut %v, want %d paths", p.MeantCut, tc.meant)
			}
			if len(p.Healed.Cut) != 0 || p.Healed.Paths != 9 {
				t.Errorf("after the heal: %s", p.Healed)
			}
			if h.NetworkProof == nil || !h.NetworkProof.Removed || len(h.NetworkProof.Rules) != len(p.Rules) {
				t.Errorf("heal-network record: %+v, want the %d rule(s) it removed", h.NetworkProof, len(p.Rules))
			}
			if _, pending := j.Pending(); len(pending) != 0 {
				t.Errorf("journal still holds %v", pending)
			}
			if cut := cutPaths(t, n); len(cut) != 0 {
				t.Errorf("after the run: %v still cut", cut)
			}
			if !strings.Contains(p.String(), "after the heal: all 9 paths answer") {
				t.Errorf("proof text: %s", p)
			}
		})
	}
}

// A fault whose rules do not cut what it meant is Failed, never Applied:
// a shape that claims a cut but installs only a 1% loss.
type claimsTooMuch struct{ lossy }

func (claimsTooMuch) plan(n []int32, st Step, on picked) ([]netns.Rule, []netns.Path, []int32) {
	r, _, _ := lossy{}.plan(n, Step{Amount: Amount{Percent: 1}}, on)
	r[0].Peers, r[0].Client = []int32{1}, false
	return r, []netns.Path{{From: 2, To: 3}}, []int32{2}
}

func TestNetworkFaultWithoutTheCutFails(t *testing.T) {
	n := testNet(t)
	c := newNetCluster(t, n)
	tests := []struct {
		name  string
		shape netShape
		want  Result
	}{
		{"claims a cut it does not make", claimsTooMuch{}, Failed},
		{"makes the cut it claims", cutNode{}, Applied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &Injector{Nodes: Local{Cluster: c}, Logf: t.Logf}
			in.init()
			st := Step{Action: Partition, Target: Target{Kind: Node, Node: 2}}
			rec := in.apply(context.Background(), onNet{tc.shape}, st, picked{nodes: []int32{2}}, Record{Action: Partition, Node: 2})
			if rec.Result != tc.want {
				t.Errorf("result %s (%s), want %s", rec.Result, rec.Error, tc.want)
			}
			if tc.want == Failed && !strings.Contains(rec.Error, "node 2 -> node 3 still answer") {
				t.Errorf("error %q does not name the path that still answers", rec.Error)
			}
			// Either way the rules were journaled and the heal removes them.
			if _, err := in.Heal(context.Background()); err != nil {
				t.Fatal(err)
			}
			if cut := cutPaths(t, n); len(cut) != 0 {
				t.Errorf("after the heal: %v still cut", cut)
			}
		})
	}
}

// Preflight refuses a network fault on a cluster without namespaces,
// saying how to start one, and a delay where the kernel has no netem,
// saying what can run instead; it accepts a partition where it can run.
func TestNetworkPreflight(t *testing.T) {
	n := testNet(t)
	c := newNetCluster(t, n)
	caps := netns.Preflight(context.Background())
	netem := slices.IndexFunc(caps, func(c netns.Capability) bool { return c.Kind == netns.Delay })
	tests := []struct {
		name     string
		cluster  LocalCluster
		schedule string
		want     string // "" accepted
	}{
		{"partition in namespaces", c, "at=1s partition node:2", ""},
		{"loss and bandwidth in namespaces", c, "at=1s loss 30% node:2; at=2s bandwidth 1mbit node:1", ""},
		{"partition without --netns", plainCluster{c}, "at=1s partition node:2", "cluster kafka up --netns"},
		{"heal-network without --netns", plainCluster{c}, "at=1s heal-network", "--netns"},
		{"a node not in the network", c, "at=1s partition split:1|7", "node 7"},
		{"nodes neither in namespaces nor a cluster file's", nil, "at=1s loss 10% node:2", "--cluster-file with `ports:`"},
	}
	if netem >= 0 && !caps[netem].OK {
		tests = append(tests, struct {
			name     string
			cluster  LocalCluster
			schedule string
			want     string
		}{"delay without netem", c, "at=1s delay 100ms node:2", "netem is not available in this kernel"})
	}
	one, err := netns.Create(context.Background(), fmt.Sprintf("akf%d-one", os.Getpid()%100000), []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Delete(context.Background()) }) //nolint:errcheck // best effort
	single := &netCluster{n: one, dir: t.TempDir()}
	tests = append(tests, []struct {
		name     string
		cluster  LocalCluster
		schedule string
		want     string
	}{
		{"partition of a single node", single, "at=1s partition node:1", "use partition-client"},
		{"partition-client of a single node", single, "at=1s partition-client node:1", ""},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Nodes: Local{Cluster: tc.cluster}}
			if tc.cluster == nil {
				env.Nodes = newFakeNodes(1, 2, 3) // any Nodes but a local cluster's
			}
			err = Preflight(context.Background(), env, steps)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// capable names what cannot run, why, and what can instead.
func TestCapableSaysWhatCanRun(t *testing.T) {
	caps := []netns.Capability{{Kind: netns.Cut, OK: true}, {Kind: netns.Loss, OK: true}, {Kind: netns.Bandwidth, OK: true},
		{Kind: netns.Delay, Why: "netem is not available in this kernel"}}
	tests := []struct {
		kind netns.Kind
		want string
	}{
		{netns.Delay, "netem is not available in this kernel: delay cannot run; partition, loss, bandwidth can"},
		{netns.Loss, ""},
		{netns.OneWay, "does not know it"},
	}
	for _, tc := range tests {
		err := capable(caps, tc.kind)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.kind, err, tc.want)
		}
	}
}

// The crash: an ackcheck process (this test binary, re-executed) applies
// a partition and is SIGKILLed while it is in force; the heal after it
// (what `ackcheck heal` runs: the journal reopened, the Net found again by
// its prefix) removes the rule, once, and the probe shows every path
// answering again.
func TestHealAfterCrashMidPartition(t *testing.T) {
	if os.Getenv("AKF_CHILD_NET") != "" {
		crashChild(t)
		return
	}
	n := testNet(t)
	journal := filepath.Join(t.TempDir(), "heal.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHealAfterCrashMidPartition$", "-test.v")
	cmd.Env = append(os.Environ(), "AKF_CHILD_NET="+n.Prefix, "AKF_CHILD_JOURNAL="+journal)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck // already dead or killed now
	var log strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(log.String(), "PARTITION APPLIED") {
		k, err := out.Read(buf)
		log.Write(buf[:k])
		if err != nil {
			t.Fatalf("the child ended before its partition applied: %v\n%s", err, log.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", werr)
	}
	want := paths("node 1 -> node 2", "node 2 -> node 1", "node 2 -> node 3", "node 3 -> node 2")
	if cut := cutPaths(t, n); !slices.Equal(cut, want) {
		t.Fatalf("after the crash: cut %v, want the partition's %v", cut, want)
	}

	heal := func() ([]string, error) {
		j, err := OpenJournal(journal)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		return (&Injector{Journal: j}).Heal(context.Background())
	}
	healed, err := heal()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("healed: %q", healed)
	if len(healed) != 2 || !strings.Contains(healed[0], "remove the rule") || healed[1] != "network probed after the heal: all 9 paths answer" {
		t.Errorf("heal said %q", healed)
	}
	if cut := cutPaths(t, n); len(cut) != 0 {
		t.Errorf("after the heal: %v still cut", cut)
	}
	// Never twice: a second heal finds nothing to do.
	if again, err := heal(); err != nil || len(again) != 0 {
		t.Errorf("second heal: %q, %v", again, err)
	}
}

// crashChild is the ackcheck process that crashes: it partitions node 2
// of the parent's Net, says so, and waits to be killed.
func crashChild(t *testing.T) {
	ctx := context.Background()
	n, ok, err := netns.Open(ctx, os.Getenv("AKF_CHILD_NET"))
	if err != nil || !ok {
		t.Fatalf("open the parent's network: %v (found: %v)", err, ok)
	}
	j, err := OpenJournal(os.Getenv("AKF_CHILD_JOURNAL"))
	if err != nil {
		t.Fatal(err)
	}
	// No listeners here: a probe's refused connect answers as well.
	in := &Injector{Nodes: Local{Cluster: &netCluster{n: n, dir: t.TempDir()}}, Journal: j}
	rec := in.Apply(ctx, Step{Action: Partition, Target: Target{Kind: Node, Node: 2}})
	if rec.Result != Applied {
		t.Fatalf("partition: %s %s", rec.Result, rec.Error)
	}
	fmt.Println("PARTITION APPLIED")
	time.Sleep(50 * time.Second) // killed long before
	t.Fatal("not killed")
}

// The recovery of a partitioned node is measured as a kill's, from the
// partition, but only once heal-network removed its rules: ready and in
// sync come after the heal, never while the node is cut off.
func TestPartitionRecoveryWaitsForTheHeal(t *testing.T) {
	n := testNet(t)
	c := newNetCluster(t, n)
	d, topic := kfakeDriver(t)
	steps, err := ParseSchedule("at=0s partition node:2; at=1500ms heal-network")
	if err != nil {
		t.Fatal(err)
	}
	in := &Injector{Nodes: Local{Cluster: c}, Driver: d, Topic: topic, Poll: 50 * time.Millisecond, Logf: t.Logf}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in.Run(ctx, time.Now(), steps)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	in.WaitRecovery(wctx)
	recs := in.Records()
	if len(recs) != 2 || recs[0].Result != Applied || recs[1].Result != Applied {
		t.Fatalf("records: %+v", recs)
	}
	p, h := recs[0], recs[1]
	if p.ReadyAt.IsZero() || p.InSyncAt.IsZero() {
		t.Fatalf("recovery not measured: ready %v, in sync %v", p.ReadyAt, p.InSyncAt)
	}
	if p.ReadyAt.Before(h.At) || p.InSyncAt.Before(p.ReadyAt) {
		t.Errorf("partition at %s, heal at %s, ready at %s, in sync at %s: ready must follow the heal",
			p.At.Format("15:04:05.000"), h.At.Format("15:04:05.000"), p.ReadyAt.Format("15:04:05.000"), p.InSyncAt.Format("15:04:05.000"))
	}
	if !strings.Contains(p.InSyncEvidence, "node 2") {
		t.Errorf("evidence %q", p.InSyncEvidence)
	}
	t.Logf("ready %s and in sync %s after the partition; heal %s after it; %s",
		p.ReadyAt.Sub(p.At).Round(time.Millisecond), p.InSyncAt.Sub(p.At).Round(time.Millisecond), h.At.Sub(p.At).Round(time.Millisecond), p.InSyncEvidence)
}

// On a single node (Pulsar standalone, Queen) partition-client cuts the
// only path there is, the client's, and the heal gives it back.
func TestPartitionClientOfASingleNode(t *testing.T) {
	need.NetnsTools(t)
	one, err := netns.Create(context.Background(), fmt.Sprintf("akf%d-solo", os.Getpid()%100000), []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Delete(context.Background()) }) //nolint:errcheck // best effort
	in := &Injector{Nodes: Local{Cluster: &netCluster{n: one, dir: t.TempDir()}}, Logf: t.Logf}
	rec := in.Apply(context.Background(), Step{Action: PartitionClient, Target: Target{Kind: Node, Node: 1}})
	if rec.Result != Applied || rec.NetworkProof == nil || !slices.Equal(rec.NetworkProof.After.Cut, []string{"client -> node 1"}) {
		t.Fatalf("%s %s: %+v", rec.Result, rec.Error, rec.NetworkProof)
	}
	healed, err := in.Heal(context.Background())
	if err != nil || len(healed) != 2 || healed[1] != "network probed after the heal: all 1 paths answer" {
		t.Errorf("heal: %q, %v", healed, err)
	}
}

// A heal after `cluster down` deleted the Net finds nothing to remove and
// says so; it is no failure, and the journal entry is done.
func TestHealAfterClusterDown(t *testing.T) {
	need.NetnsTools(t)
	j, err := OpenJournal(filepath.Join(t.TempDir(), "heal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	gone := fmt.Sprintf("akf%d-gone", os.Getpid()%100000)
	rule := netns.Rule{Name: "g1", Kind: netns.Cut, Node: 2}
	if _, err := j.Add(Undo{Kind: UndoNetRule, Net: gone, Port: fakeNetPort, Rule: &rule, Why: "partition node:2"}); err != nil {
		t.Fatal(err)
	}
	healed, err := (&Injector{Journal: j}).Heal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "network probed after the heal: network " + gone + " no longer exists (cluster down): its rules went with it"
	if len(healed) != 2 || healed[1] != want {
		t.Errorf("heal said %q, want its last line %q", healed, want)
	}
	if _, pending := j.Pending(); len(pending) != 0 {
		t.Errorf("still pending: %v", pending)
	}
}
