package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// deadPort is a 127.0.0.1 address nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// dirDigest hashes every file under dir (path and content) except those
// skip names: what a command left changed or not.
func dirDigest(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+string(filepath.Separator)) {
				return nil
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The audit's case (issue 35 point 4): a run FAILs with acked messages
// lost (a driver that drops every 50th after acking it), then `verify
// --brokers <nothing listening>` cannot read anything. It used to write
// lost = every acked message, list them all in lost.jsonl, and replace
// reads/ and result.json: the proven FAIL was gone (verdict incomplete).
// Now it exits 2 saying it added nothing proven, and leaves result.json,
// reads/, the lists and the reports byte for byte as they were; report
// still gives the FAIL. Without an earlier verdict the same verify writes
// one: incomplete, lost 0, every acked message unread (unread.jsonl),
// none in lost.jsonl.
func TestUnreachableBrokerKeepsTheProvenVerdict(t *testing.T) {
	c := kfakeCluster(t)
	ctx := context.Background()
	dir := t.TempDir()
	exec := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := execute(ctx, args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	newRun := func(name string, verify bool) (string, *verifier.Result) {
		kd, settings := kfakeDriver(t, c)
		out := filepath.Join(dir, name)
		res, err := runner.Run(ctx, runner.Config{
			Out: out, Driver: &drivertest.Faulty{Driver: kd, Mode: drivertest.DropAfterAck, Every: 50},
			DriverSettings: settings,
			Topic:          drivers.TopicSpec{Name: name, Partitions: 2, ReplicationFactor: 1},
			Load:           load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
			Verify:         verify, ReadIdleTimeout: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, res
	}
	dead := deadPort(t)

	t.Run("a proven FAIL is kept", func(t *testing.T) {
		out, res := newRun("failed", true)
		if res.Verdict != verifier.Fail || res.Lost == 0 || res.Unread != 0 {
			t.Fatalf("the run: verdict %s, lost %d, unread %d; want a FAIL with losses", res.Verdict, res.Lost, res.Unread)
		}
		before := dirDigest(t, out, "ledger")
		start := time.Now()
		code, stdout, stderr := exec("verify", "--out", out, "--brokers", dead, "--read-idle-timeout", "2s")
		t.Logf("verify --brokers %s: exit %d in %s\nstderr: %s", dead, code, time.Since(start).Round(time.Millisecond), stderr)
		if code != exitError || !strings.Contains(stderr, "added nothing proven, and changed nothing") ||
			!strings.Contains(stderr, fmt.Sprintf("(fail, judged from a read-back of %s, %d acked messages lost)", res.ReadBackWhen(), res.Lost)) {
			t.Fatalf("exit %d, want %d saying the earlier FAIL is kept\nstdout: %s\nstderr: %s", code, exitError, stdout, stderr)
		}
		after := dirDigest(t, out, "ledger")
		for f, h := range before {
			if after[f] != h {
				t.Errorf("%s changed (or is gone)", f)
			}
		}
		for f := range after {
			if _, ok := before[f]; !ok {
				t.Errorf("%s left behind", f)
			}
		}
		if r := readResult(t, out); r.Verdict != verifier.Fail || r.Lost != res.Lost {
			t.Fatalf("result.json: %s, lost %d; want the run's FAIL with %d lost", r.Verdict, r.Lost, res.Lost)
		}
		if code, stdout, stderr := exec("report", "--out", out); code != exitFail {
			t.Fatalf("report: exit %d, want the FAIL (%d)\n%s\n%s", code, exitFail, stdout, stderr)
		}
	})

	t.Run("without an earlier verdict, unread is not lost", func(t *testing.T) {
		out, _ := newRun("unverified", false)
		code, stdout, stderr := exec("verify", "--out", out, "--brokers", dead, "--read-idle-timeout", "2s")
		if code != exitError || strings.Contains(stderr, "added nothing proven") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		r := readResult(t, out)
		if r.Verdict != verifier.Incomplete || r.Acked == 0 || r.Lost != 0 || r.Unread != r.Acked || len(r.LostByPartition) != 0 || len(r.UnreadByPartition) != 2 {
			t.Fatalf("result.json: %s, acked %d, lost %d, unread %d, lost by partition %v, unread by partition %v",
				r.Verdict, r.Acked, r.Lost, r.Unread, r.LostByPartition, r.UnreadByPartition)
		}
		if n := fileLines(t, filepath.Join(out, verifier.LostFile)); n != 0 {
			t.Fatalf("lost.jsonl has %d lines: unread messages listed as lost", n)
		}
		if n := fileLines(t, filepath.Join(out, verifier.UnreadFile)); n != int(r.Acked) {
			t.Fatalf("unread.jsonl has %d lines, want %d", n, r.Acked)
		}
	})
}

func fileLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}
