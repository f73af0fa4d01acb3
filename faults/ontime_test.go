package faults

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// hangingDriver describes a fixed cluster, and like a broker's metadata
// read that asks every node, hangs until its deadline while any node is
// paused.
type hangingDriver struct {
	drivers.Driver
	nodes *fakeNodes
	mu    sync.Mutex
	reads int
}

func (d *hangingDriver) Name() string { return "hanging" }

func (d *hangingDriver) Topology(ctx context.Context, topic string) (drivers.Topology, error) {
	d.mu.Lock()
	d.reads++
	d.mu.Unlock()
	d.nodes.mu.Lock()
	paused := false
	for _, p := range d.nodes.paused {
		paused = paused || p
	}
	d.nodes.mu.Unlock()
	if paused {
		<-ctx.Done()
		return drivers.Topology{}, ctx.Err()
	}
	return drivers.Topology{At: time.Now(), Controller: 3,
		Nodes: []drivers.Node{{ID: 1}, {ID: 2}, {ID: 3}},
		Partitions: []drivers.PartitionState{
			{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
			{Partition: 1, Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2, 3}},
		}}, nil
}

// slowStopNodes takes stopDelay to stop a node, as a clean shutdown does.
type slowStopNodes struct {
	*fakeNodes
	stopDelay time.Duration
}

func (s slowStopNodes) Stop(ctx context.Context, id int32, grace time.Duration) error {
	time.Sleep(s.stopDelay)
	return s.fakeNodes.Stop(ctx, id, grace)
}

// Every fault fires within 100 ms of its due time while a paused node
// makes every topology read hang to its deadline, and while a slow stop
// of another node is still going on; an action on a node still waits for
// the earlier action on the same node.
func TestFaultsFireOnTimeWhileANodeHangs(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		// want: per record in order of due time, action=result@node
		want string
	}{
		{"pause then kill by role and by ID",
			"at=3200ms pause node:1; at=3400ms kill leader:t/1; at=3500ms kill node:3; at=3600ms resume node:1",
			"pause=applied@1 kill=applied@2 kill=applied@3 resume=applied@1"},
		{"pause then kill the controller",
			"at=3200ms pause node:1; at=3300ms kill controller; at=3500ms resume node:1",
			"pause=applied@1 kill=applied@3 resume=applied@1"},
		{"a slow stop delays only its own node",
			"at=3000ms stop node:2; at=3100ms pause node:1; at=3200ms kill node:3; at=3300ms resume node:1; at=3400ms restart node:2",
			"stop=applied@2 pause=applied@1 kill=applied@3 resume=applied@1 restart=applied@2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := newFakeNodes(1, 2, 3)
			d := &hangingDriver{nodes: nodes}
			in := &Injector{Nodes: slowStopNodes{nodes, 800 * time.Millisecond}, Topic: "t", Driver: d, Poll: 50 * time.Millisecond}
			steps, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			in.Run(ctx, start, steps)
			recs := in.Records()
			byDue := map[time.Time]Record{}
			for _, r := range recs {
				byDue[r.Due] = r
			}
			var got []string
			for _, st := range steps {
				r, ok := byDue[start.Add(st.At)]
				if !ok {
					t.Fatalf("no record due at %s: %+v", st.At, recs)
				}
				got = append(got, string(r.Action)+"="+string(r.Result)+"@"+strconv.Itoa(int(r.Node)))
				slip := r.Slip()
				onItsOwn := !(st.Action == Restart && st.Target.Node == 2) // waits for the stop of node 2
				if onItsOwn && (slip < 0 || slip > 100*time.Millisecond) {
					t.Errorf("%s fired %s after it was due (want within 100ms)", st, slip)
				}
				if !onItsOwn && slip < 300*time.Millisecond { // the stop ends 400 ms after the restart is due
					t.Errorf("%s fired %s after it was due: it did not wait for the stop of its node", st, slip)
				}
				if st.Target.needsTopology() && r.TopologyAgeMs <= 0 {
					t.Errorf("%s: the record does not say how old its topology was", st)
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("records %s, want %s", g, tc.want)
			}
		})
	}
}
