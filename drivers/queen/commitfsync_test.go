package queen

import (
	"strings"
	"testing"
)

// An ack's WAL is fsynced before the answer only with fsync on and
// synchronous_commit anything but off; the commit promise agrees.
func TestCommitFsynced(t *testing.T) {
	for _, tc := range []struct {
		fsync, sync string
		want        bool
	}{
		{"on", "on", true},
		{"on", "local", true},
		{"on", "remote_write", true},
		{"on", "remote_apply", true},
		{"on", "off", false},
		{"off", "on", false},
		{"off", "off", false},
	} {
		if got := commitFsynced(tc.fsync, tc.sync); got != tc.want {
			t.Errorf("fsync=%s synchronous_commit=%s: %v, want %v", tc.fsync, tc.sync, got, tc.want)
		}
		if p := commitPromise(tc.fsync, tc.sync); p.Durable != tc.want {
			t.Errorf("fsync=%s synchronous_commit=%s: promise durable %v, want %v (%s)", tc.fsync, tc.sync, p.Durable, tc.want, p.Meaning)
		}
	}
}

// SetCommitFsync accepts the value in force and otherwise names what to
// change: synchronous_commit by a clean restart, or fsync itself when it
// is off (synchronous_commit on would fsync nothing then).
func TestSwitchErr(t *testing.T) {
	for _, tc := range []struct {
		fsync, sync string
		on          bool
		want        string // "" no error
	}{
		{"on", "on", true, ""},
		{"on", "off", false, ""},
		{"off", "on", false, ""},
		{"on", "off", true, "--synchronous-commit on"},
		{"on", "on", false, "--synchronous-commit off"},
		{"off", "on", true, "set fsync = on in its postgresql.conf"},
		{"off", "off", true, "set fsync = on in its postgresql.conf"},
	} {
		err := switchErr(tc.fsync, tc.sync, tc.on)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("fsync=%s synchronous_commit=%s, on %v: %v, want %q", tc.fsync, tc.sync, tc.on, err, tc.want)
		}
	}
}
