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

// smallDisk mounts a 16 MiB tmpfs and fills it to leave about free bytes.
// It needs root (CI has it); elsewhere the test is skipped with the reason.
func smallDisk(t *testing.T, free int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	filler := bytes.Repeat([]byte{1}, int(16<<20-free))
	os.WriteFile(filepath.Join(dir, "filler"), filler, 0o644) // fails at ENOSPC, leaving the disk full; trimmed below
	st, _ := os.Stat(filepath.Join(dir, "filler"))
	if st != nil && st.Size() > 16<<20-free {
		os.Truncate(filepath.Join(dir, "filler"), 16<<20-free)
	}
	return dir
}

// Issue 12's probe: a run whose disk fills during its load stops it, says
// the disk is full and how much a run of its size needs, and exits 2: no
// panic, no goroutine dump. verify on the full disk then exits 2 promptly.
// The disk has room for the run when it starts (TestDiskFullAtStart is
// the other case) and fills 2 s into the load, as another writer would.
func TestDiskFull(t *testing.T) {
	disk := smallDisk(t, 10<<20)
	c := kfakeCluster(t)
	out := filepath.Join(disk, "r")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		time.Sleep(2 * time.Second)
		// Fails at ENOSPC, leaving the disk full.
		os.WriteFile(filepath.Join(disk, "filler2"), bytes.Repeat([]byte{2}, 16<<20), 0o644)
	}()
	start := time.Now()
	code := execute(ctx, []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
		"--partitions", "4", "--rate", "2000", "--duration", "20s", "--progress-interval", "5s"}, &stdout, &stderr)
	t.Logf("run: exit %d after %s\nstdout: %s\nstderr: %s", code, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if code != exitError || !strings.Contains(stderr.String(), "disk") || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("run on a full disk: exit %d", code)
	}
	if !strings.Contains(stderr.String(), "the load stopped there") {
		t.Fatalf("the disk did not fill during the load: %s", stderr.String())
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

// Issue 24, point 7: a disk already too full for the run at its start is
// refused before anything exists, saying how much the run needs. Once
// this left ledger/ and an empty run.json.tmp: a rerun said "use verify",
// and verify said "not a run directory". A run that fits starts.
func TestDiskFullAtStart(t *testing.T) {
	disk := smallDisk(t, 300<<10)
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	for _, tc := range []struct {
		name, topic string
		args        []string
		refuse      string
	}{
		// 40,000 messages at 80 bytes, the room for the ledger's next log
		// (its 2.4 MiB memtable and 1 MiB) and 1 MiB: about 7.5 MiB.
		{"too large", "full1", []string{"--rate", "2000", "--duration", "20s"}, "has 300.0 KiB free, and this run needs about 7.5 MiB"},
		// Refused the same way again: nothing was left to call a run.
		{"again", "full1", []string{"--rate", "2000", "--duration", "20s"}, "has 300.0 KiB free, and this run needs about 7.5 MiB"},
		{"in a new parent", "full2", []string{"--rate", "2000", "--duration", "20s"}, "needs about 7.5 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(disk, "r")
			if tc.name == "in a new parent" {
				out = filepath.Join(disk, "p", "q", "r")
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"run", "--brokers", brokers, "--topic", tc.topic, "--out", out, "--partitions", "4"}, tc.args...)
			code := execute(context.Background(), args, &stdout, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), tc.refuse) || !strings.Contains(stderr.String(), "free space or give --out on a larger disk") {
				t.Fatalf("exit %d, stderr %q: want %q", code, stderr.String(), tc.refuse)
			}
			entries, _ := os.ReadDir(disk)
			if len(entries) != 1 || entries[0].Name() != "filler" {
				t.Errorf("left behind on the disk: %v", entries)
			}
			if topicExists(t, c, tc.topic) {
				t.Errorf("created topic %s", tc.topic)
			}
		})
	}
}
