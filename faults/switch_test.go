package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// modal is a driver with one broker-wide mode, maintenance.
type modal struct {
	namedDriver
	on   bool
	sets []bool
}

func (m *modal) Switches() []string { return []string{"maintenance"} }
func (m *modal) Switch(_ context.Context, name string) (bool, error) {
	if name != "maintenance" {
		return false, fmt.Errorf("no mode %s", name)
	}
	return m.on, nil
}
func (m *modal) SetSwitch(_ context.Context, name string, on bool) error {
	m.on = on
	m.sets = append(m.sets, on)
	return nil
}

// namedNodes are fake nodes with names.
type namedNodes struct{ *fakeNodes }

func (namedNodes) NodeNames() map[int32]string { return map[int32]string{1: "queen", 2: "db"} }

// <mode>-on and <mode>-off parse with the cluster as their target; a bare
// word is a node's name; both print back as they parse.
func TestParseSwitchesAndNamedTargets(t *testing.T) {
	steps, err := ParseSchedule("at=1s maintenance-on; at=2s kill db; at=3s restart db; at=4s maintenance-off cluster; at=5s power-loss db")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"at=1s maintenance-on cluster", "at=2s kill db", "at=3s restart db", "at=4s maintenance-off cluster", "at=5s power-loss db"}
	for i, s := range steps {
		if s.String() != want[i] {
			t.Errorf("step %d = %q, want %q", i, s, want[i])
		}
	}
	for _, bad := range []string{"at=1s maintenance-on node:1", "at=1s kill cluster", "at=1s fsync-on cluster", "at=1s kill Db!"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A mode is journaled before it is switched, healed back to what it was,
// and a switch back by the schedule itself leaves nothing to heal.
func TestSwitchJournaledAndHealed(t *testing.T) {
	ctx := context.Background()
	on, _ := ParseSchedule("at=1s maintenance-on")
	off, _ := ParseSchedule("at=1s maintenance-off")
	d := &modal{}
	in := &Injector{Driver: d}
	if rec := in.Apply(ctx, on[0]); rec.Result != Applied {
		t.Fatalf("maintenance-on: %+v", rec)
	}
	if !d.on || !strings.Contains(in.InForce(), "maintenance-on") {
		t.Fatalf("on %v, in force %q", d.on, in.InForce())
	}
	healed, err := in.Heal(ctx)
	if err != nil || d.on || len(healed) != 1 || !strings.Contains(healed[0], "turn maintenance off") {
		t.Fatalf("heal: %v %v, mode on %v", healed, err, d.on)
	}
	in.Apply(ctx, on[0])
	in.Apply(ctx, off[0])
	if in.InForce() != "" {
		t.Fatalf("switched back by the schedule, still in force: %q", in.InForce())
	}
	if healed, _ := in.Heal(ctx); len(healed) != 0 {
		t.Fatalf("nothing to heal, healed %v", healed)
	}
}

// Preflight: a mode the driver lacks, a node name the cluster lacks, are
// refused before anything runs; power loss of a named node asks that node.
func TestPreflightSwitchesAndNames(t *testing.T) {
	schedule := func(s string) []Step {
		steps, err := ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	nodes := namedNodes{newFakeNodes(1, 2, 3)}
	tests := []struct {
		name  string
		env   Env
		steps []Step
		want  string
	}{
		{"mode of a driver with modes", Env{Driver: &modal{}}, schedule("at=1s maintenance-on"), ""},
		{"mode the driver lacks", Env{Driver: &modal{}}, schedule("at=1s standby-on"), `no mode "standby"`},
		{"driver without modes", Env{Driver: namedDriver{}}, schedule("at=1s maintenance-on"), "no broker-wide modes"},
		{"named node", Env{Nodes: nodes, Driver: namedDriver{}}, schedule("at=1s kill db"), ""},
		{"unknown name", Env{Nodes: nodes, Driver: namedDriver{}}, schedule("at=1s kill broker7"), `no node is named "broker7" (the nodes of fake are named db, queen)`},
		{"names on unnamed nodes", Env{Nodes: newFakeNodes(1, 2, 3), Driver: namedDriver{}}, schedule("at=1s kill db"), "have no names"},
		{"power loss of a named node not on lazyfs", Env{Nodes: picky{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, Driver: namedDriver{}}, schedule("at=1s power-loss db"), "have no names"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Preflight(context.Background(), tc.env, tc.steps)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
	var _ drivers.Switcher = (*modal)(nil)
}

// slowStart are fake nodes whose start takes a while, and that say when
// the last one ended.
type slowStart struct {
	*fakeNodes
	took    time.Duration
	mu      sync.Mutex
	started time.Time
}

func (s *slowStart) Start(ctx context.Context, id int32) error {
	time.Sleep(s.took)
	err := s.fakeNodes.Start(ctx, id)
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	return err
}

// timedModal records when its mode was switched.
type timedModal struct {
	modal
	at time.Time
}

func (m *timedModal) SetSwitch(ctx context.Context, name string, on bool) error {
	m.at = time.Now()
	return m.modal.SetSwitch(ctx, name, on)
}

// A broker-wide switch due while an earlier step still restarts a node
// waits for it (the broker's API cannot answer before), fires late and
// says so, instead of failing on time.
func TestSwitchWaitsForEarlierNodeActions(t *testing.T) {
	nodes := &slowStart{fakeNodes: newFakeNodes(1, 2, 3), took: 300 * time.Millisecond}
	kd, topic := kfakeDriver(t)
	d := &timedModal{modal: modal{namedDriver: namedDriver{kd}}}
	in := &Injector{Nodes: nodes, Driver: d, Topic: topic}
	steps, err := ParseSchedule("at=0s kill node:1; at=10ms restart node:1; at=50ms maintenance-on")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in.Run(ctx, time.Now(), steps)
	recs := in.Records()
	if len(recs) != 3 || recs[2].Result != Applied {
		t.Fatalf("records %+v", recs)
	}
	nodes.mu.Lock()
	started := nodes.started
	nodes.mu.Unlock()
	if started.IsZero() || d.at.Before(started) {
		t.Fatalf("the switch at %s came before the restart ended at %s", d.at.Format("15:04:05.000"), started.Format("15:04:05.000"))
	}
	if late := recs[2].At.Sub(recs[2].Due); late < 200*time.Millisecond {
		t.Fatalf("the switch's record says it was %s late; it waited for the restart", late)
	}
}

// startingModal does not answer (drivers.ErrUnreachable) until up, as a
// server still starting after its restart.
type startingModal struct {
	timedModal
	up time.Time
}

func (m *startingModal) Switch(ctx context.Context, name string) (bool, error) {
	if time.Now().Before(m.up) {
		return false, fmt.Errorf("GET /api/v1/system/maintenance: %w: connection refused", drivers.ErrUnreachable)
	}
	return m.timedModal.Switch(ctx, name)
}

// A switch waits for a broker that does not answer yet, then applies:
// under load Queen's server answered 23 s after its restart, and a
// maintenance-off due meanwhile failed with "connection refused", leaving
// maintenance mode on for the rest of the load.
func TestSwitchWaitsForTheBrokerToAnswer(t *testing.T) {
	kd, topic := kfakeDriver(t)
	d := &startingModal{timedModal: timedModal{modal: modal{namedDriver: namedDriver{kd}}}, up: time.Now().Add(600 * time.Millisecond)}
	in := &Injector{Nodes: newFakeNodes(1, 2, 3), Driver: d, Topic: topic}
	rec := in.Apply(context.Background(), Step{Action: "maintenance-on", Target: Target{Kind: Cluster}})
	if rec.Result != Applied || !d.on {
		t.Fatalf("%s %s, mode on %v", rec.Result, rec.Error, d.on)
	}
	if d.at.Before(d.up) {
		t.Fatalf("switched at %s, before the broker answered at %s", d.at.Format("15:04:05.000"), d.up.Format("15:04:05.000"))
	}
}
