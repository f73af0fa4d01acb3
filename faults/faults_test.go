package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestParseSchedule(t *testing.T) {
	steps, err := ParseSchedule("at=25s restart; at=20s kill most-leaders:orders\nat=1m pause leader:orders/3; at=70s resume node:2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"at=20s kill most-leaders:orders",
		"at=25s restart previous",
		"at=1m0s pause leader:orders/3",
		"at=1m10s resume node:2",
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps", len(steps))
	}
	for i, s := range steps {
		if s.String() != want[i] {
			t.Errorf("step %d = %q, want %q", i, s, want[i])
		}
	}
	for _, bad := range []string{
		"kill node:1", "at=x kill node:1", "at=5s explode node:1", "at=5s kill", "at=5s kill leader:orders",
		"at=5s kill leader:/1", "at=5s kill node:x", "at=5s kill controller:3", "at=5s kill rack:a", "at=-1s kill node:1",
	} {
		_, err := ParseSchedule(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), "at=<duration>") {
			t.Errorf("%q: error %q does not show the form", bad, err)
		}
	}
	if steps, err := ParseSchedule("  "); err != nil || len(steps) != 0 {
		t.Fatalf("empty schedule: %v %v", steps, err)
	}
}

// Without the alias, owner:t/1 is no leader target: faults knows no
// broker's words of its own.
func TestAliasOnlyFromBrokers(t *testing.T) {
	if tg, err := ParseTarget("owner:t/1"); err == nil && tg.Kind == Leader {
		t.Errorf("owner:t/1 parsed as %v without an alias", tg)
	}
	steps, err := Aliases{"owner": Leader}.ParseSchedule("at=1s kill owner:t/1")
	if err != nil || len(steps) != 1 || steps[0].Target != (Target{Kind: Leader, Topic: "t", Partition: 1}) {
		t.Errorf("with the alias: %v, %v", steps, err)
	}
}

func TestResolve(t *testing.T) {
	topo := drivers.Topology{Controller: 3, Partitions: []drivers.PartitionState{
		{Partition: 0, Leader: 2}, {Partition: 1, Leader: 1}, {Partition: 2, Leader: 2}, {Partition: 3, Leader: -1},
	}}
	tests := []struct {
		target string
		prev   int32
		want   int32
		err    bool
	}{
		{"leader:t/1", -1, 1, false},
		{"owner:t/1", -1, 1, false},  // a broker's own word for a partition's leader (an alias)
		{"leader:t/3", -1, -1, true}, // no leader now
		{"leader:t/9", -1, -1, true}, // no such partition
		{"most-leaders:t", -1, 2, false},
		{"controller", -1, 3, false},
		{"node:7", -1, 7, false},
		{"previous", 2, 2, false},
		{"previous", -1, -1, true},
	}
	aliases := Aliases{"owner": Leader}
	for _, tc := range tests {
		tg, err := aliases.ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tg.Resolve(topo, tc.prev)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.target, got, err, tc.want, tc.err)
		}
	}
	if _, err := (Target{Kind: MostLeaders, Topic: "t"}).Resolve(drivers.Topology{}, -1); err == nil {
		t.Error("most-leaders of an empty topology resolved")
	}
}

// fakeNodes is a cluster of processes that exist only as PIDs.
type fakeNodes struct {
	mu      sync.Mutex
	pids    map[int32]int
	paused  map[int32]bool
	next    int
	signals []string
}

func newFakeNodes(ids ...int32) *fakeNodes {
	f := &fakeNodes{pids: map[int32]int{}, paused: map[int32]bool{}, next: 100}
	for _, id := range ids {
		f.next++
		f.pids[id] = f.next
	}
	return f
}

