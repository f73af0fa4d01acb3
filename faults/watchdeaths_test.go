package faults

import (
	"context"
	"sync"
	"testing"
	"time"
)

// slowPID holds WatchDeaths' first read of one node's PID until released,
// as a busy machine can: a fault may act on the node meanwhile.
type slowPID struct {
	*fakeNodes
	node    int32
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (s *slowPID) PID(ctx context.Context, id int32) (int, error) {
	if id == s.node {
		held := false
		s.once.Do(func() { held = true })
		if held {
			close(s.entered)
			<-s.release
		}
	}
	return s.fakeNodes.PID(ctx, id)
}

// A kill that lands while WatchDeaths is reading the node's PID is the
// fault's death, not an unexpected one (CI saw "node 2 died and no fault
// killed it" for a deliberate kill of Queen's database, on a machine so
// busy that the PID read was slow).
func TestKillDuringThePIDReadIsNoUnexpectedDeath(t *testing.T) {
	d, topic := kfakeDriver(t)
	nodes := &slowPID{fakeNodes: newFakeNodes(1, 2, 3), node: 2, entered: make(chan struct{}), release: make(chan struct{})}
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { in.WatchDeaths(ctx); close(done) }()
	select {
	case <-nodes.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchDeaths never read node 2's PID")
	}
	if rec := in.Apply(ctx, Step{Action: Kill, Target: Target{Kind: Node, Node: 2}}); rec.Result != Applied {
		t.Fatalf("kill: %+v", rec)
	}
	close(nodes.release)
	time.Sleep(200 * time.Millisecond) // several more polls
	cancel()
	<-done
	for _, r := range in.Records() {
		if r.Action == UnexpectedDeath {
			t.Fatalf("the killed node was reported as an unexpected death: %+v", r)
		}
	}
}

// A node that dies unexpectedly is reported once while it stays dead,
// and again if it comes back and dies a second time: one record per
// incident.
func TestEachUnexpectedDeathReportedOnce(t *testing.T) {
	nodes := newFakeNodes(1, 2, 3)
	in := &Injector{Nodes: nodes, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { in.WatchDeaths(ctx); close(done) }()
	deaths := func() int {
		n := 0
		for _, r := range in.Records() {
			if r.Action == UnexpectedDeath && r.Node == 3 {
				n++
			}
		}
		return n
	}
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); deaths() < want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d deaths of node 3 reported, want %d: %+v", deaths(), want, in.Records())
			}
		}
	}
	// WatchDeaths polls every 500ms at least: 1.2 s is two polls or more.
	const polls = 1200 * time.Millisecond
	nodes.die(3)
	waitFor(1)
	time.Sleep(polls)
	if n := deaths(); n != 1 {
		t.Fatalf("a node that stayed dead reported %d times", n)
	}
	if err := nodes.Start(ctx, 3); err != nil {
		t.Fatal(err)
	}
	time.Sleep(polls)
	nodes.die(3)
	waitFor(2)
	cancel()
	<-done
}

// A node that dies while a disk-error is in force on it stopped on the
// I/O errors it was given (Kafka halts when its only log dir fails): the
// fault's doing, recorded as such, with its start journaled for the
// heal; a node without disk errors dying at the same time is still an
// unexpected death.
func TestDeathUnderDiskErrorIsTheFaults(t *testing.T) {
	nodes := newFakeNodes(1, 2, 3)
	in := &Injector{Nodes: nodes, Poll: 20 * time.Millisecond}
	in.init()
	if _, err := in.Journal.Add(Undo{Kind: UndoDiskError, Node: 2, Why: "disk-error write on node 2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { in.WatchDeaths(ctx); close(done) }()
	nodes.die(2)
	nodes.die(3)
	seen := func() (died, unexpected map[int32]int) {
		died, unexpected = map[int32]int{}, map[int32]int{}
		for _, r := range in.Records() {
			switch r.Action {
			case DiedOnDiskError:
				died[r.Node]++
			case UnexpectedDeath:
				unexpected[r.Node]++
			}
		}
		return died, unexpected
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		died, unexpected := seen()
		if died[2] == 1 && unexpected[3] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("records %+v: want node 2 died on its disk errors and node 3 an unexpected death", in.Records())
		}
	}
	time.Sleep(1200 * time.Millisecond) // two polls more: each reported once
	cancel()
	<-done
	died, unexpected := seen()
	if died[2] != 1 || unexpected[2] != 0 || unexpected[3] != 1 || died[3] != 0 {
		t.Errorf("died on disk errors %v, unexpected %v", died, unexpected)
	}
	if _, ok := in.Journal.Find(UndoStart, 2); !ok {
		t.Error("no start of node 2 journaled: a heal would leave it down")
	}
	if got := ActiveOf(in.Records()); len(got) != 2 {
		t.Errorf("in force: %v, want both nodes down", got)
	}
}

// A node given disk errors that dies after disk-ok, before anything
// started it again, died of them too (PostgreSQL's postmaster ended 4 s
// after disk-ok, its crash recovery having failed under the errors); once
// restarted it is a new process, whose death is unexpected again.
func TestDeathAfterDiskOKBeforeARestartIsTheFaults(t *testing.T) {
	nodes := newFakeNodes(1, 2, 3)
	in := &Injector{Nodes: nodes, Poll: 20 * time.Millisecond}
	in.init()
	in.w.states.hitByDisk(2) // what disk-error node:2 does; its disk-ok came since
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { in.WatchDeaths(ctx); close(done) }()
	waitRecord := func(a Action) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			for _, r := range in.Records() {
				if r.Action == a && r.Node == 2 {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s of node 2: %+v", a, in.Records())
			}
		}
	}
	nodes.die(2)
	waitRecord(DiedOnDiskError)
	if rec := in.Apply(ctx, Step{Action: Restart, Target: Target{Kind: Node, Node: 2}}); rec.Result != Applied {
		t.Fatalf("restart: %+v", rec)
	}
	if _, ok := in.Journal.Find(UndoStart, 2); ok {
		t.Error("the restart left the start journaled at the death pending")
	}
	time.Sleep(1200 * time.Millisecond) // WatchDeaths sees it run again (it polls every 500 ms at least)
	nodes.die(2)
	waitRecord(UnexpectedDeath)
	cancel()
	<-done
}
