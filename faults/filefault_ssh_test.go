package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ackcheck/ackcheck/remote"
	"github.com/ackcheck/ackcheck/remote/sshdtest"
)

// The file faults and their heal over a real SSH connection (sshd on
// 127.0.0.1): a cluster-file node whose "broker" is a sleep started by
// its start command, killed, its data files flipped and cut through the
// node's SSH runner; ackcheck is then "killed" (its journal closed, no
// heal) and a new connection heals: the files are byte-identical to
// before and the node runs again.
func TestFileFaultsHealOverSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	dial := func() remote.Runner {
		r, err := remote.DialSSH(context.Background(), remote.SSHConfig{Host: "127.0.0.1", Port: srv.Port,
			User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	dir := dataDir(t, 12)
	orig := readTree(t, dir)
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := NodeSpec{ID: 2, PIDFile: pidFile, DataDir: dir,
		Start: fmt.Sprintf("nohup sleep 600 >/dev/null 2>&1 & echo $! > %s", pidFile)}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL) // the sleep this test started
			}
		}
	})
	ctx := context.Background()
	s := NewScripted([]NodeSpec{spec}, map[int32]remote.Runner{2: dial()}, "ssh test")
	if err := s.Start(ctx, 2); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(t.TempDir(), "heal.jsonl")
	j, err := OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	in := &Injector{Nodes: s, Journal: j, Seed: 5, DataFiles: []string{"*.blk"}}
	apply(t, in, "at=1s kill node:2", Applied)
	flip := apply(t, in, "at=2s bitflip node:2", Applied)
	apply(t, in, "at=3s truncate node:2 *.idx", Applied)
	if len(flip.Files) != 2 || equalTrees(orig, readTree(t, dir)) {
		t.Fatalf("the faults over SSH changed %d files", len(flip.Files))
	}
	j.Close() // killed: no heal

	j2, err := OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	healer := &Injector{Nodes: NewScripted([]NodeSpec{spec}, map[int32]remote.Runner{2: dial()}, "ssh test"), Journal: j2}
	done, err := healer.Heal(ctx)
	if err != nil {
		t.Fatalf("heal over SSH: %v (%v)", err, done)
	}
	if !equalTrees(orig, readTree(t, dir)) {
		t.Error("after the heal over SSH the files differ from before")
	}
	if pid, _ := s.PID(ctx, 2); pid == 0 {
		t.Errorf("the node does not run after the heal: %v", done)
	}
}
