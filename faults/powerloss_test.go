package faults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// losingNodes is fakeNodes whose disks can lose unsynced writes. It logs
// every signal, loss and start in order, so that a test can check that no
// loss happens under a live process and no start before the loss.
type losingNodes struct {
	*fakeNodes
	events []string
	failOn int32
}

func (l *losingNodes) Signal(ctx context.Context, id int32, sig syscall.Signal) (int, error) {
	pid, err := l.fakeNodes.Signal(ctx, id, sig)
	l.log("signal %d %v", id, sig)
	return pid, err
}

func (l *losingNodes) Start(ctx context.Context, id int32) error {
	l.log("start %d", id)
	return l.fakeNodes.Start(ctx, id)
}

func (l *losingNodes) CanLoseUnsynced(int32) error { return nil }

func (l *losingNodes) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	if pid, _ := l.PID(ctx, id); pid != 0 {
		return "", fmt.Errorf("node %d still runs", id)
	}
	l.log("lose %d", id)
	if id == l.failOn {
		return "", fmt.Errorf("control socket gone")
	}
	return fmt.Sprintf("node %d lost 3 files", id), nil
}

func (l *losingNodes) log(format string, args ...any) {
	l.mu.Lock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func TestParsePowerLoss(t *testing.T) {
	steps, err := ParseSchedule("at=5s power-loss all; at=9s power-loss leader:t/0")
	if err != nil {
		t.Fatal(err)
	}
	if got := steps[0].String() + "; " + steps[1].String(); got != "at=5s power-loss all; at=9s power-loss leader:t/0" {
		t.Fatalf("parsed %q", got)
	}
	for _, bad := range []string{"at=5s power-loss", "at=5s kill all", "at=5s power-loss topic:t", "at=5s power-loss all:x"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPowerLossAllOrder(t *testing.T) {
	nodes := &losingNodes{fakeNodes: newFakeNodes(1, 2, 3), failOn: -1}
	d, topic := kfakeDriver(t)
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d}
	rec := in.Apply(context.Background(), Step{Action: PowerLoss, Target: Target{Kind: All}})
	if rec.Result != "applied" {
		t.Fatalf("power-loss all: %s %s", rec.Result, rec.Error)
	}
	want := []string{"signal 1 killed", "signal 2 killed", "signal 3 killed", "lose", "lose", "lose", "start 1", "start 2", "start 3"}
	if len(nodes.events) != len(want) {
		t.Fatalf("events %v", nodes.events)
	}
	for i, e := range nodes.events {
		if !strings.HasPrefix(e, want[i]) {
			t.Fatalf("event %d = %q, want %q (all: %v)", i, e, want[i], nodes.events)
		}
	}
	for _, id := range []int32{1, 2, 3} {
		if rec.PIDs[id] == 0 || rec.Restarted[id] == 0 || rec.PIDs[id] == rec.Restarted[id] {
			t.Errorf("node %d: PID %d -> %d", id, rec.PIDs[id], rec.Restarted[id])
		}
		if rec.Lost[id] != fmt.Sprintf("node %d lost 3 files", id) {
			t.Errorf("node %d loss %q", id, rec.Lost[id])
		}
	}
	if _, pending := in.Journal.Pending(); len(pending) != 0 {
		t.Fatalf("journal still holds %v after the restarts", pending)
	}
}

func TestPowerLossFailureIsHealed(t *testing.T) {
	nodes := &losingNodes{fakeNodes: newFakeNodes(1, 2, 3), failOn: 2}
	d, topic := kfakeDriver(t)
	in := &Injector{Nodes: nodes, Topic: topic, Driver: d}
	rec := in.Apply(context.Background(), Step{Action: PowerLoss, Target: Target{Kind: Node, Node: 2}})
	if rec.Result != "failed" || !strings.Contains(rec.Error, "control socket gone") {
		t.Fatalf("record %s %q", rec.Result, rec.Error)
	}
	if pid, _ := nodes.PID(context.Background(), 2); pid != 0 {
		t.Fatalf("node 2 started after a failed loss: its disk was not cut back")
	}
	healed, err := in.Heal(context.Background())
	if err != nil || len(healed) != 1 {
		t.Fatalf("heal: %v %v", healed, err)
	}
	if pid, _ := nodes.PID(context.Background(), 2); pid == 0 {
		t.Fatal("heal did not start node 2")
	}
}

func TestPowerLossNeedsLosingNodes(t *testing.T) {
	d, topic := kfakeDriver(t)
	in := &Injector{Nodes: newFakeNodes(1, 2, 3), Topic: topic, Driver: d}
	rec := in.Apply(context.Background(), Step{Action: PowerLoss, Target: Target{Kind: All}})
	if rec.Result != "failed" || !strings.Contains(rec.Error, "--lazyfs") {
		t.Fatalf("record %s %q", rec.Result, rec.Error)
	}
	for _, id := range []int32{1, 2, 3} {
		if pid, _ := in.Nodes.PID(context.Background(), id); pid == 0 {
			t.Fatalf("node %d was killed although it cannot lose unsynced writes", id)
		}
	}
}
