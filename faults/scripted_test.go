package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/remote"
)

// A node whose "broker" is a sleep process with a unique marker, driven by
// shell commands through the local runner: the same commands an SSH runner
// sends.
func scriptedNode(t *testing.T, find string) (*Scripted, NodeSpec) {
	t.Helper()
	dir := t.TempDir()
	marker := fmt.Sprintf("ackcheck-fake-broker-%d", time.Now().UnixNano())
	script := filepath.Join(dir, marker)
	// The script stays the "broker" process (its command line keeps the
	// marker) and takes its child with it on SIGTERM.
	os.WriteFile(script, []byte("#!/bin/sh\nsleep 300 & c=$!\ntrap 'kill $c; exit 0' TERM\nwait\n"), 0o755)
	pidFile := filepath.Join(dir, "pid")
	n := NodeSpec{ID: 1, DataDir: dir, ConfigFile: filepath.Join(dir, "server.properties"),
		Start: fmt.Sprintf("nohup %s >/dev/null 2>&1 & echo $! > %s", script, pidFile)}
	switch find {
	case "pid_file":
		n.PIDFile = pidFile
	case "pgrep":
		n.PGrep = marker // also in the command line of the shell that runs pgrep: the oldest match wins
	}
	os.WriteFile(n.ConfigFile, []byte("a=1\n"), 0o640)
	if err := n.validate(); err != nil {
		t.Fatal(err)
	}
	s := NewScripted([]NodeSpec{n}, map[int32]remote.Runner{1: remote.Local{}}, "local")
	t.Cleanup(func() {
		if pid, _ := s.PID(context.Background(), 1); pid != 0 {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	return s, n
}

func TestScriptedNodes(t *testing.T) {
	for _, find := range []string{"pid_file", "pgrep"} {
		t.Run(find, func(t *testing.T) {
			ctx := context.Background()
			s, n := scriptedNode(t, find)
			if pid, err := s.PID(ctx, 1); err != nil || pid != 0 {
				t.Fatalf("before start: pid %d, %v", pid, err)
			}
			if err := s.Start(ctx, 1); err != nil {
				t.Fatal(err)
			}
			var pid int
			for i := 0; i < 50 && pid == 0; i++ {
				pid, _ = s.PID(ctx, 1)
				time.Sleep(50 * time.Millisecond)
			}
			if pid == 0 {
				t.Fatal("started process not found")
			}
			got, err := s.Signal(ctx, 1, syscall.SIGSTOP)
			if err != nil || got != pid {
				t.Fatalf("SIGSTOP: %d %v", got, err)
			}
			// Signals are delivered asynchronously: give it a moment.
			stopped := false
			for i := 0; i < 100 && !stopped; i++ {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
				stopped = strings.Contains(string(st), "T (stopped)")
				time.Sleep(10 * time.Millisecond)
			}
			if !stopped {
				t.Fatal("SIGSTOP did not stop the process")
			}
			// Stop resumes a paused process first, then SIGTERM, and waits.
			if err := s.Stop(ctx, 1, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if p, _ := s.PID(ctx, 1); p != 0 {
				t.Fatalf("after stop: pid %d", p)
			}
			var stt syscall.Stat_t
			syscall.Stat(n.DataDir, &stt)
			if ino, err := s.DataDirInode(ctx, 1); err != nil || ino != stt.Ino {
				t.Fatalf("inode %d, %v; want %d", ino, err, stt.Ino)
			}
			conf, err := s.ReadConfig(ctx, 1)
			if err != nil || conf != "a=1\n" {
				t.Fatalf("read config %q %v", conf, err)
			}
			if err := s.WriteConfig(ctx, 1, "a=2\nb='quoted'\n"); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(n.ConfigFile)
			fi, _ := os.Stat(n.ConfigFile)
			if string(data) != "a=2\nb='quoted'\n" || fi.Mode().Perm() != 0o640 {
				t.Fatalf("written config %q mode %v", data, fi.Mode().Perm())
			}
			if _, err := s.Signal(ctx, 1, syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "does not run") {
				t.Fatalf("signal to a stopped node: %v", err)
			}
		})
	}
}

// A stale pid file (its process gone) does not count as a running broker.
func TestScriptedStalePIDFile(t *testing.T) {
	s, n := scriptedNode(t, "pid_file")
	os.WriteFile(n.PIDFile, []byte("999999\n"), 0o644)
	if pid, err := s.PID(context.Background(), 1); err != nil || pid != 0 {
		t.Fatalf("stale pid file: %d %v", pid, err)
	}
}

func TestNodeSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		n    NodeSpec
		want string
	}{
		{"no finder", NodeSpec{ID: 1, Start: "x"}, "exactly one of pid_file, pgrep or systemd_unit"},
		{"two finders", NodeSpec{ID: 1, Start: "x", PIDFile: "p", PGrep: "q"}, "exactly one"},
		{"no start", NodeSpec{ID: 1, PIDFile: "p"}, "no start command"},
		{"remote without user", NodeSpec{ID: 1, PIDFile: "p", Start: "x", Host: "10.0.0.1"}, "needs a user"},
		{"systemd needs no start", NodeSpec{ID: 1, SystemdUnit: "kafka"}, ""},
	}
	for _, tc := range tests {
		err := tc.n.validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadClusterFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "c.yaml")
	os.WriteFile(good, []byte(`broker: kafka
brokers: [a:9092]
defaults: {user: kafka, port: 2222, key_file: /k}
nodes:
  - {id: 1, host: h1, pid_file: /p, start: s}
  - {id: 2, host: h2, pgrep: kafka, start: s, user: other}
`), 0o600)
	cf, err := LoadClusterFile(good, []string{"kafka"})
	if err != nil {
		t.Fatal(err)
	}
	if cf.Nodes[0].User != "kafka" || cf.Nodes[0].Port != 2222 || cf.Nodes[0].KeyFile != "/k" || cf.Nodes[1].User != "other" {
		t.Fatalf("defaults not applied: %+v", cf.Nodes)
	}
	for name, body := range map[string]string{
		"unknown field": "nodes:\n  - {id: 1, pid_file: p, start: s, colour: red}\n",
		"duplicate id":  "nodes:\n  - {id: 1, pid_file: p, start: s}\n  - {id: 1, pid_file: p, start: s}\n",
		"no nodes":      "broker: kafka\n",
		"bad broker":    "broker: rabbit\nnodes:\n  - {id: 1, pid_file: p, start: s}\n",
	} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		os.WriteFile(f, []byte(body), 0o600)
		if _, err := LoadClusterFile(f, []string{"kafka"}); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v (want an error naming the file)", name, err)
		}
	}
}

