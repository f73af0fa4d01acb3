package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/kafka/kafkatest"
)

// Ctrl-C while a fault is applied: the killed broker is down when SIGINT
// arrives; ackcheck must start it again before it exits, and say so.
// Needs the real cluster (ACKCHECK_KAFKA_CLUSTER_DIR).
func TestRealInterruptHeals(t *testing.T) {
	k := kafkatest.Cluster(t)
	dir := k.Dir()
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "leader-kill", "--cluster-dir", dir, "--topic", "interrupt-"+time.Now().Format("150405"),
		"--partitions", "4", "--rate", "300", "--duration", "60s", "--kill-at", "3s", "--restart-after", "50s",
		"--progress-interval", "1s", "--out", out)
	stdout := startUntil(t, cmd, "fault kill", 30*time.Second)
	// A SIGKILLed JVM takes a moment to be gone.
	down := 0
	for deadline := time.Now().Add(10 * time.Second); down != 1 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		down = 0
		for _, s := range k.Status(context.Background()) {
			if s.PID == 0 {
				down++
			}
		}
	}
	if down != 1 {
		t.Fatalf("%d nodes down after the kill, want 1:\n%s", down, stdout.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	t.Logf("output:\n%s", stdout.String())
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
		t.Fatalf("exit %v, want %d (interrupted)", err, exitError)
	}
	if !strings.Contains(stdout.String(), "heal: start node") {
		t.Fatal("ackcheck did not say what it healed")
	}
	if err := k.WaitReady(context.Background(), 90*time.Second); err != nil {
		t.Fatalf("cluster not whole after the interrupt: %v", err)
	}
	if !strings.Contains(stdout.String(), "ackcheck verify --out") {
		t.Fatal("the interrupted run did not say how to verify it")
	}
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes.
// Issue 12's probe: a broker paused (SIGSTOP) holds every send in flight.
// The first interrupt says what ackcheck waits for and for how long; the
// second stops the wait at once, resumes the paused broker and exits.
func TestRealSecondInterruptHealsAtOnce(t *testing.T) {
	k := kafkatest.Cluster(t)
	bin := binary(t)
	topic := "interrupt2-" + time.Now().Format("150405")
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--cluster-dir", k.Dir(), "--topic", topic, "--partitions", "4", "--rate", "300",
		"--duration", "60s", "--delivery-timeout", "50s", "--fault", "at=2s pause most-leaders:"+topic,
		"--progress-interval", "1s", "--out", out)
	stdout := startUntil(t, cmd, "fault pause", 30*time.Second)
	time.Sleep(2 * time.Second) // sends pile up behind the paused leader
	cmd.Process.Signal(syscall.SIGINT)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "Interrupt again") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(stdout.String(), "interrupted: no new sends; waiting up to") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the first interrupt did not say what ackcheck waits for:\n%s", stdout.String())
	}
	second := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(second)
	t.Logf("exit after the second interrupt: %s\n%s", took.Round(time.Millisecond), stdout.String())
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
		t.Fatalf("exit %v, want %d", err, exitError)
	}
	if took > 20*time.Second {
		t.Fatalf("ackcheck took %s to stop after the second interrupt", took)
	}
	if !strings.Contains(stdout.String(), "heal: resume node") {
		t.Fatal("the paused node was not resumed")
	}
	if err := k.WaitReady(context.Background(), 90*time.Second); err != nil {
		t.Fatalf("cluster not whole after the interrupts: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startUntil starts cmd with its output in a buffer and waits until the
// output contains marker; it kills cmd and fails the test after timeout.
func startUntil(t *testing.T, cmd *exec.Cmd, marker string, timeout time.Duration) *syncBuffer {
	t.Helper()
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that fails while the run goes on must not leave it acting on
	// the shared cluster: it is interrupted twice, and heals as it exits.
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test waited for it
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(time.Second)
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(timeout)
	for !strings.Contains(buf.String(), marker) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s:\n%s", marker, timeout, buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return buf
}
