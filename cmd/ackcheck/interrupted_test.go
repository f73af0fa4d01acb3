package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A verify interrupted during its read-back leaves the last read-back and
// the result.json judged from it together (hostile review of issue 24's
// fixes). It used to delete reads/ first: after the interruption
// result.json still said PASS while the read-back it rested on was gone,
// and `report` answered "the run has not been read back yet".
func TestInterruptedVerifyKeepsTheLastVerdict(t *testing.T) {
	c := kfakeCluster(t)
	out := filepath.Join(t.TempDir(), "run")
	run := func(ctx context.Context, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(ctx, args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, o := run(context.Background(), "run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--partitions", "2", "--rate", "500", "--duration", "1s"); code != exitPass {
		t.Fatalf("run: exit %d\n%s", code, o)
	}
	before, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("fetch refused on purpose"), true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	code, o := run(ctx, "verify", "--out", out, "--read-idle-timeout", "30s")
	cancel()
	if code != exitError {
		t.Fatalf("interrupted verify: exit %d\n%s", code, o)
	}
	after, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("result.json after an interrupted verify: %v\n%s", err, after)
	}
	if _, err := os.Stat(filepath.Join(out, "reads.new")); !os.IsNotExist(err) {
		t.Fatalf("the interrupted read-back's ledger was left behind: %v", err)
	}
	// The evidence is still the verdict's: report judges it the same.
	if code, o := run(context.Background(), "report", "--out", out); code != exitPass || readResult(t, out).Verdict != verifier.Pass {
		t.Fatalf("report after the interrupted verify: exit %d\n%s", code, o)
	}
	// A read-back that ends unfinished (the fetches refused) proves
	// nothing the PASS does not: the PASS and its read-back are kept as
	// they were, and verify says why (issue 35 point 4; it used to
	// replace them with an incomplete verdict).
	code, o = run(context.Background(), "verify", "--out", out, "--read-idle-timeout", "1s")
	after, err = os.ReadFile(filepath.Join(out, "result.json"))
	if code != exitError || err != nil || !bytes.Equal(before, after) || !strings.Contains(o, "added nothing proven, and changed nothing") {
		t.Fatalf("verify with fetches refused: exit %d, result.json changed %v (%v)\n%s", code, !bytes.Equal(before, after), err, o)
	}
	if code, o := run(context.Background(), "report", "--out", out); code != exitPass || readResult(t, out).Verdict != verifier.Pass {
		t.Fatalf("report after it: exit %d\n%s", code, o)
	}
}
