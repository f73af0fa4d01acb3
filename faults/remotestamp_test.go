package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/remote"
	"github.com/ackcheck/ackcheck/remote/sshdtest"
)

// slowRunner stands for a far machine: each command takes oneWay to get
// there and oneWay to come back.
type slowRunner struct {
	remote.Runner
	oneWay time.Duration
}

func (s slowRunner) Run(ctx context.Context, cmd string) (string, error) {
	time.Sleep(s.oneWay)
	out, err := s.Runner.Run(ctx, cmd)
	time.Sleep(s.oneWay)
	return out, err
}

// A fault's At on a node reached by commands (SSH) must not come before
// its signal: the broker here writes the time every half millisecond
// until it dies, so its last line is an account of the signal's time
// that ackcheck did not compute. At (when the kill's command came back)
// must be at or after that line, and At - AtWithinMs (when the command
// left) at or before it. At was once stamped before the PID lookup and the
// kill's round trips, 3 one-way trips early: a live leader's acks then
// passed for first acks after the kill.
func TestRemoteSignalAtIsNotBeforeTheSignal(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl missing")
	}
	runners := map[string]func(t *testing.T) remote.Runner{
		"local runner, 25 ms each way": func(*testing.T) remote.Runner {
			return slowRunner{Runner: remote.Local{}, oneWay: 25 * time.Millisecond}
		},
		"real sshd on 127.0.0.1": func(t *testing.T) remote.Runner {
			srv := sshdtest.Start(t)
			r, err := remote.DialSSH(context.Background(), remote.SSHConfig{Host: "127.0.0.1", Port: srv.Port,
				User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		},
	}
	for name, mk := range runners {
		for _, a := range []Action{Kill, Pause} {
			t.Run(name+"/"+string(a), func(t *testing.T) {
				r := mk(t)
				dir := t.TempDir()
				times, pidFile := filepath.Join(dir, "times"), filepath.Join(dir, "pid")
				// The "broker" prints the wall clock every 0.5 ms, unbuffered.
				script := filepath.Join(dir, fmt.Sprintf("ackcheck-clock-broker-%d", time.Now().UnixNano()))
				os.WriteFile(script, []byte(`#!/usr/bin/perl
use Time::HiRes qw(time sleep);
open(my $f, ">>", $ARGV[0]) or die; select($f); $| = 1;
for (1..600000) { printf("%d\n", time() * 1e9); sleep(0.0005); }
`), 0o755)
				n := NodeSpec{ID: 1, PIDFile: pidFile, DataDir: dir,
					Start: fmt.Sprintf("nohup %s %s >/dev/null 2>&1 & echo $! > %s", script, times, pidFile)}
				s := NewScripted([]NodeSpec{n}, map[int32]remote.Runner{1: r}, "test")
				ctx := context.Background()
				if err := s.Start(ctx, 1); err != nil {
					t.Fatal(err)
				}
				pid := waitForPID(t, s)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT); syscall.Kill(pid, syscall.SIGKILL) })
				time.Sleep(200 * time.Millisecond) // it writes

				j, _ := OpenJournal("")
				in := &Injector{Nodes: s, Journal: j}
				rec := in.Apply(ctx, Step{Action: a, Target: Target{Kind: Node, Node: 1}})
				if rec.Result != Applied {
					t.Fatalf("%s: %s %s", a, rec.Result, rec.Error)
				}
				time.Sleep(100 * time.Millisecond) // a paused clock writes no more; a dead one neither
				last := lastTime(t, times)
				left := rec.At.Add(-time.Duration(rec.AtWithinMs * float64(time.Millisecond)))
				t.Logf("%s: last line %s, At %s (within %.1f ms)", a, last.Format("15:04:05.000000"),
					rec.At.Format("15:04:05.000000"), rec.AtWithinMs)
				if last.After(rec.At) {
					t.Errorf("At %s is %s before the broker's last line %s: the broker still ran after the fault's time",
						rec.At.Format("15:04:05.000000"), last.Sub(rec.At), last.Format("15:04:05.000000"))
				}
				if rec.AtWithinMs <= 0 {
					t.Errorf("AtWithinMs %v: a signal sent by a command has a round trip", rec.AtWithinMs)
				}
				// The clock wrote until the signal, which came after the
				// command left: allow one write interval and a scheduling slip.
				if left.After(last.Add(5 * time.Millisecond)) {
					t.Errorf("At - AtWithinMs = %s is after the broker's last line %s: the bound does not hold the signal",
						left.Format("15:04:05.000000"), last.Format("15:04:05.000000"))
				}
			})
		}
	}
}

func waitForPID(t *testing.T, s *Scripted) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		if pid, _ := s.PID(context.Background(), 1); pid != 0 {
			return pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the clock broker did not start")
	return 0
}

func lastTime(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) < 10 {
		t.Fatalf("the clock broker wrote %d lines", len(lines))
	}
	ns, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, ns)
}

