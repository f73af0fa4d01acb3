package verifier

import (
	"strings"
	"testing"
)

// A kill proof says what it could not prove: an inode the nodes did not
// report is unknown, not a changed data dir; the same PID is no death.
func TestKillProofString(t *testing.T) {
	tests := []struct {
		kp        KillProof
		want, not []string
	}{
		{KillProof{OldPID: 10, NewPID: 11, InodeBefore: 7, InodeAfter: 7, SameDataDir: true, SurvivorsUnchanged: true, Restarts: 1},
			[]string{"PID 10 -> 11,", "data dir inode 7 -> 7 (same: true)"}, []string{"unknown", "same process"}},
		{KillProof{OldPID: 10, NewPID: 10, SurvivorsUnchanged: true, Restarts: 1},
			[]string{"PID 10 -> 10 (the same process: no process died)", "data dir inode unknown"}, []string{"same: false"}},
		{KillProof{OldPID: 10, NewPID: 11, InodeBefore: 7, InodeAfter: 8},
			[]string{"data dir inode 7 -> 8 (same: false)"}, nil},
	}
	for _, tc := range tests {
		got := tc.kp.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%q says %q", got, n)
			}
		}
	}
}
