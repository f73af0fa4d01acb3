package lazyfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// serve serves l's control socket for one test and returns its path.
func serve(t *testing.T, l *FS) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sock := filepath.Join(t.TempDir(), "c.sock")
	go l.Serve(ctx, sock) //nolint:errcheck // ends with the test
	for i := 0; i < 100 && !exists(sock); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return sock
}

// On a mounted lazyfs, disk-error fsync makes fsync return EIO until
// disk-ok; the write it failed to sync stays unsynced (a loss drops it),
// and status counts the calls. Without the error, the same fsync works.
func TestDiskErrorFsyncReturnsEIO(t *testing.T) {
	l, mnt := mount(t)
	sock := serve(t, l)
	ctx := context.Background()
	p := filepath.Join(mnt, "f")
	write(t, p, []byte("durable"), true)
	syncDir(t, mnt)

	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(" more")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync before the disk error: %v", err)
	}
	if _, err := Control(ctx, sock, "disk-error fsync"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(" lost")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("fsync %d under disk-error fsync: %v, want EIO", i, err)
		}
	}
	r, err := Control(ctx, sock, "disk-ok")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ended) != 1 || r.Ended[0].Call != CallFsync || r.Ended[0].Failed != 3 || r.Ended[0].Calls != 3 {
		t.Errorf("disk-ok ended %+v, want fsync with 3 of 3 calls failed", r.Ended)
	}
	f.Close()
	if _, err := Control(ctx, sock, "lose 1s"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); string(got) != "durable more" {
		t.Errorf("after the loss: %q, want the write whose fsync failed dropped", got)
	}
	f2, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if err := f2.Sync(); err != nil {
		t.Errorf("fsync after disk-ok: %v", err)
	}
}

// write and read fail too, at the share asked for, exactly.
func TestDiskErrorWriteReadRate(t *testing.T) {
	l, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	write(t, p, []byte("0123456789"), true)
	if err := l.SetDiskError(CallWrite, 30); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := 0; i < 10; i++ {
		if _, err := f.WriteAt([]byte("x"), int64(i)); errors.Is(err, syscall.EIO) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if failed != 3 {
		t.Errorf("%d of 10 writes failed at 30%%, want 3", failed)
	}
	l.ClearDiskError(CallWrite)
	if err := l.SetDiskError(CallRead, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(p); !errors.Is(err, syscall.EIO) {
		t.Errorf("read under disk-error read: %v, want EIO", err)
	}
	l.ClearDiskError()
	if _, err := os.ReadFile(p); err != nil {
		t.Errorf("read after the error ended: %v", err)
	}
	if err := l.SetDiskError("open", 100); err == nil {
		t.Error("a disk error on open was taken")
	}
}