// clockBroker starts the clock "broker" of TestRemoteSignalAtIsNotBeforeTheSignal
// on node 1 of a Scripted over r, and returns the Scripted, its PID and
// the file it writes the time to.
func clockBroker(t *testing.T, r remote.Runner) (*Scripted, int, string) {
	t.Helper()
	need.Tools(t, need.SSHD, "perl")
	dir := t.TempDir()
	times, pidFile := filepath.Join(dir, "times"), filepath.Join(dir, "pid")
	script := filepath.Join(dir, fmt.Sprintf("ackcheck-clock-broker-%d", time.Now().UnixNano()))
	os.WriteFile(script, []byte(`#!/usr/bin/perl
use Time::HiRes qw(time sleep);
open(my $f, ">>", $ARGV[0]) or die; select($f); $| = 1;
for (1..600000) { printf("%d\n", time() * 1e9); sleep(0.0005); }
`), 0o755)
	n := NodeSpec{ID: 1, PIDFile: pidFile, DataDir: dir,
		Start: fmt.Sprintf("nohup %s %s >/dev/null 2>&1 & echo $! > %s", script, times, pidFile)}
	s := NewScripted([]NodeSpec{n}, map[int32]remote.Runner{1: r}, "test")
	t.Cleanup(func() { s.prep.close() })
	if err := s.Start(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	pid := waitForPID(t, s)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT); syscall.Kill(pid, syscall.SIGKILL) })
	return s, pid, times
}

// Faults on a node over SSH (this machine's sshd) fire within 100 ms of
// their due time: the node is prepared three seconds ahead (a shell kept open,
// the PID read in it), so at the due time a pause, a resume and a kill are
// each one command through that shell. Before, each did a PID lookup and a
// signal, a session each, at its due time: 390-530 ms late.
func TestSSHFaultsFireOnTime(t *testing.T) {
	srv := sshdtest.Start(t)
	r, err := remote.DialSSH(context.Background(), remote.SSHConfig{Host: "127.0.0.1", Port: srv.Port,
		User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s, pid, times := clockBroker(t, r)
	steps, err := ParseSchedule("at=3.2s pause node:1; at=4.2s resume node:1; at=5.2s kill node:1")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := OpenJournal("")
	in := &Injector{Nodes: s, Journal: j, Logf: t.Logf}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in.Run(ctx, time.Now(), steps)
	recs := in.Records()
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for _, rec := range recs {
		slip := rec.At.Sub(rec.Due)
		t.Logf("%s: due %s, at %s (%+.1f ms, within %.1f ms), PID %d", rec.Action, rec.Due.Format("15:04:05.000"),
			rec.At.Format("15:04:05.000"), float64(slip)/float64(time.Millisecond), rec.AtWithinMs, rec.PID)
		if rec.Result != Applied || rec.PID != pid {
			t.Errorf("%s: %s %s on PID %d, want applied on %d", rec.Action, rec.Result, rec.Error, rec.PID, pid)
		}
		if slip < -100*time.Millisecond || slip > 100*time.Millisecond {
			t.Errorf("%s fired %s after it was due: want within 100 ms", rec.Action, slip)
		}
	}
	// The kill's At is not before the broker's last line (it was dead by
	// the time its command came back).
	time.Sleep(50 * time.Millisecond)
	if last := lastTime(t, times); last.After(recs[2].At) {
		t.Errorf("kill At %s before the broker's last line %s", recs[2].At.Format("15:04:05.000000"), last.Format("15:04:05.000000"))
	}
}

// A node prepared, then restarted before the fault is due, is signalled
// as its new process: the prepared PID's start time no longer matches,
// and the command looks the PID up again in the same round trip.
func TestPreparedSignalFindsARestartedNode(t *testing.T) {
	s, old, _ := clockBroker(t, remote.Local{})
	ctx := context.Background()
	if err := s.Prepare(ctx, []int32{1}); err != nil {
		t.Fatal(err)
	}
	if p := s.prep.get(1); p == nil || p.pid != old || p.start == "" {
		t.Fatalf("prepared %+v, want PID %d with its start time", p, old)
	}
	syscall.Kill(old, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if syscall.Kill(old, 0) != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fresh := waitForPID(t, s)
	t.Cleanup(func() { syscall.Kill(fresh, syscall.SIGKILL) })
	if fresh == old {
		t.Fatal("the restarted broker has the old PID")
	}
	pid, _, _, err := s.SignalTimed(ctx, 1, syscall.SIGKILL)
	if err != nil || pid != fresh {
		t.Fatalf("signal after the restart: PID %d, %v; want the new process %d", pid, err, fresh)
	}
	// Gone as the cluster file sees it (a zombie that no one reaped yet
	// still answers kill -0: the pid file's check excludes zombies).
	gone := false
	for i := 0; i < 200 && !gone; i++ {
		p, err := s.PID(ctx, 1)
		gone = err == nil && p == 0
		time.Sleep(10 * time.Millisecond)
	}
	if !gone {
		t.Error("the new process still runs")
	}
	// Nothing runs now: the prepared command says so.
	if _, _, _, err := s.SignalTimed(ctx, 1, syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "does not run") {
		t.Errorf("signal with no broker: %v, want \"does not run\"", err)
	}
}
