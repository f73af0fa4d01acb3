package nats

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGroupPromise: an ack is durable when the consumer has more than
// one replica, and the meaning says whether it was fsynced before its
// answer, as groupCommitFsync does.
func TestGroupPromise(t *testing.T) {
	always := []nodeSync{{Node: 1, Always: true}, {Node: 2, Always: true}, {Node: 3, Always: true}}
	def := []nodeSync{{Node: 1, Interval: 2 * time.Minute}, {Node: 2, Interval: 2 * time.Minute}, {Node: 3, Interval: 2 * time.Minute}}
	for _, c := range []struct {
		r       int
		mem     bool
		sync    []nodeSync
		durable bool
		says    string
	}{
		{3, false, always, true, "R3 Raft group; fsynced before its answer: yes (an R3 consumer answers an ack once its Raft group committed it, each log append fsynced first"},
		{3, false, def, true, "fsynced before its answer: no (an R3 consumer answers an ack once its Raft group committed it, in logs fsynced only every sync_interval (node 1: sync_interval=2m0s"},
		{1, false, always, false, "one server (R1): the loss of that server loses it; fsynced before its answer: no (an R1 consumer answers an ack before it writes its state file"},
		{3, true, always, true, "fsynced before its answer: no (the consumer keeps its state in memory (mem_storage)"},
		{2, false, nil, true, "R2 Raft group"},
		{3, false, []nodeSync{{Node: 1, Err: errors.New("refused")}}, true, "R3 Raft group"},
	} {
		p := groupPromise(c.r, c.mem, c.sync)
		if p.Durable != c.durable || !strings.Contains(p.Meaning, c.says) {
			t.Errorf("R%d mem %v %v: %+v, want durable %v saying %q", c.r, c.mem, c.sync, p, c.durable, c.says)
		}
		if c.sync == nil || c.sync[0].Err != nil {
			if strings.Contains(p.Meaning, "fsynced") {
				t.Errorf("R%d: a meaning without the servers' setting claims an fsync: %s", c.r, p.Meaning)
			}
		}
	}
}

// TestCheckGroup refuses names a durable consumer cannot have.
func TestCheckGroup(t *testing.T) {
	for name, ok := range map[string]bool{"g1": true, "orders-group_2": true, "": false, "a.b": false, "a b": false, "a>": false} {
		if err := checkGroup(name); (err == nil) != ok {
			t.Errorf("checkGroup(%q) = %v", name, err)
		}
	}
}
