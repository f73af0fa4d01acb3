package nats

import (
	"strings"
	"testing"
)

// TestGroupPromise: an ack is durable when the consumer has more than
// one replica, and the meaning says how it is fsynced.
func TestGroupPromise(t *testing.T) {
	for _, c := range []struct {
		r       int
		sync    string
		durable bool
		says    string
	}{
		{3, "fsynced on every write", true, "R3 Raft group; fsynced on every write"},
		{1, "", false, "one server (R1)"},
		{2, "fsynced only every sync_interval", true, "R2"},
	} {
		p := groupPromise(c.r, c.sync)
		if p.Durable != c.durable || !strings.Contains(p.Meaning, c.says) {
			t.Errorf("R%d %q: %+v, want durable %v saying %q", c.r, c.sync, p, c.durable, c.says)
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
