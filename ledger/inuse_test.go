package ledger

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// heldLock answers Lock as the system does when another process holds
// the lock: EAGAIN, words without "lock" in them.
type heldLock struct{ vfs.FS }

func (heldLock) Lock(string) (io.Closer, error) { return nil, syscall.EAGAIN }

// A ledger whose lock is held (a run still writing it, verify started
// beside it) is in use, not damaged. Found on kfake: `verify` and
// `report` during a run said "the ledger is damaged: Pebble cannot open
// ...: resource temporarily unavailable ... No verdict can be given from
// it" (fcntl's EAGAIN has no "lock" in its text), which invites the user
// to throw away a run that is fine.
func TestOpenReadOnlyInUseIsNotDamage(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	must(t, err)
	must(t, l.Record(Send, Event{Producer: 1, Seq: 1}))
	must(t, l.Close())
	tests := []struct {
		name    string
		fs      vfs.FS
		inUse   bool
		damaged bool
	}{
		{"lock held by another process", heldLock{vfs.Default}, true, false},
		{"lock free", vfs.Default, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenReadOnly(dir, Options{FS: tc.fs})
			if err == nil {
				defer r.Close()
			}
			inUse := err != nil && strings.Contains(err.Error(), "another ackcheck is using this run directory")
			if inUse != tc.inUse || errors.Is(err, ErrDamaged) != tc.damaged {
				t.Fatalf("OpenReadOnly: %v; want in use %v, damaged %v", err, tc.inUse, tc.damaged)
			}
		})
	}
	// The same process: Pebble's own words.
	w, err := Open(dir, Options{})
	must(t, err)
	defer w.Close()
	if _, err := OpenReadOnly(dir, Options{}); err == nil || errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "another ackcheck is using") {
		t.Fatalf("OpenReadOnly beside a writer: %v", err)
	}
}
