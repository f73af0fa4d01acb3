package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
)

// picky is a PowerLosser whose listed nodes cannot lose unsynced writes.
type picky struct {
	*fakeNodes
	cannot map[int32]bool
}

func (p picky) CanLoseUnsynced(id int32) error {
	if p.cannot[id] {
		return fmt.Errorf("node %d is not on lazyfs", id)
	}
	return nil
}
func (p picky) LoseUnsynced(context.Context, int32) (string, error) { return "", nil }

// editable is a ConfigEditor whose listed nodes' files cannot be read.
type editable struct {
	*fakeNodes
	unreadable map[int32]bool
}

func (e editable) ReadConfig(_ context.Context, id int32) (string, error) {
	if e.unreadable[id] {
		return "", fmt.Errorf("open /etc/broker.conf: permission denied")
	}
	return "a=1\n", nil
}
func (e editable) WriteConfig(context.Context, int32, string) error { return nil }

// namedDriver is a driver that can do nothing but say its name; the
// embedded nil interface panics if preflight touched anything else.
type namedDriver struct{ drivers.Driver }

func (namedDriver) Name() string { return "plain" }

// topicDriver can change topic settings.
type topicDriver struct{ namedDriver }

func (topicDriver) TopicConfig(context.Context, string, string) (*string, error) { return nil, nil }
func (topicDriver) SetTopicConfig(context.Context, string, string, *string) error {
	return nil
}
func (topicDriver) FsyncSetting() (string, string, string) { return "flush", "1", "max" }

// A schedule that cannot run where it is scheduled is refused before
// anything is applied; one that can passes quietly.
func TestPreflight(t *testing.T) {
	schedule := func(s string) []Step {
		steps, err := ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	down := newFakeNodes(1, 2, 3)
	down.die(2)
	edit := &drivers.ConfigEdit{Setting: "flush", Edit: func(c string, on bool) (string, error) { return c + "flush=1\n", nil }}
	tests := []struct {
		name   string
		nodes  Nodes
		driver drivers.Driver
		edit   *drivers.ConfigEdit
		steps  []Step
		want   string // "" passes
	}{
		{"all run, a kill", newFakeNodes(1, 2, 3), namedDriver{}, nil, schedule("at=1s kill node:1"), ""},
		{"a node does not run", down, namedDriver{}, nil, schedule("at=1s kill node:1"), "node 2: its broker does not run"},
		{"power loss without lazyfs", newFakeNodes(1, 2, 3), namedDriver{}, nil, schedule("at=1s power-loss all"), "cannot lose unsynced writes"},
		{"power loss on lazyfs", picky{newFakeNodes(1, 2, 3), nil}, namedDriver{}, nil, schedule("at=1s power-loss all"), ""},
		{"power loss of a node that is not on lazyfs", picky{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, namedDriver{}, nil, schedule("at=1s power-loss node:2"), "node 2 is not on lazyfs"},
		{"power loss of another node", picky{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, namedDriver{}, nil, schedule("at=1s power-loss node:1"), ""},
		{"a node that is not there", newFakeNodes(1, 2, 3), namedDriver{}, nil, schedule("at=1s kill node:9"), "node 9 is not one of the nodes"},
		{"no cluster for a kill", nil, namedDriver{}, nil, schedule("at=1s kill most-leaders:t"), "needs the cluster it acts on"},
		{"no cluster for power loss all", nil, namedDriver{}, nil, schedule("at=1s power-loss all"), "needs the cluster it acts on"},
		{"topic fsync without an admin API", nil, namedDriver{}, nil, schedule("at=1s fsync-on topic:t"), "cannot change topic settings"},
		{"topic fsync through the admin API", nil, topicDriver{}, nil, schedule("at=1s fsync-on topic:t"), ""},
		{"broker fsync without config files", newFakeNodes(1, 2, 3), namedDriver{}, edit, schedule("at=1s fsync-on brokers"), "config_file"},
		{"broker fsync the broker does not know", editable{newFakeNodes(1, 2, 3), nil}, namedDriver{}, nil, schedule("at=1s fsync-on brokers"), "knows no fsync setting"},
		{"broker fsync with a file that cannot be read", editable{newFakeNodes(1, 2, 3), map[int32]bool{2: true}}, namedDriver{}, edit, schedule("at=1s fsync-off brokers"), "node 2: its configuration file cannot be read"},
		{"broker fsync", editable{newFakeNodes(1, 2, 3), nil}, namedDriver{}, edit, schedule("at=1s fsync-on brokers"), ""},
		{"power loss by role asks every node", picky{newFakeNodes(1, 2, 3), map[int32]bool{3: true}}, namedDriver{}, nil, schedule("at=1s power-loss controller"), "node 3 is not on lazyfs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Preflight(context.Background(), Env{Nodes: tc.nodes, Driver: tc.driver, ConfigFsync: tc.edit}, tc.steps)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
}
