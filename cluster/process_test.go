package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestPIDFileOnlyNamesOurProcess(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "node1.properties")
	// A process whose command line holds the marker, and one that does not.
	ours := exec.Command("sh", "-c", "sleep 30; :", marker) // "; :" keeps sh from exec-ing sleep
	other := exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{ours, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		defer c.Process.Kill()
	}
	pidFile := filepath.Join(dir, "pid")
	write := func(pid int) { os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644) }

	if pid, err := PIDFrom(pidFile, marker); pid != 0 || err != nil {
		t.Fatalf("no pid file: %d, %v", pid, err)
	}
	write(other.Process.Pid)
	if pid, _ := PIDFrom(pidFile, marker); pid != 0 {
		t.Fatalf("a pid file naming another program's process gave %d", pid)
	}
	write(ours.Process.Pid)
	if pid, _ := PIDFrom(pidFile, marker); pid != ours.Process.Pid {
		t.Fatalf("our process: got %d, want %d", pid, ours.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := StopProcess(ctx, ours.Process.Pid, marker, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if pid, _ := PIDFrom(pidFile, marker); pid != 0 {
		t.Fatalf("after StopProcess the pid file still names a running process %d", pid)
	}
	if !RunsAs(other.Process.Pid, "sleep") {
		t.Fatal("StopProcess touched another process")
	}
}

// A process StartDetached has started is found by its PID file at once:
// the callers' first health check asks PIDFrom whether the node runs,
// and a node taken for exited ends `cluster ... up` with an error.
func TestStartedProcessIsFoundAtOnce(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	pidFile := filepath.Join(dir, "pid")
	for i := range 100 {
		cmd := exec.Command("sh", "-c", "sleep 30; :", marker)
		if err := StartDetached(cmd, filepath.Join(dir, "log"), pidFile, "sleeper"); err != nil {
			t.Fatal(err)
		}
		pid, err := PIDFrom(pidFile, marker)
		cmd.Process.Kill()
		if pid != cmd.Process.Pid || err != nil {
			t.Fatalf("start %d: PIDFrom = %d, %v just after the start of PID %d", i, pid, err, cmd.Process.Pid)
		}
	}
}

// A process on its way out no longer runs as its marker (its command line
// reads empty once its memory is gone) but still exits for a while, its
// sockets still open: the demo's Down once returned with a Kafka node in
// state R. stopProcess waits until it has exited. perl stands in for it:
// on SIGTERM it rewrites its command line without the marker, then takes
// a second to exit.
func TestStopWaitsForTheExitItself(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("needs perl")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	cmd := exec.Command(perl, "-e", `$SIG{TERM} = sub { $0 = "exiting"; select(undef, undef, undef, 1.0); exit 0 }; sleep 60`, marker)
	if err := StartDetached(cmd, filepath.Join(dir, "log"), filepath.Join(dir, "pid"), "perl"); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); !RunsAs(pid, marker); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("perl never ran as its marker")
		}
	}
	time.Sleep(100 * time.Millisecond) // its TERM handler installed
	start := time.Now()
	if err := StopProcess(context.Background(), pid, marker, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, running := procStart(pid); running {
		t.Fatalf("stopProcess returned after %s with PID %d still running (state %s)", time.Since(start).Round(time.Millisecond), pid, procState(pid))
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("stopped in %s: the process did not take its second to exit", took)
	}
}
