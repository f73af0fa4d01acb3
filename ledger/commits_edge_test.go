package ledger

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A reopened ledger appends to its commit record after the last whole
// entry: what the second session committed is vouched for as well, so a
// cut in the second session's write-ahead log is damage, not a shorter
// ledger.
func TestCommitRecordGoesOnAfterAReopen(t *testing.T) {
	dir := t.TempDir()
	session := func(producer uint32) {
		l, err := Open(dir, Options{FlushInterval: time.Hour})
		if err != nil {
			t.Fatalf("open for producer %d: %v", producer, err)
		}
		for s := 0; s < 2000; s++ {
			l.Record(Send, Event{Producer: producer, Seq: uint64(s), Time: int64(s)})
			if s%100 == 99 {
				must(t, l.Flush())
			}
		}
		must(t, l.Close())
	}
	session(1)
	session(2)
	data, err := os.ReadFile(filepath.Join(dir, commitFile))
	must(t, err)
	if last, ok, bad := decodeCommits(data); !ok || bad >= 0 || last.events != 4000 || last.flushes != 40 || len(data) != (1+40)*commitEntrySz {
		t.Fatalf("commit record after two sessions of 20 flushes: %d bytes, last %+v, ok %v, bad at %d", len(data), last, ok, bad)
	}
	wal := walOf(t, dir)
	st, err := os.Stat(wal)
	must(t, err)
	must(t, os.Truncate(wal, st.Size()/10))
	if l, err := Open(dir, Options{}); !errors.Is(err, ErrDamaged) {
		if err == nil {
			l.Close()
		}
		t.Fatalf("the second session's WAL cut to a tenth: %v, want ErrDamaged", err)
	}
}

// A new commit record's directory entry is synced before anything is
// committed: after a crash that keeps only synced data, the record of a
// ledger that committed flushes is still there, vouching for them.
func TestNewCommitRecordSurvivesACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	must(t, fs.MkdirAll("ledger", 0o755))
	dir, err := fs.OpenDir("")
	must(t, err)
	must(t, dir.Sync()) // the ledger's own directory entry is the caller's
	dir.Close()
	l, err := Open("ledger", Options{FS: fs, FlushInterval: time.Hour})
	must(t, err)
	for s := 0; s < 300; s++ {
		l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
		if s%100 == 99 {
			must(t, l.Flush())
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	l.Close()
	f, err := crashed.Open(crashed.PathJoin("ledger", commitFile))
	if err != nil {
		t.Fatalf("the commit record after a crash: %v", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	must(t, err)
	if last, ok, _ := decodeCommits(data); !ok || last.events != 300 {
		t.Fatalf("the commit record after a crash vouches for %+v (ok %v), want 300 events", last, ok)
	}
}

// walFiles names the write-ahead logs in sorted order and adds up their
// sizes (what Open needs room for while Pebble replays them); other files
// are not counted, and a directory without logs names itself.
func TestWalFilesNamesAndSizesTheLogs(t *testing.T) {
	fs := vfs.NewMem()
	must(t, fs.MkdirAll("d", 0o755))
	for name, size := range map[string]int{"000007.log": 100, "000003.log": 50, "MANIFEST-000001": 1000, "000004.sst": 400} {
		f, err := fs.Create(fs.PathJoin("d", name), vfs.WriteCategoryUnspecified)
		must(t, err)
		_, err = f.Write(make([]byte, size))
		must(t, err)
		must(t, f.Close())
	}
	names, n := walFiles(fs, "d")
	if want := filepath.Join("d", "000003.log") + ", " + filepath.Join("d", "000007.log"); names != want || n != 150 {
		t.Fatalf("walFiles = %q, %d bytes; want %q, 150", names, n, want)
	}
	must(t, fs.MkdirAll("empty", 0o755))
	for _, dir := range []string{"empty", "missing"} {
		if names, n := walFiles(fs, dir); names != dir || n != 0 {
			t.Errorf("walFiles(%s) = %q, %d; want the directory's name and 0", dir, names, n)
		}
	}
}
