package faults

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// coordDriver names node 2 the coordinator of every group.
type coordDriver struct{ drivers.Driver }

func (coordDriver) GroupCoordinator(_ context.Context, group string) (int32, error) { return 2, nil }

// restarter counts restart-consumers.
type restarter struct{ n atomic.Int64 }

func (r *restarter) RestartMembers(context.Context) (string, error) {
	r.n.Add(1)
	return "restarted", nil
}

// Faults aimed at the consumer group: refused before the load where they
// cannot run (a driver that cannot find a coordinator, a run without a
// group), each with its reason; where they can, kill coordinator:g kills
// the node the driver names, and restart-consumers restarts the group.
func TestGroupFaults(t *testing.T) {
	schedule := func(s string) []Step {
		steps, err := ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	for _, tc := range []struct {
		name   string
		driver drivers.Driver
		group  string
		steps  string
		want   string
	}{
		{"coordinator on a driver that cannot find one", namedDriver{}, "", "at=1s kill coordinator:g", "the plain driver cannot say which node coordinates a group"},
		{"coordinator on one that can", coordDriver{namedDriver{}}, "", "at=1s kill coordinator:g", ""},
		{"power loss of the coordinator needs lazyfs too", coordDriver{namedDriver{}}, "", "at=1s power-loss coordinator:g", "cannot lose unsynced writes"},
		{"restart-consumers without a group", namedDriver{}, "", "at=1s restart-consumers", "give --group"},
		{"restart-consumers with one", namedDriver{}, "g", "at=1s restart-consumers", ""},
	} {
		err := Preflight(context.Background(), Env{Nodes: newFakeNodes(1, 2, 3), Driver: tc.driver, GroupName: tc.group}, schedule(tc.steps))
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: preflight %v, want %q", tc.name, err, tc.want)
		}
	}

	nodes := newFakeNodes(1, 2, 3)
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := &restarter{}
	d, topic := kfakeDriver(t)
	in := &Injector{Nodes: nodes, Topic: topic, Driver: coordDriver{d}, Ledger: l, Group: r}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in.Run(ctx, time.Now(), schedule("at=0s kill coordinator:g; at=10ms restart-consumers"))
	recs := in.Records()
	if len(recs) < 2 || recs[0].Result != Applied || recs[0].Node != 2 || recs[0].Target != "coordinator:g" || recs[1].Result != Applied {
		t.Fatalf("records: %+v", recs)
	}
	if !strings.Contains(strings.Join(nodes.signals, " "), "2:killed") || r.n.Load() != 1 {
		t.Fatalf("signals %v, restarts %d", nodes.signals, r.n.Load())
	}
}
