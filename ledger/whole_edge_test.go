package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// wholeLedger writes what TestCheckWholeFiresOnEachHole starts from: a
// PutMeta (flush 0), then flushes 1..5 of 100 sends each, one fragment a
// flush (fragments 0..4). hurt runs on the open ledger before it closes.
func wholeLedger(t *testing.T, dir string, hurt func(t *testing.T, l *Ledger)) {
	t.Helper()
	l, err := Open(dir, Options{FlushInterval: time.Hour})
	must(t, err)
	must(t, l.PutMeta("run", 1))
	for f := 0; f < 5; f++ {
		for s := f * 100; s < f*100+100; s++ {
			l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
		}
		must(t, l.Flush())
	}
	if hurt != nil {
		hurt(t, l)
	}
	must(t, l.Close())
}

// twoFragmentFlush flushes fragmentMax+10 sends of producer 2: one flush
// of two fragments, the first full.
func twoFragmentFlush(t *testing.T, l *Ledger) {
	t.Helper()
	for s := range fragmentMax + 10 {
		l.Record(Send, Event{Producer: 2, Seq: uint64(s)})
	}
	must(t, l.Flush())
}

func sendFragKey(producer uint32, firstSeq uint64, frag uint32) []byte {
	key := make([]byte, 17)
	key[0] = byte(Send)
	binary.BigEndian.PutUint32(key[1:], producer)
	binary.BigEndian.PutUint64(key[5:], firstSeq)
	binary.BigEndian.PutUint32(key[13:], frag)
	return key
}

// checkWhole's edges, each made by hand in the database: a flush record
// that is not 24 bytes under a 5-byte key, a fragment numbered exactly one
// past the last flush's, a fragment whose value holds no event count, and
// the missing fragments counted in the message. Each is refused with what
// it is; the ledger untouched is whole (TestCheckWholeFiresOnEachHole).
func TestCheckWholeEdges(t *testing.T) {
	for _, c := range []struct {
		name    string
		hurt    func(t *testing.T, l *Ledger)
		want    string
		wantErr error
	}{
		{"a flush record one byte short", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(flushKey(2), make([]byte, flushRecordSz-1), pebble.Sync))
		}, "flush record 4600000002 is not one ackcheck wrote", nil},
		{"a flush record under a longer key", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(append(flushKey(5), 0), flushRecord{firstFrag: 5, frags: 0, total: 500}.encode(), pebble.Sync))
		}, "flush record 460000000500 is not one ackcheck wrote", nil},
		{"a fragment numbered one past the last flush's", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(sendFragKey(1, 900, 5), encodeFragment(nil, []Event{{Producer: 1, Seq: 900}}), pebble.Sync))
		}, "fragment 5 (key", nil},
		{"a fragment with no event count", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(sendFragKey(1, 200, 2), nil, pebble.Sync))
		}, "ledger key", errBadFragment},
		{"two fragments gone, counted", func(t *testing.T, l *Ledger) {
			// Flush 6 writes fragments 5 (a full one, sends 0..4095) and 6
			// (4096..4105) of one producer; both go.
			twoFragmentFlush(t, l)
			must(t, l.db.Delete(sendFragKey(2, 0, 5), pebble.Sync))
			must(t, l.db.Delete(sendFragKey(2, fragmentMax, 6), pebble.Sync))
		}, "flush 6 wrote 4106 events in fragments 5 to 6; the database holds 0 of those events (2 fragments missing)", nil},
		{"one of two fragments gone, counted", func(t *testing.T, l *Ledger) {
			twoFragmentFlush(t, l)
			must(t, l.db.Delete(sendFragKey(2, fragmentMax, 6), pebble.Sync))
		}, "flush 6 wrote 4106 events in fragments 5 to 6; the database holds 4096 of those events (1 fragments missing)", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			wholeLedger(t, dir, c.hurt)
			r, err := OpenReadOnly(dir, Options{})
			if err == nil {
				r.Close()
				t.Fatalf("opened, proof %+v; want damage %q", r.Proof(), c.want)
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrDamaged saying %q, got %v", c.want, err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("want %v, got %v", c.wantErr, err)
			}
		})
	}
}

// A fragment of exactly fragmentMax events is one Flush writes (a full
// fragment): the ledger holding it is whole.
func TestFullFragmentIsWhole(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{FlushInterval: time.Hour})
	must(t, err)
	for s := range fragmentMax {
		l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
	}
	must(t, l.Flush())
	must(t, l.Close())
	r, err := OpenReadOnly(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p := r.Proof(); !p.Whole || p.Fragments != 1 || p.Events != fragmentMax {
		t.Fatalf("proof %+v, want whole with 1 fragment of %d events", p, fragmentMax)
	}
}

