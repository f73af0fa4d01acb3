package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/runner"
)

func TestParseShard(t *testing.T) {
	cases := []struct {
		v, env      string
		idx, count  int
		errContains string
	}{
		{"2/4", "", 2, 4, ""},
		{"0/1", "", 0, 1, ""},
		{"auto/4", "3", 3, 4, ""},
		{"auto/4", "", 0, 0, "JOB_COMPLETION_INDEX is not set"},
		{"auto/4", "4", 0, 0, "I must be 0 to 3"},
		{"4/4", "", 0, 0, "I must be 0 to 3"},
		{"-1/4", "", 0, 0, "I must be 0 to 3"},
		{"1/0", "", 0, 0, "at least 1"},
		{"1", "", 0, 0, "give I/N"},
		{"x/4", "", 0, 0, "I must be"},
	}
	for _, tc := range cases {
		t.Run(tc.v+"_"+tc.env, func(t *testing.T) {
			idx, count, err := parseShard(tc.v, tc.env)
			switch {
			case tc.errContains == "" && (err != nil || idx != tc.idx || count != tc.count):
				t.Fatalf("got %d/%d, %v; want %d/%d", idx, count, err, tc.idx, tc.count)
			case tc.errContains != "" && (err == nil || !strings.Contains(err.Error(), tc.errContains)):
				t.Fatalf("err %v, want %q", err, tc.errContains)
			}
		})
	}
}

// The command line end to end, on kfake: shards run with --shard and
// --start-at, verify --shard-dir judges them (exit 0); a shard missing is
// exit 2 "unproven"; a shard verified alone is refused with the merged
// command; --shard without a start is refused before anything runs.
func TestShardCommands(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	base := t.TempDir()
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	const n = 2
	codes := make([]int, n)
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			codes[i] = execute(context.Background(), []string{"run", "--brokers", brokers, "--partitions", "2", "--rate", "400", "--duration", "2s",
				"--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start, "--out", filepath.Join(base, fmt.Sprintf("shard-%d", i))}, &stdout, &stderr)
			outs[i] = stdout.String() + stderr.String()
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != exitPass || !strings.Contains(outs[i], "judge every shard together") {
			t.Fatalf("shard %d: exit %d\n%s", i, codes[i], outs[i])
		}
	}
	verify := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), append([]string{"verify"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := verify("--out", filepath.Join(base, "merged"), "--shard-dir", filepath.Join(base, "shard-*")); code != exitPass || !strings.Contains(out, "verdict: PASS") {
		t.Fatalf("merged verify: exit %d\n%s", code, out)
	}
	if code, out := verify("--out", filepath.Join(base, "half"), "--shard-dir", filepath.Join(base, "shard-0")); code != exitError ||
		!strings.Contains(out, "unproven") || !strings.Contains(out, "shard 1 of 2 is missing") {
		t.Fatalf("verify of one shard of two: exit %d\n%s", code, out)
	}
	if code, out := verify("--out", filepath.Join(base, "shard-1")); code != exitError || !strings.Contains(out, "--shard-dir") {
		t.Fatalf("verify of a shard alone: exit %d\n%s", code, out)
	}
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", brokers, "--shard", "0/2", "--out", filepath.Join(base, "nostart")}, &stdout, &stderr); code != exitError ||
		!strings.Contains(stderr.String(), "--start-at") {
		t.Fatalf("--shard without a start: exit %d\n%s", code, stderr.String())
	}
}

// Issue 27, point 2, end to end: `ackcheck faults` applies the load's
// one fault (--fsync on, a topic setting kfake honours) for two shards
// started with --external-faults; the merged verify reports it from the
// shared timeline. Without the timeline the merged verdict is unproven
// (exit 2), never a PASS without faults; a shard given --fault as well
// as --external-faults is refused.
func TestFaultsCommand(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	base := t.TempDir()
	startDir := filepath.Join(base, "start")
	const n = 2
	codes := make([]int, n+1)
	outs := make([]string, n+1)
	var wg sync.WaitGroup
	for i := range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			args := []string{"run", "--brokers", brokers, "--partitions", "2", "--rate", "400", "--duration", "2s", "--start-lead", "4s",
				"--shard", fmt.Sprintf("%d/%d", i, n), "--start-dir", startDir, "--external-faults", "--out", filepath.Join(base, fmt.Sprintf("shard-%d", i))}
			if i == n {
				args = []string{"faults", "--brokers", brokers, "--topic", "ackcheck", "--duration", "2s", "--start-lead", "4s", "--recovery-timeout", "1s",
					"--shards", fmt.Sprint(n), "--start-dir", startDir, "--fsync", "on"}
			}
			codes[i] = execute(context.Background(), args, &stdout, &stderr)
			outs[i] = stdout.String() + stderr.String()
		}()
	}
	wg.Wait()
	for i := range n + 1 {
		if codes[i] != exitPass {
			t.Fatalf("process %d: exit %d\n%s", i, codes[i], outs[i])
		}
	}
	if !strings.Contains(outs[n], "faults done: 1 records") {
		t.Fatalf("faults: %s", outs[n])
	}
	verify := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), append([]string{"verify"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	merged := filepath.Join(base, "merged")
	if code, out := verify("--out", merged, "--shard-dir", filepath.Join(base, "shard-*")); code != exitPass || !strings.Contains(out, "verdict: PASS") {
		t.Fatalf("merged verify: exit %d\n%s", code, out)
	}
	data, err := os.ReadFile(filepath.Join(merged, "result.json"))
	if err != nil || !strings.Contains(string(data), `"action": "fsync-on"`) {
		t.Fatalf("merged result.json (%v) lacks the fsync-on the faults process applied:\n%s", err, data)
	}
	if err := os.WriteFile(runner.TimelinePath(startDir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := verify("--out", filepath.Join(base, "merged2"), "--shard-dir", filepath.Join(base, "shard-*")); code != exitError || !strings.Contains(out, "unproven") ||
		!strings.Contains(out, "timeline") {
		t.Fatalf("merged verify with a damaged timeline: exit %d\n%s", code, out)
	}
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", brokers, "--shard", "0/2", "--start-dir", filepath.Join(base, "start2"), "--external-faults",
		"--fsync", "on", "--out", filepath.Join(base, "both")}, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "not to the shards") {
		t.Fatalf("a shard given faults and --external-faults: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
