package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 38, point 3: the real binary runs a bitflip on a stopped node's
// files (a cluster-file node on this machine whose "broker" is a sleep,
// killed by the schedule first), is SIGKILLed as soon as the files
// changed, and `ackcheck heal --out` on its run directory puts every
// file back byte-identical to before (sha256 of each), removes the
// copies, and starts the node again.
func TestHealAfterKilledBinaryRestoresFlippedFiles(t *testing.T) {
	c := kfakeCluster(t)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	before := writeSegments(t, data, 7)
	pidFile := filepath.Join(tmp, "node1.pid")
	start := fmt.Sprintf("nohup sleep 600 >/dev/null 2>&1 & echo $! > %s", pidFile)
	t.Cleanup(func() { killPIDFile(pidFile) })
	if err := exec.Command("sh", "-c", start).Run(); err != nil {
		t.Fatal(err)
	}
	addrs := strings.Join(c.ListenAddrs(), ", ")
	cf := filepath.Join(tmp, "cluster.yaml")
	yml := fmt.Sprintf("broker: kafka\nbrokers: [%s]\nnodes:\n  - {id: 1, host: local, pid_file: %q, start: %q, data_dir: %q}\n",
		addrs, pidFile, start, data)
	if err := os.WriteFile(cf, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "run")
	cmd := exec.Command(binary(t), "run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--cluster-file", cf,
		"--out", out, "--partitions", "2", "--rate", "100", "--duration", "60s",
		"--fault", "at=1s kill node:1; at=2s bitflip node:1 *.log")
	var said bytes.Buffer
	cmd.Stdout, cmd.Stderr = &said, &said
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	changed := waitChanged(t, data, before, 30*time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if changed == 0 {
		t.Fatalf("the run never changed node 1's files in 30 s:\n%s", said.String())
	}
	if after := sums(t, data); equalSums(before, after) {
		t.Fatalf("after the SIGKILL the files are as before: the kill came too late to test the heal\n%s", said.String())
	}
	t.Logf("SIGKILLed the run with %d files changed", changed)

	heal := exec.Command(binary(t), "heal", "--out", out)
	healed, err := heal.CombinedOutput()
	t.Logf("heal:\n%s", healed)
	if err != nil {
		t.Fatalf("heal: %v", err)
	}
	if after := sums(t, data); !equalSums(before, after) {
		t.Errorf("after the heal the files differ from before:\nbefore %v\nafter  %v", before, after)
	}
	if left, _ := filepath.Glob(filepath.Join(data+".ackcheck-files", "*")); len(left) != 0 {
		t.Errorf("the heal left copies behind: %v", left)
	}
	if !pidFileRuns(pidFile) {
		t.Error("node 1 does not run after the heal")
	}
}

// writeSegments writes a few Kafka-like segment files of random bytes
// under dir and returns their sha256 by path relative to dir.
func writeSegments(t *testing.T, dir string, seed uint64) map[string]string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 38))
	for i, n := range []int{40000, 9000, 120000} {
		p := filepath.Join(dir, fmt.Sprintf("t-%d", i), "00000000000000000000.log")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sums(t, dir)
}

// sums is the sha256 of every file under dir, by path relative to it.
func sums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		s := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(s[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalSums(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitChanged polls dir every 20 ms until a file's checksum differs from
// before, and returns how many do (0 at the timeout).
func waitChanged(t *testing.T, dir string, before map[string]string, timeout time.Duration) int {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		n := 0
		for k, v := range sums(t, dir) {
			if before[k] != v {
				n++
			}
		}
		if n > 0 {
			return n
		}
	}
	return 0
}

func pidFileRuns(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == nil
}

// killPIDFile kills the sleep this test started (by its PID file).
func killPIDFile(pidFile string) {
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // gone already is fine
		}
	}
}
