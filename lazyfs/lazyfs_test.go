package lazyfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ackcheck/ackcheck/internal/need"
)

// mount mounts a lazy filesystem for one test, or skips the test with the
// reason when FUSE cannot be mounted here (and fails instead when
// ACKCHECK_REQUIRE_FUSE is set, as .ci/run does).
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	return mountWith(t, Options{})
}

func mountWith(t *testing.T, opts Options) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := Mount(backing, mnt, opts)
	if err != nil {
		need.Skip(t, need.FUSE, "cannot mount FUSE here: "+err.Error())
	}
	t.Cleanup(func() {
		if err := l.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return l, mnt
}

func write(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lose(t *testing.T, l *FS) LossReport {
	t.Helper()
	rep := l.Lose(time.Second)
	if len(rep.UndoFailures) > 0 {
		t.Fatalf("loss could not undo: %v", rep.UndoFailures)
	}
	return rep
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestLoseUnsyncedKeepSynced(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "log")
	synced := pattern(10000, 1)
	write(t, p, synced, true)
	syncDir(t, mnt)

	// Appended and overwritten, neither synced.
	appendTo(t, p, pattern(5000, 9), false)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("OVERWRITTEN"), 4090); err != nil { // straddles two pages
		t.Fatal(err)
	}
	f.Close()
	if got := len(read(t, p)); got != 15000 {
		t.Fatalf("before the loss the file has %d bytes, want 15000", got)
	}
	rep := lose(t, l)
	if got := read(t, p); !bytes.Equal(got, synced) {
		t.Fatalf("after the loss: %d bytes, equal to the synced content: %v", len(got), bytes.Equal(got, synced))
	}
	if rep.FilesRestored != 1 || rep.BytesDropped != 5000 || rep.BytesRestored != 2*pageSize {
		t.Errorf("loss report %+v: want 1 file, 5000 bytes dropped, 2 pages restored", rep)
	}

	// Written and synced: survives.
	appendTo(t, p, pattern(3000, 3), true)
	want := append(slices.Clone(synced), pattern(3000, 3)...)
	lose(t, l)
	if got := read(t, p); !bytes.Equal(got, want) {
		t.Fatalf("synced append lost: %d bytes, want %d", len(got), len(want))
	}
}

func TestFdatasyncAndTruncate(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	orig := pattern(3*pageSize+100, 5)
	write(t, p, orig, true)
	syncDir(t, mnt)

	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 20000); err != nil { // and grow again: zeros
		t.Fatal(err)
	}
	lose(t, l)
	if got := read(t, p); !bytes.Equal(got, orig) {
		t.Fatalf("truncate not undone: %d bytes, want %d", len(got), len(orig))
	}

	// fdatasync counts like fsync.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	f.Close()
	lose(t, l)
	if got := read(t, p); !bytes.Equal(got, orig[:10]) {
		t.Fatalf("fdatasync'd truncate undone: %d bytes", len(got))
	}

	// O_TRUNC without a sync is undone.
	write(t, p, []byte("new"), false)
	lose(t, l)
	if got := read(t, p); !bytes.Equal(got, orig[:10]) {
		t.Fatalf("O_TRUNC rewrite survived: %q", got)
	}
}

