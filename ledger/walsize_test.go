package ledger

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// diskUse is what du counts for dir: the blocks its files hold, the
// preallocated ones included.
func diskUse(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWALSizedToTheRun: a ledger told it holds a few thousand messages
// takes a few MB on disk; one told nothing preallocates Pebble's 35 MB
// WAL file for the same events.
func TestWALSizedToTheRun(t *testing.T) {
	const msgs = 4000
	tests := []struct {
		name     string
		expected int64
		min, max int64 // bytes on disk
	}{
		{"sized", msgs, 0, 4 << 20},
		{"not sized", 0, 30 << 20, 1 << 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{ExpectedMessages: tt.expected})
			if err != nil {
				t.Fatal(err)
			}
			for i := range msgs {
				if err := l.Record(Send, Event{Producer: uint32(i % 4), Seq: uint64(i / 4), Time: int64(i)}); err != nil {
					t.Fatal(err)
				}
				if err := l.Record(Outcome, Event{Producer: uint32(i % 4), Seq: uint64(i / 4), Offset: int64(i), Time: int64(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			used := diskUse(t, dir)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages, ExpectedMessages %d: %.1f MB on disk", msgs, tt.expected, float64(used)/1e6)
			if used < tt.min || used > tt.max {
				t.Errorf("%d bytes on disk, want %d to %d", used, tt.min, tt.max)
			}
		})
	}
}

func TestMemTableFor(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want uint64
	}{{0, maxMemTable}, {-1, maxMemTable}, {10, minMemTable}, {100_000, 6_400_000}, {1 << 30, maxMemTable}} {
		if got := memTableFor(tt.n); got != tt.want {
			t.Errorf("memTableFor(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}