// The commit record as a crash leaves it is not damage: one flush behind
// the database (ackcheck died between Pebble's commit and the record's
// entry), down to the empty ledger's entry alone after the first commit.
// A bad entry before the last is damage, the first one included, and so
// is a record two flushes behind (TestCheckWholeFiresOnEachHole).
func TestCommitRecordAsACrashLeavesIt(t *testing.T) {
	for _, c := range []struct {
		name    string
		flushes int // 0: only the PutMeta
		keep    int // entries of COMMITTED kept; -1 all
		bad     int // entry whose checksum is broken; -1 none
		flushed uint32
		want    string // "": whole
	}{
		{"untouched", 5, -1, -1, 6, ""},
		{"one flush behind", 5, 6, -1, 6, ""},
		{"first commit without its entry", 0, 1, -1, 1, ""},
		{"a bad torn last entry", 5, -1, 6, 6, ""},
		{"first entry bad", 5, -1, 0, 0, "has a bad entry at byte 0"},
		{"second entry bad", 5, -1, 1, 0, "has a bad entry at byte 24"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{FlushInterval: time.Hour})
			must(t, err)
			must(t, l.PutMeta("run", 1))
			for f := 0; f < c.flushes; f++ {
				l.Record(Send, Event{Producer: 1, Seq: uint64(f)})
				must(t, l.Flush())
			}
			must(t, l.Close())
			path := filepath.Join(dir, commitFile)
			data, err := os.ReadFile(path)
			must(t, err)
			if n := len(data) / commitEntrySz; n != c.flushes+2 {
				t.Fatalf("COMMITTED holds %d entries, want %d (the empty ledger's and one a commit)", n, c.flushes+2)
			}
			if c.keep >= 0 {
				data = data[:c.keep*commitEntrySz]
			}
			if c.bad >= 0 {
				data[c.bad*commitEntrySz+4] ^= 1
			}
			must(t, os.WriteFile(path, data, 0o644))
			r, err := OpenReadOnly(dir, Options{})
			if c.want != "" {
				if err == nil {
					r.Close()
					t.Fatalf("opened, proof %+v; want damage %q", r.Proof(), c.want)
				}
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("want ErrDamaged saying %q, got %v", c.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if p := r.Proof(); !p.Whole || p.Flushes != c.flushed {
				t.Fatalf("proof %+v, want whole with %d flushes", p, c.flushed)
			}
		})
	}
}

// A ledger from before flush records whose commit record counts more
// fragments or more events than its database holds lost its tail: damage,
// not a ledger merely unproven. Equal counts are the ledger as it was
// written (TestLedgerWithoutFlushRecordsIsNotProvenWhole).
func TestOldLedgerBehindItsCommitRecord(t *testing.T) {
	for _, c := range []struct {
		name          string
		frags, events int
	}{
		{"one fragment more", 1, 0},
		{"one event more", 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{FlushInterval: time.Hour})
			must(t, err)
			for s := 0; s < 300; s++ {
				l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
			}
			must(t, l.Flush())
			must(t, l.db.DeleteRange([]byte{flushPrefix}, []byte{flushPrefix + 1}, pebble.Sync))
			must(t, l.commits.append(commitEntry{fragNo: l.fragNo + uint32(c.frags), events: l.events + uint64(c.events)}))
			must(t, l.Close())
			r, err := OpenReadOnly(dir, Options{})
			if err == nil {
				r.Close()
				t.Fatalf("opened, proof %+v; want damage", r.Proof())
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a write-ahead log was cut short or altered") {
				t.Fatalf("want ErrDamaged saying the log was cut, got %v", err)
			}
		})
	}
}

// listFiles names every file with its size, sorted, separated by ", ",
// and says "none" for an empty directory: what a damage message shows.
func TestListFiles(t *testing.T) {
	fs := vfs.NewMem()
	must(t, fs.MkdirAll("d", 0o755))
	if got := listFiles(fs, "d"); got != "none" {
		t.Errorf("empty directory: %q, want none", got)
	}
	for name, size := range map[string]int{"b": 2, "a": 1} {
		f, err := fs.Create(fs.PathJoin("d", name), vfs.WriteCategoryUnspecified)
		must(t, err)
		_, err = f.Write(make([]byte, size))
		must(t, err)
		must(t, f.Close())
	}
	if got, want := listFiles(fs, "d"), "d/a (1 bytes), d/b (2 bytes)"; got != want {
		t.Errorf("listFiles: %q, want %q", got, want)
	}
	if got := listFiles(fs, "missing"); !strings.HasPrefix(got, "(cannot list missing: ") {
		t.Errorf("a missing directory: %q", got)
	}
}

// Count stops on a cancelled context, with its error: a count that keeps
// nothing (the case that scans longest) checks it on every event.
func TestCountStopsWhenCancelled(t *testing.T) {
	l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
	must(t, err)
	defer l.Close()
	for s := 0; s < 1000; s++ {
		l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
	}
	must(t, l.Flush())
	none := func(Event) bool { return false }
	if n, err := l.Count(t.Context(), Send, none); n != 0 || err != nil {
		t.Fatalf("count of nothing: %d, %v", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Count(ctx, Send, none); !errors.Is(err, context.Canceled) {
		t.Fatalf("count with a cancelled context: %v, want context.Canceled", err)
	}
}