func TestEntriesNeedDirectorySync(t *testing.T) {
	l, mnt := mount(t)
	sub := filepath.Join(mnt, "topic-0")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file created and fsynced in a directory never synced: gone with
	// the directory.
	write(t, filepath.Join(sub, "00.log"), []byte("data"), true)
	rep := lose(t, l)
	if exists(sub) {
		t.Fatalf("an unsynced mkdir survived the loss (report %+v)", rep)
	}

	// Synced directories keep their entries.
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	write(t, filepath.Join(sub, "00.log"), []byte("data"), true)
	syncDir(t, sub)
	write(t, filepath.Join(sub, "01.log"), []byte("more"), true) // created, dir not synced
	lose(t, l)
	if got := read(t, filepath.Join(sub, "00.log")); string(got) != "data" {
		t.Fatalf("synced file lost: %q", got)
	}
	if exists(filepath.Join(sub, "01.log")) {
		t.Fatalf("a file whose creation was never made durable survived")
	}

	// Unlink and rename are undone without a directory sync...
	write(t, filepath.Join(sub, "cp"), []byte("old checkpoint"), true)
	syncDir(t, sub)
	write(t, filepath.Join(sub, "cp.tmp"), []byte("new checkpoint"), true)
	if err := os.Rename(filepath.Join(sub, "cp.tmp"), filepath.Join(sub, "cp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sub, "00.log")); err != nil {
		t.Fatal(err)
	}
	lose(t, l)
	if got := read(t, filepath.Join(sub, "cp")); string(got) != "old checkpoint" {
		t.Fatalf("unsynced rename over cp kept: %q", got)
	}
	if exists(filepath.Join(sub, "cp.tmp")) {
		t.Fatalf("cp.tmp came back, but its creation was never durable")
	}
	if got := read(t, filepath.Join(sub, "00.log")); string(got) != "data" {
		t.Fatalf("unsynced unlink kept: %q", got)
	}

	// ... and kept with one (the atomic-replace pattern brokers use).
	write(t, filepath.Join(sub, "cp.tmp"), []byte("new checkpoint"), true)
	if err := os.Rename(filepath.Join(sub, "cp.tmp"), filepath.Join(sub, "cp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sub, "00.log")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, sub)
	lose(t, l)
	if got := read(t, filepath.Join(sub, "cp")); string(got) != "new checkpoint" {
		t.Fatalf("synced rename undone: %q", got)
	}
	if exists(filepath.Join(sub, "00.log")) {
		t.Fatalf("synced unlink undone")
	}
	if entries, _ := os.ReadDir(l.trash); len(entries) != 0 {
		t.Errorf("trash holds %d entries after everything was synced", len(entries))
	}
}

func TestJournalMode(t *testing.T) {
	l, mnt := mountWith(t, Options{Entries: EntriesJournal})
	sub := filepath.Join(mnt, "partitions")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, "seg"), []byte("synced"), true) // commits the mkdir and the create
	write(t, filepath.Join(sub, "later"), []byte("not"), false)
	if err := os.Remove(filepath.Join(sub, "seg")); err != nil {
		t.Fatal(err)
	}
	lose(t, l)
	if got := read(t, filepath.Join(sub, "seg")); string(got) != "synced" {
		t.Fatalf("journal mode: the file fsync did not commit its entry, or the unsynced unlink stuck: %q", got)
	}
	if exists(filepath.Join(sub, "later")) {
		t.Fatal("journal mode: an entry created after the last fsync survived")
	}
	if s := l.Status(); s.Entries != EntriesJournal {
		t.Fatalf("status says entries %q", s.Entries)
	}
	if _, err := Mount(t.TempDir(), filepath.Join(t.TempDir(), "m"), Options{Entries: "sometimes"}); err == nil || !strings.Contains(err.Error(), "strict or journal") {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestUnlinkedOpenFileRestored(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "seg")
	write(t, p, []byte("durable"), true)
	syncDir(t, mnt)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(" and not"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(" more"))
	f.Close()
	lose(t, l)
	if got := read(t, p); string(got) != "durable" {
		t.Fatalf("unlinked file came back as %q, want its synced content", got)
	}
}

func TestMmapWritesNeedSync(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "index")
	write(t, p, make([]byte, 2*pageSize), true)
	syncDir(t, mnt)
	// The mmap write runs in a child process: a page fault on a FUSE file
	// served by this very process blocks its thread outside any syscall,
	// and if the Go runtime then stops the world (GC) the FUSE server's
	// goroutines can never answer it. CI hung there once for 8 minutes.
	mmapWrite := func(msync bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMmapWrite$")
		cmd.Env = append(os.Environ(), "LAZYFS_MMAP_HELPER="+p, fmt.Sprintf("LAZYFS_MMAP_MSYNC=%v", msync))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mmap write in a child process: %v\n%s", err, out)
		}
	}
	mmapWrite(false)
	if got := read(t, p); string(got[100:105]) != "entry" {
		t.Fatalf("the mmap write did not reach the file before the loss: %q", got[100:105])
	}
	lose(t, l)
	if got := read(t, p); !bytes.Equal(got, make([]byte, 2*pageSize)) {
		t.Fatalf("an unsynced mmap write survived: %q", got[100:105])
	}
	mmapWrite(true)
	lose(t, l)
	if got := read(t, p); string(got[100:105]) != "entry" {
		t.Fatalf("an msync'd and fsynced mmap write was lost")
	}
}

func TestLoseWaitsForClose(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	write(t, p, []byte("x"), true)
	syncDir(t, mnt)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("y"))
	go func() {
		time.Sleep(150 * time.Millisecond)
		f.Close()
	}()
	rep := l.Lose(5 * time.Second)
	if rep.OpenHandles != 0 || rep.WaitedForCloseMs < 100 {
		t.Fatalf("loss did not wait for the close: %+v", rep)
	}
	if got := read(t, p); string(got) != "x" {
		t.Fatalf("got %q", got)
	}
	// A file that stays open: the loss goes ahead after the wait and says so.
	g, _ := os.Open(p)
	defer g.Close()
	if rep := l.Lose(50 * time.Millisecond); rep.OpenHandles != 1 {
		t.Fatalf("open handles at the loss = %d, want 1", rep.OpenHandles)
	}
}

