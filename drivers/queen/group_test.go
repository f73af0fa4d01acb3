package queen

import (
	"strings"
	"testing"
)

// TestCommitPromise: an ack is durable only when PostgreSQL fsyncs the
// commit's WAL before it answers.
func TestCommitPromise(t *testing.T) {
	for _, c := range []struct {
		fsync, syncCommit string
		durable           bool
		says              string
	}{
		{"on", "on", true, "fsynced before the answer"},
		{"on", "local", true, "fsynced before the answer"},
		{"on", "off", false, "before its WAL was fsynced"},
		{"off", "on", false, "never fsynced"},
	} {
		p := commitPromise(c.fsync, c.syncCommit)
		if p.Durable != c.durable || !strings.Contains(p.Meaning, c.says) {
			t.Errorf("fsync=%s synchronous_commit=%s: %+v, want durable %v saying %q", c.fsync, c.syncCommit, p, c.durable, c.says)
		}
	}
}
