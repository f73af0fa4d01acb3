package ledger

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeLedger records n sends in flushes of 100 and closes the ledger.
func writeLedger(t *testing.T, dir string, n int) {
	t.Helper()
	l, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < n; s++ {
		l.Record(Send, Event{Producer: 1, Seq: uint64(s), Time: int64(s)})
		if s%100 == 99 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func walOf(t *testing.T, dir string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("want one WAL in %s, found %v", dir, logs)
	}
	return logs[0]
}

// Issue 12's probes: a WAL cut to a tenth of its size, or with 200 bytes
// altered in its middle, is damage, never a shorter ledger to judge.
func TestDamagedWALIsRefused(t *testing.T) {
	damage := map[string]func(t *testing.T, wal string){
		"truncated to 10%": func(t *testing.T, wal string) {
			st, _ := os.Stat(wal)
			if err := os.Truncate(wal, st.Size()/10); err != nil {
				t.Fatal(err)
			}
		},
		"200 bytes altered in the middle": func(t *testing.T, wal string) {
			b, _ := os.ReadFile(wal)
			for i := len(b) / 2; i < len(b)/2+200; i++ {
				b[i] ^= 0x5a
			}
			os.WriteFile(wal, b, 0o644)
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeLedger(t, dir, 2000)
			wal := walOf(t, dir)
			hurt(t, wal)
			l, err := Open(dir, Options{})
			if err == nil {
				n, _ := l.Count(t.Context(), Send, nil)
				l.Close()
				t.Fatalf("a damaged ledger opened, holding %d of 2000 sends", n)
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), wal) || !strings.Contains(err.Error(), "2000 events") {
				t.Fatalf("error does not say the ledger is damaged, name %s and what was committed: %v", wal, err)
			}
		})
	}
}

// The same ledger untouched opens, and so does one that ackcheck's crash
// cut at any point: what a crash loses is the unsynced tail, never
// something the commit record vouches for.
func TestWholeAndCrashedLedgersOpen(t *testing.T) {
	dir := t.TempDir()
	writeLedger(t, dir, 2000)
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("an intact ledger: %v", err)
	}
	if n, _ := l.Count(t.Context(), Send, nil); n != 2000 {
		t.Fatalf("intact ledger holds %d sends", n)
	}
	l.Close()

	for i, pct := range []int{0, 30, 70, 100, 50, 50, 50} {
		fs := vfs.NewCrashableMem()
		l, err := Open("ledger", Options{FS: fs, FlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 3000; s++ {
			l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
			if s%250 == 249 {
				l.Flush()
			}
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rand.New(rand.NewPCG(uint64(i), 7))})
		l.Close()
		l2, err := Open("ledger", Options{FS: crashed})
		if err != nil {
			t.Fatalf("crash keeping %d%% of unsynced data: %v", pct, err)
		}
		l2.Close()
	}
}

// A torn last entry is what a crash leaves: ignored. A bad entry before
// the last is not.
func TestDecodeCommits(t *testing.T) {
	a, b := commitEntry{fragNo: 3, events: 30}.encode(), commitEntry{fragNo: 5, events: 50}.encode()
	if last, ok, bad := decodeCommits(append(append([]byte{}, a...), b[:10]...)); !ok || last.fragNo != 3 || bad >= 0 {
		t.Fatalf("torn tail: %+v %v %d", last, ok, bad)
	}
	hurt := append(append([]byte{}, a...), b...)
	hurt[5] ^= 1
	if _, _, bad := decodeCommits(hurt); bad != 0 {
		t.Fatalf("a bad first entry reported at %d", bad)
	}
}

// Issue 12's probe: 100 bytes altered in a table file. Reading it is
// ErrDamaged naming the file, not a panic with a stack trace, and the
// ledger still closes.
func TestCorruptTableIsAnError(t *testing.T) {
	dir := t.TempDir()
	writeLedger(t, dir, 20000)
	l, err := Open(dir, Options{}) // replays the WAL into a table file
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table file")
	}
	for _, s := range ssts {
		b, _ := os.ReadFile(s)
		for i := len(b) / 2; i < len(b)/2+100; i++ {
			b[i] ^= 0x5a
		}
		os.WriteFile(s, b, 0o644)
	}
	l, err = Open(dir, Options{})
	if err == nil {
		_, err = l.Count(t.Context(), Send, nil)
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), ssts[0]) {
		t.Fatalf("want ErrDamaged naming %s, got %v", ssts[0], err)
	}
}
