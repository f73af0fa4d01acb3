package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Every process a local cluster starts (a broker JVM, a lazyfs mount) is
// found again through a pid file, and counts only while its command line
// still holds a marker that names this cluster's own files: a stale pid
// file never leads to signalling somebody else's process.

// ReadClusterJSON makes dir absolute and reads its cluster.json; data is
// nil when the directory holds no cluster yet.
func ReadClusterJSON(dir string) (abs string, data []byte, err error) {
	if dir == "" {
		return "", nil, errors.New("no cluster directory: pass --dir")
	}
	if abs, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	data, err = os.ReadFile(filepath.Join(abs, "cluster.json"))
	if errors.Is(err, os.ErrNotExist) {
		return abs, nil, nil
	}
	return abs, data, err
}

// RunsAs reports whether pid is alive (not a zombie) and its command line
// contains marker.
func RunsAs(pid int, marker string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state is the field after the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

// PIDFrom reads a pid file and returns its process if it runs as marker,
// 0 otherwise (no file, a dead process, another program).
func PIDFrom(path, marker string) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || !RunsAs(pid, marker) {
		return 0, nil
	}
	return pid, nil
}

// StopProcess sends SIGCONT (a paused process cannot shut down) and
// SIGTERM to pid, SIGKILL after grace, and waits until it has exited.
func StopProcess(ctx context.Context, pid int, marker string, grace time.Duration) error {
	return SignalAndWait(ctx, pid, marker, grace, syscall.SIGTERM, func() { syscall.Kill(pid, syscall.SIGKILL) })
}

// SignalAndWait sends SIGCONT and sig to pid, if it runs as marker, and
// waits until it has exited; once grace has passed it calls kill, and
// waits 10 s more each time (waitExit).
func SignalAndWait(ctx context.Context, pid int, marker string, grace time.Duration, sig syscall.Signal, kill func()) error {
	// Which process to wait for is read before the signal: once it has
	// the signal, a process on its way out may no longer run as marker.
	start, ok := procStart(pid)
	if !ok || !RunsAs(pid, marker) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGCONT)
	syscall.Kill(pid, sig)
	return waitExit(ctx, pid, start, grace, kill)
}

