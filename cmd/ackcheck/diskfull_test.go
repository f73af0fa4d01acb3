package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// smallDisk mounts an 8 MiB tmpfs and fills it to leave about free bytes.
// It needs root (CI has it); elsewhere the test is skipped with the reason.
func smallDisk(t *testing.T, free int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	filler := bytes.Repeat([]byte{1}, int(8<<20-free))
	os.WriteFile(filepath.Join(dir, "filler"), filler, 0o644) // fails at ENOSPC, leaving the disk full; trimmed below
	st, _ := os.Stat(filepath.Join(dir, "filler"))
	if st != nil && st.Size() > 8<<20-free {
		os.Truncate(filepath.Join(dir, "filler"), 8<<20-free)
	}
	return dir
}

// Issue 12's probe: a run whose disk fills stops its load, says the disk
// is full and how much a run of its size needs, and exits 2: no panic, no
// goroutine dump. verify on the full disk then exits 2 promptly.
func TestDiskFull(t *testing.T) {
	disk := smallDisk(t, 300<<10)
	c := kfakeCluster(t)
	out := filepath.Join(disk, "r")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	code := execute(ctx, []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
		"--partitions", "4", "--rate", "2000", "--duration", "20s", "--progress-interval", "5s"}, &stdout, &stderr)
	t.Logf("run: exit %d after %s\nstdout: %s\nstderr: %s", code, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if code != exitError || !strings.Contains(stderr.String(), "disk") || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("run on a full disk: exit %d", code)
	}
	stdout.Reset()
	stderr.Reset()
	start = time.Now()
	code = execute(ctx, []string{"verify", "--out", out}, &stdout, &stderr)
	t.Logf("verify: exit %d after %s\nstdout: %s\nstderr: %s", code, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if code != exitError || time.Since(start) > 30*time.Second || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("verify on a full disk: exit %d after %s", code, time.Since(start))
	}
}
