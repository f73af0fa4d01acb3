package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/message"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// killedRun runs the binary against c for rate msg/s, 60 s scheduled,
// and SIGKILLs it after 2 s: a run directory whose ledger ends in a crash.
func killedRun(t *testing.T, c *kfake.Cluster, rate int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary(t), "run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--partitions", "2",
		"--rate", strconv.Itoa(rate), "--duration", "60s")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return out
}

// Issue 35, point 2: a forged record of a killed run, far past its
// schedule (sequence 100,000 where the schedule had 12,000 per producer,
// sent an hour after the run), is a phantom and fails the verdict. It was
// "unrecorded" and the verdict passed: no bound held unrecorded reads.
func TestForgedRecordAfterAKilledRun(t *testing.T) {
	c := kfakeCluster(t)
	out := killedRun(t, c, 400)
	s, err := runner.ReadSettings(out)
	if err != nil {
		t.Fatal(err)
	}
	runID, err := strconv.ParseUint(s.RunID, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	forged := message.Encode(nil, message.ID{Run: runID, Producer: 0, Seq: 100_000}, time.Now().Add(time.Hour), 1024)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: s.Topic.Name, Partition: 0, Value: forged}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"verify", "--out", out}, &stdout, &stderr)
	r := readResult(t, out)
	if code != exitFail || r.Verdict != verifier.Fail || r.Phantom != 1 || r.Unrecorded > 20 {
		t.Fatalf("verify: exit %d, verdict %s, phantom %d, unrecorded %d; want exit %d, fail, 1 phantom\n%s%s",
			code, r.Verdict, r.Phantom, r.Unrecorded, exitFail, stdout.String(), stderr.String())
	}
	if len(r.Samples["phantom"]) != 1 || !strings.HasSuffix(r.Samples["phantom"][0].ID, "-0-100000") {
		t.Fatalf("phantom samples %+v", r.Samples["phantom"])
	}
}

// Found in review: a JUnit file a PASS left stayed after a verify that
// gave no verdict (a damaged ledger; a merged verify whose shards could
// not be read), and a CI job publishing JUnit showed the pass. Now every
// verify and report marks --junit pending before it works and writes why
// it gave no verdict.
func TestJUnitOfAnEarlierPassDoesNotStand(t *testing.T) {
	c := kfakeCluster(t)
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "run"), filepath.Join(dir, "checks.xml")
	exec := func(args ...string) int {
		var stdout, stderr bytes.Buffer
		return execute(context.Background(), args, &stdout, &stderr)
	}
	if code := exec("run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--partitions", "2",
		"--rate", "500", "--duration", "1s", "--junit", junit); code != exitPass {
		t.Fatalf("run: exit %d", code)
	}
	if err := os.Remove(filepath.Join(out, "ledger", "COMMITTED")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "--out", out, "--junit", junit},
		{"report", "--out", out, "--junit", junit},
		{"verify", "--out", filepath.Join(dir, "merged"), "--shard-dir", filepath.Join(dir, "no-such-shard"), "--junit", junit},
	} {
		if err := os.WriteFile(junit, []byte(`<testsuite name="an earlier pass" tests="1" failures="0"></testsuite>`), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := exec(args...); code != exitError {
			t.Fatalf("%v: exit %d, want %d", args, code, exitError)
		}
		b, err := os.ReadFile(junit)
		if err != nil || bytes.Contains(b, []byte("an earlier pass")) || !bytes.Contains(b, []byte("<error")) || !bytes.Contains(b, []byte("no verdict")) {
			t.Fatalf("%v: --junit after it: %v\n%s", args, err, b)
		}
	}
}