func TestScriptedPowerLoss(t *testing.T) {
	ctx := context.Background()
	s, n := scriptedNode(t, "pid_file")
	if _, err := s.LoseUnsynced(ctx, 1); err == nil || !strings.Contains(err.Error(), "no lose_command") {
		t.Fatalf("without lose_command: %v", err)
	}
	marker := filepath.Join(t.TempDir(), "lost")
	n.LoseCommand = fmt.Sprintf("echo lost > %s; echo 3 files cut back", marker)
	s = NewScripted([]NodeSpec{n}, map[int32]remote.Runner{1: remote.Local{}}, "local")
	if err := s.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoseUnsynced(ctx, 1); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("a loss under a live broker was not refused: %v", err)
	}
	in := &Injector{Nodes: s}
	rec := in.Apply(ctx, Step{Action: PowerLoss, Target: Target{Kind: Node, Node: 1}})
	if rec.Result != "applied" || rec.Lost[1] != "3 files cut back" {
		t.Fatalf("power-loss: %s %q, lost %q", rec.Result, rec.Error, rec.Lost)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("lose_command did not run")
	}
	pid, _ := s.PID(ctx, 1)
	if pid == 0 || pid == rec.PIDs[1] || rec.Restarted[1] != pid {
		t.Fatalf("after the power loss: PID %d, before %d, recorded %d", pid, rec.PIDs[1], rec.Restarted[1])
	}
}