// TestPOSIX runs the same operations on the lazy filesystem and on a plain
// directory, with no loss, and wants the same results from both.
func TestPOSIX(t *testing.T) {
	_, mnt := mount(t)
	plain := t.TempDir()
	ops := []struct {
		name string
		do   func(root string) (string, error)
	}{
		{"create and write", func(r string) (string, error) {
			return "", os.WriteFile(filepath.Join(r, "a"), []byte("hello world"), 0o644)
		}},
		{"read", func(r string) (string, error) {
			b, err := os.ReadFile(filepath.Join(r, "a"))
			return string(b), err
		}},
		{"pwrite past the end", func(r string) (string, error) {
			f, err := os.OpenFile(filepath.Join(r, "a"), os.O_RDWR, 0)
			if err != nil {
				return "", err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte("tail"), 20)
			return "", err
		}},
		{"pread with hole", func(r string) (string, error) {
			f, err := os.Open(filepath.Join(r, "a"))
			if err != nil {
				return "", err
			}
			defer f.Close()
			b := make([]byte, 30)
			n, err := f.ReadAt(b, 5)
			if errors.Is(err, os.ErrClosed) {
				return "", err
			}
			return string(b[:n]), nil
		}},
		{"fsync", func(r string) (string, error) {
			f, err := os.OpenFile(filepath.Join(r, "a"), os.O_RDWR, 0)
			if err != nil {
				return "", err
			}
			defer f.Close()
			return "", f.Sync()
		}},
		{"fdatasync", func(r string) (string, error) {
			f, err := os.OpenFile(filepath.Join(r, "a"), os.O_RDWR, 0)
			if err != nil {
				return "", err
			}
			defer f.Close()
			return "", unix.Fdatasync(int(f.Fd()))
		}},
		{"truncate down", func(r string) (string, error) {
			if err := os.Truncate(filepath.Join(r, "a"), 5); err != nil {
				return "", err
			}
			b, err := os.ReadFile(filepath.Join(r, "a"))
			return string(b), err
		}},
		{"truncate up", func(r string) (string, error) {
			if err := os.Truncate(filepath.Join(r, "a"), 8); err != nil {
				return "", err
			}
			fi, err := os.Stat(filepath.Join(r, "a"))
			if err != nil {
				return "", err
			}
			return fi.Name() + " " + strings.Repeat("#", int(fi.Size())), nil
		}},
		{"mkdir", func(r string) (string, error) { return "", os.Mkdir(filepath.Join(r, "d"), 0o755) }},
		{"rename into dir", func(r string) (string, error) {
			return "", os.Rename(filepath.Join(r, "a"), filepath.Join(r, "d", "b"))
		}},
		{"old name gone", func(r string) (string, error) {
			_, err := os.Stat(filepath.Join(r, "a"))
			return "", err
		}},
		{"rmdir not empty", func(r string) (string, error) { return "", syscall.Rmdir(filepath.Join(r, "d")) }},
		{"rename over", func(r string) (string, error) {
			os.WriteFile(filepath.Join(r, "d", "c"), []byte("c"), 0o644)
			if err := os.Rename(filepath.Join(r, "d", "c"), filepath.Join(r, "d", "b")); err != nil {
				return "", err
			}
			b, err := os.ReadFile(filepath.Join(r, "d", "b"))
			return string(b), err
		}},
		{"readdir", func(r string) (string, error) {
			es, err := os.ReadDir(filepath.Join(r, "d"))
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			return strings.Join(names, ","), err
		}},
		{"unlink", func(r string) (string, error) { return "", os.Remove(filepath.Join(r, "d", "b")) }},
		{"unlink missing", func(r string) (string, error) { return "", os.Remove(filepath.Join(r, "d", "b")) }},
		{"rmdir", func(r string) (string, error) { return "", syscall.Rmdir(filepath.Join(r, "d")) }},
		{"exclusive create twice", func(r string) (string, error) {
			f, err := os.OpenFile(filepath.Join(r, "x"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			f.Close()
			_, err = os.OpenFile(filepath.Join(r, "x"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			return "", err
		}},
		{"symlink and hard link", func(r string) (string, error) {
			if err := os.Symlink("x", filepath.Join(r, "s")); err != nil {
				return "", err
			}
			if err := os.Link(filepath.Join(r, "x"), filepath.Join(r, "h")); err != nil {
				return "", err
			}
			t, err := os.Readlink(filepath.Join(r, "s"))
			return t, err
		}},
	}
	for _, op := range ops {
		gotL, errL := op.do(mnt)
		gotP, errP := op.do(plain)
		errno := func(err error) error {
			var e syscall.Errno
			if errors.As(err, &e) {
				return e
			}
			if err != nil {
				return errors.New("error")
			}
			return nil
		}
		if gotL != gotP || !errors.Is(errno(errL), errno(errP)) && (errL == nil) != (errP == nil) {
			t.Errorf("%s: lazyfs gave %q, %v; a plain directory %q, %v", op.name, gotL, errL, gotP, errP)
		}
		if (errL == nil) != (errP == nil) {
			t.Errorf("%s: lazyfs error %v, plain directory error %v", op.name, errL, errP)
		}
	}
}

func TestControlSocket(t *testing.T) {
	l, mnt := mount(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := filepath.Join(t.TempDir(), "c.sock")
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx, sock) }()
	for i := 0; i < 100 && !exists(sock); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	write(t, filepath.Join(mnt, "f"), []byte("unsynced"), false)
	r, err := Control(ctx, sock, "status")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.DirtyFiles != 1 || r.Status.PendingEntries != 1 || r.Status.UnsyncedBytes != 8 {
		t.Fatalf("status %+v: want 1 dirty file with 8 unsynced bytes and 1 pending entry", r.Status)
	}
	r, err = Control(ctx, sock, "lose 1s")
	if err != nil {
		t.Fatal(err)
	}
	if r.Loss.EntriesUndone != 1 || exists(filepath.Join(mnt, "f")) {
		t.Fatalf("loss %+v left the file", r.Loss)
	}
	write(t, filepath.Join(mnt, "g"), []byte("kept"), false)
	if _, err := Control(ctx, sock, "sync"); err != nil {
		t.Fatal(err)
	}
	Control(ctx, sock, "lose")
	if got := read(t, filepath.Join(mnt, "g")); string(got) != "kept" {
		t.Fatalf("after sync and loss: %q", got)
	}
	if _, err := Control(ctx, sock, "explode"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	if _, err := Control(ctx, filepath.Join(t.TempDir(), "none.sock"), "status"); err == nil || !strings.Contains(err.Error(), "lazyfs mount") {
		t.Fatalf("missing socket: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// A pending change inside a directory whose own removal or rename was made
// durable afterwards cannot be undone by its path, and need not be: the
// durable change implies it (a directory is removed only once empty).
// NATS's meta store does this: unlink old/1.blk, rmdir old, fsync the
// parent.
func TestChangesSupersededByDurableParentChange(t *testing.T) {
	l, mnt := mount(t)
	old := filepath.Join(mnt, "old")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(old, "1.blk"), []byte("block"), true)
	syncDir(t, old)
	syncDir(t, mnt)
	// Pending in old: the unlink. Pending in mnt, then durable: the rmdir.
	if err := os.Remove(filepath.Join(old, "1.blk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(old); err != nil {
		t.Fatal(err)
	}
	// A directory renamed durably with a pending entry inside.
	if err := os.Mkdir(filepath.Join(mnt, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	write(t, filepath.Join(mnt, "new", "2.blk"), []byte("next"), true)
	if err := os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "msgs")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)

	rep := lose(t, l) // fails the test on any undo failure
	if exists(old) {
		t.Fatalf("the durable rmdir was undone")
	}
	if !exists(filepath.Join(mnt, "msgs")) || exists(filepath.Join(mnt, "new")) {
		t.Fatalf("the durable rename was undone")
	}
	if rep.EntriesSuperseded < 1 {
		t.Fatalf("report %+v: want the unlink inside the removed directory counted as superseded", rep)
	}
	if entries, _ := os.ReadDir(l.trash); len(entries) != 0 {
		t.Errorf("trash holds %d entries after the loss", len(entries))
	}
}

// TestHelperMmapWrite is not a test: TestMmapWritesNeedSync runs it in a
// child process to write "entry" at byte 100 of a file through a shared
// mapping (and msync and fsync it when asked).
func TestHelperMmapWrite(t *testing.T) {
	p := os.Getenv("LAZYFS_MMAP_HELPER")
	if p == "" {
		t.Skip("a helper process for TestMmapWritesNeedSync")
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[100:], "entry")
	if os.Getenv("LAZYFS_MMAP_MSYNC") == "true" {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
}
