package queen

import "testing"

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