// waitExit waits until the process pid that started at start has exited
// (gone, or a zombie); once grace has passed it calls kill, and waits 10 s
// more each time.
//
// Not until it stops running as its marker: a process on its way out
// reads an empty command line once its memory is released, and goes on
// exiting (closing its files and sockets) after that. A JVM with a large
// heap does so for a while on a busy machine: the demo's Down once
// returned with a Kafka node still in state R. The process is told from a
// new one that took its PID by its start time.
func waitExit(ctx context.Context, pid int, start string, grace time.Duration, kill func()) error {
	deadline := time.Now().Add(grace)
	for kills := 0; ; {
		if now, ok := procStart(pid); !ok || now != start {
			return nil
		}
		if time.Now().After(deadline) {
			if kills == 3 {
				// Stuck in the kernel (a hung FUSE mount under it can do
				// that): say so rather than wait forever.
				return fmt.Errorf("PID %d has not exited 30s after SIGKILL (state %s in /proc/%d/stat)", pid, procState(pid), pid)
			}
			kill()
			kills++
			deadline = time.Now().Add(10 * time.Second)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// procState is the state letter of /proc/PID/stat, or "gone".
func procState(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) {
		return string(stat[i+2])
	}
	return "gone"
}

// procStart is pid's start time (in clock ticks since boot, field 22 of
// /proc/PID/stat); ok is false when there is no such process or it is a
// zombie (it has exited; only its exit status waits to be collected).
func procStart(pid int) (start string, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The fields after the parenthesised command name, which may hold
	// spaces: state is the first of them, starttime the 20th.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}

// StartDetached starts cmd in a session of its own (a Ctrl-C to ackcheck
// does not reach it) with its output appended to logFile, and records its
// PID in pidFile. The child is reaped when it exits, if this process
// still runs then, so that it never lingers as a zombie. what names it in
// errors.
func StartDetached(cmd *exec.Cmd, logFile, pidFile, what string) error {
	logf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", what, err)
	}
	go cmd.Wait()
	waitExeced(cmd.Process.Pid)
	return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

// waitExeced waits, up to 2 s, until pid's command line can be read.
// cmd.Start returns once the kernel has committed to the new program,
// before it has set up the program's arguments: in between,
// /proc/PID/cmdline reads empty, so RunsAs (which looks for a marker in
// it) took a server just started for one that does not run. In one CI
// run `cluster queen up` failed that way at once, while the server went
// on to start and serve. A process that exits meanwhile ends the wait.
func waitExeced(pid int) {
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(path); err != nil || len(b) > 0 {
			return
		}
	}
}

// SignalPIDFile sends sig to the process in pidFile that runs as marker,
// and fails if there is none. what names it in errors.
func SignalPIDFile(pidFile, marker, what string, sig syscall.Signal) (int, error) {
	pid, err := PIDFrom(pidFile, marker)
	if err != nil {
		return 0, err
	}
	if pid == 0 {
		return 0, fmt.Errorf("%s does not run", what)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return pid, fmt.Errorf("signal %v to %s (PID %d): %w", sig, what, pid, err)
	}
	return pid, nil
}

// StopPIDFile stops the process in pidFile that runs as marker, if there
// is one (StopProcess).
func StopPIDFile(ctx context.Context, pidFile, marker string, grace time.Duration) error {
	pid, err := PIDFrom(pidFile, marker)
	if err != nil || pid == 0 {
		return err
	}
	return StopProcess(ctx, pid, marker, grace)
}

// Nodeset is what up and down need of a local cluster.
type Nodeset interface {
	Nodes() []int32
	PID(id int32) (int, error)
	StartNode(ctx context.Context, id int32) error
	StopNode(ctx context.Context, id int32, grace time.Duration) error
	Mount(id int32) *Mount // nil without lazyfs
}

// RestartClean stops every node cleanly (SIGTERM, SIGKILL after grace),
// makes everything on their lazyfs mounts, if any, durable (a clean
// shutdown loses nothing), runs change while no node runs (it rewrites
// their configuration), and starts every node again. It does not wait for
// them to be ready. why names the change in errors.
func RestartClean(ctx context.Context, c Nodeset, grace time.Duration, why string, change func() error) error {
	for _, id := range c.Nodes() {
		if err := c.StopNode(ctx, id, grace); err != nil {
			return fmt.Errorf("stop node %d to %s: %w", id, why, err)
		}
	}
	for _, id := range c.Nodes() {
		if m := c.Mount(id); m != nil {
			if err := m.Sync(ctx); err != nil {
				return err
			}
		}
	}
	if err := change(); err != nil {
		return fmt.Errorf("%s: %w", why, err)
	}
	for _, id := range c.Nodes() {
		if err := c.StartNode(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// StartNodes mounts every node's lazyfs, if any, then starts every node
// that does not run. It does not wait for them to be ready.
func StartNodes(ctx context.Context, c Nodeset) error {
	for _, id := range c.Nodes() {
		if m := c.Mount(id); m != nil {
			if err := m.Start(ctx); err != nil {
				return err
			}
		}
	}
	for _, id := range c.Nodes() {
		if pid, _ := c.PID(id); pid != 0 {
			continue
		}
		if err := c.StartNode(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// StopNodes stops every node (SIGTERM, SIGKILL after grace), in the
// reverse of the order StartNodes starts them (a server before the
// database it needs), then unmounts the lazyfs under each node that
// stopped: a mount never goes from under a running broker.
func StopNodes(ctx context.Context, c Nodeset, grace time.Duration) error {
	var errs []error
	stopped := map[int32]bool{}
	for _, id := range reversed(c.Nodes()) {
		err := c.StopNode(ctx, id, grace)
		stopped[id] = err == nil
		errs = append(errs, err)
	}
	for _, id := range c.Nodes() {
		if m := c.Mount(id); m != nil && stopped[id] {
			errs = append(errs, m.Stop(ctx))
		}
	}
	return errors.Join(errs...)
}

// Tail is the last n bytes of b, for a log quoted in an error.
func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// DefaultCacheDir is where launchers keep what they fetch or build once
// (jars, server binaries), outside any repository: $XDG_CACHE_HOME/ackcheck
// or ~/.cache/ackcheck.
func DefaultCacheDir() string {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "ackcheck")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "ackcheck")
	}
	return filepath.Join(os.TempDir(), "ackcheck-cache")
}
