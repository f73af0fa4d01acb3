package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// Ctrl-C while a fault is applied: the killed broker is down when SIGINT
// arrives; ackcheck must start it again before it exits, and say so.
// Needs the real cluster (ACKCHECK_KAFKA_CLUSTER_DIR).
func TestRealInterruptHeals(t *testing.T) {
	k := realCluster(t, kafkaCluster)
	dir := k.Dir()
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "leader-kill", "--cluster-dir", dir, "--topic", "interrupt-"+time.Now().Format("150405"),
		"--partitions", "4", "--rate", "300", "--duration", "60s", "--kill-at", "3s", "--restart-after", "50s",
		"--progress-interval", "1s", "--out", out)
	stdout := scenariotest.StartUntil(t, cmd, "fault kill", 30*time.Second)
	// A SIGKILLed JVM takes a moment to be gone.
	down := 0
	for deadline := time.Now().Add(10 * time.Second); down != 1 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		down = 0
		for _, s := range k.Health(context.Background()) {
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
