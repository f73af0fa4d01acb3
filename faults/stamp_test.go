package faults

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// stampedNodes notes when each signal was sent.
type stampedNodes struct {
	*fakeNodes
	sentAt time.Time
}

func (s *stampedNodes) Signal(ctx context.Context, id int32, sig syscall.Signal) (int, error) {
	s.sentAt = time.Now()
	return s.fakeNodes.Signal(ctx, id, sig)
}

func (s *stampedNodes) Stop(ctx context.Context, id int32, grace time.Duration) error {
	s.sentAt = time.Now() // SIGTERM
	return s.fakeNodes.Stop(ctx, id, grace)
}

// A fault's At is the time of its signal, not of the journal write before
// it: with the journal's fsync slow (held here for 100 ms), At once came
// that much before the kill, and acks the leader sent in between passed
// for first acks after the kill (TestRealNATSLeaderKill: a stream that
// stalled 6 s showed a first ack 7 ms after the kill).
func TestAtIsTheSignalsTime(t *testing.T) {
	for _, a := range []Action{Kill, Pause, Stop} {
		t.Run(string(a), func(t *testing.T) {
			nodes := &stampedNodes{fakeNodes: newFakeNodes(1, 2, 3)}
			j, _ := OpenJournal("")
			in := &Injector{Nodes: nodes, Journal: j}
			j.mu.Lock()
			go func() {
				time.Sleep(100 * time.Millisecond) // a slow fsync of heal.jsonl
				j.mu.Unlock()
			}()
			rec := in.Apply(context.Background(), Step{Action: a, Target: Target{Kind: Node, Node: 1}})
			if rec.Result != Applied {
				t.Fatalf("%s: %s %s", a, rec.Result, rec.Error)
			}
			if d := nodes.sentAt.Sub(rec.At); d < 0 || d > 50*time.Millisecond {
				t.Fatalf("%s: At is %s before the signal", a, d)
			}
		})
	}
}
