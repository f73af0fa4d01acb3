package ledger

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// checkCommits itself, not only its decoder: a bad entry anywhere before
// the last whole one is damage, reported at the first bad entry's byte; a
// bad last entry is a torn write and ignored; the database may be level
// with or ahead of the record (a crash between Pebble's commit and the
// record's), never behind it in fragments or in events.
func TestCheckCommitsEdges(t *testing.T) {
	good := func(fragNo uint32, events uint64) []byte {
		return commitEntry{fragNo: fragNo, events: events, flushes: fragNo}.encode()
	}
	bad := func(b []byte) []byte {
		b = bytes.Clone(b)
		b[9] ^= 0x10 // inside events: the checksum fails
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	for _, tc := range []struct {
		name           string
		data           []byte
		fragNo         uint32
		events         uint64
		wantDamaged    bool
		wantInErr      string
		wantLastFragNo uint32 // decodeCommits' answer, when ok
	}{
		{name: "no record", data: nil, fragNo: 0, events: 0},
		{name: "level", data: cat(good(0, 0), good(2, 20)), fragNo: 2, events: 20, wantLastFragNo: 2},
		{name: "database ahead", data: cat(good(0, 0), good(2, 20)), fragNo: 3, events: 30, wantLastFragNo: 2},
		{name: "fewer fragments", data: cat(good(0, 0), good(2, 20)), fragNo: 1, events: 20, wantDamaged: true, wantInErr: "20 events in 2 fragments", wantLastFragNo: 2},
		{name: "fewer events", data: cat(good(0, 0), good(2, 20)), fragNo: 2, events: 19, wantDamaged: true, wantInErr: "holds 19 events", wantLastFragNo: 2},
		{name: "first entry bad", data: cat(bad(good(0, 0)), good(2, 20)), fragNo: 2, events: 20, wantDamaged: true, wantInErr: "bad entry at byte 0", wantLastFragNo: 2},
		{name: "first two bad", data: cat(bad(good(0, 0)), bad(good(1, 10)), good(2, 20)), fragNo: 2, events: 20, wantDamaged: true, wantInErr: "bad entry at byte 0", wantLastFragNo: 2},
		{name: "middle entry bad", data: cat(good(0, 0), bad(good(1, 10)), good(2, 20)), fragNo: 2, events: 20, wantDamaged: true, wantInErr: "bad entry at byte 24", wantLastFragNo: 2},
		{name: "whole last entry bad", data: cat(good(0, 0), good(1, 10), bad(good(2, 20))), fragNo: 1, events: 10, wantLastFragNo: 1},
		{name: "torn last entry", data: cat(good(0, 0), good(1, 10), good(2, 20)[:23]), fragNo: 1, events: 10, wantLastFragNo: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if last, ok, _ := decodeCommits(tc.data); ok && last.fragNo != tc.wantLastFragNo {
				t.Errorf("decodeCommits: last entry %+v, want fragNo %d", last, tc.wantLastFragNo)
			}
			err := checkCommits(vfs.NewMem(), "d", tc.data, tc.fragNo, tc.events, "d/000001.log")
			if errors.Is(err, ErrDamaged) != tc.wantDamaged || (err != nil && !tc.wantDamaged) {
				t.Fatalf("checkCommits: %v, want damaged %v", err, tc.wantDamaged)
			}
			if tc.wantDamaged && !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("checkCommits: %v, want it to say %q", err, tc.wantInErr)
			}
		})
	}
}