func (f *fakeNodes) IDs() []int32 { return []int32{1, 2, 3} }
func (f *fakeNodes) PID(_ context.Context, id int32) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pids[id], nil
}
func (f *fakeNodes) Signal(_ context.Context, id int32, sig syscall.Signal) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pid := f.pids[id]
	if pid == 0 {
		return 0, fmt.Errorf("node %d does not run", id)
	}
	f.signals = append(f.signals, fmt.Sprintf("%d:%v", id, sig))
	switch sig {
	case syscall.SIGKILL:
		f.pids[id] = 0
	case syscall.SIGSTOP:
		f.paused[id] = true
	case syscall.SIGCONT:
		f.paused[id] = false
	}
	return pid, nil
}
func (f *fakeNodes) Stop(ctx context.Context, id int32, _ time.Duration) error {
	_, err := f.Signal(ctx, id, syscall.SIGKILL)
	return err
}
func (f *fakeNodes) Start(_ context.Context, id int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.pids[id] = f.next
	return nil
}
func (f *fakeNodes) DataDirInode(context.Context, int32) (uint64, error) { return 42, nil }
func (f *fakeNodes) Where() string                                       { return "fake" }
func (f *fakeNodes) die(id int32) {
	f.mu.Lock()
	f.pids[id] = 0
	f.mu.Unlock()
}

func kfakeDriver(t *testing.T) (drivers.Driver, string) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(4, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, "t"
}

// A target that cannot be found is recorded as skipped with the reason,
// and the schedule goes on to its next step.
func TestMissingTargetIsSkippedAndRunGoesOn(t *testing.T) {
	d, topic := kfakeDriver(t)
	nodes := newFakeNodes(1, 2, 3)
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var log strings.Builder
	var logMu sync.Mutex
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d, Ledger: l, Logf: func(f string, a ...any) {
		logMu.Lock()
		fmt.Fprintf(&log, f+"\n", a...)
		logMu.Unlock()
	}}
	steps, _ := ParseSchedule("at=0s kill leader:t/99; at=10ms kill node:9; at=20ms restart; at=30ms pause node:2; at=40ms resume")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in.Run(ctx, time.Now(), steps)
	recs := in.Records()
	got := []string{}
	for _, r := range recs {
		got = append(got, string(r.Action)+"="+string(r.Result))
	}
	want := "kill=skipped kill=skipped restart=skipped pause=applied resume=applied"
	if strings.Join(got, " ") != want {
		t.Fatalf("records %v, want %s\n%s", got, want, log.String())
	}
	if !strings.Contains(recs[0].Error, "no such partition") || !strings.Contains(recs[1].Error, "not one this run controls") {
		t.Fatalf("reasons: %q, %q", recs[0].Error, recs[1].Error)
	}
	// A fault that found no node names none (-1), not a node it never
	// touched.
	if recs[0].Node != -1 || recs[2].Node != -1 {
		t.Fatalf("skipped faults name nodes %d and %d, want -1", recs[0].Node, recs[2].Node)
	}
	if !strings.Contains(log.String(), "skipped") {
		t.Fatalf("the skip was not reported:\n%s", log.String())
	}
	var stored []Record
	if err := l.GetMeta(MetaKey, &stored); err != nil || len(stored) != len(recs) {
		t.Fatalf("ledger holds %d records (%v), want %d", len(stored), err, len(recs))
	}
}

// Heal resumes a paused node and starts a killed one; a node that dies
// with no fault behind it is reported.
func TestHealAndUnexpectedDeath(t *testing.T) {
	d, topic := kfakeDriver(t)
	nodes := newFakeNodes(1, 2, 3)
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in.Apply(ctx, Step{Action: Pause, Target: Target{Kind: Node, Node: 1}})
	in.Apply(ctx, Step{Action: Kill, Target: Target{Kind: Node, Node: 2}})
	done := make(chan struct{})
	go func() { in.WatchDeaths(ctx); close(done) }()
	time.Sleep(100 * time.Millisecond)
	nodes.die(3) // nobody asked for this
	deadline := time.Now().Add(5 * time.Second)
	for {
		found := false
		for _, r := range in.Records() {
			found = found || (r.Action == "unexpected-death" && r.Node == 3)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("death of node 3 not reported: %+v", in.Records())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range in.Records() {
		if r.Action == "unexpected-death" && r.Node == 2 {
			t.Fatal("the killed node was reported as an unexpected death")
		}
	}
	cancel()
	<-done
	healed, err := in.Heal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(healed, ", ") != "start node 2 (after kill of node 2), resume node 1 (after pause of node 1)" {
		t.Fatalf("healed %v", healed)
	}
	if nodes.paused[1] || nodes.pids[2] == 0 {
		t.Fatalf("after heal: paused %v, pids %v", nodes.paused, nodes.pids)
	}
	// Heal twice is harmless.
	if again, err := in.Heal(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("second heal: %v %v", again, err)
	}
}
