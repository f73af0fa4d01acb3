package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

// copyTree copies a directory tree (a run directory, a ledger).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Evidence from another run is refused, never judged (hostile review of
// issue 24's fixes). Run a lost all 500 acked messages (its broker came
// back empty); run b, on the same topic name with the same schedule,
// passed. Message IDs are numbered alike in every run, so:
//   - b's reads/ copied into a made `report --out a` PASS, exit 0;
//   - b's ledger put in a's place made `verify` PASS, exit 0, under a's
//     run.json (its name, settings and saved checks).
//
// Both are now refused (exit 2, result.json untouched); a's and b's own
// evidence still gives FAIL and PASS.
func TestForeignEvidenceRefused(t *testing.T) {
	ctx := context.Background()
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(ctx, args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	c1 := kfakeCluster(t)
	if code, o := run("run", "--brokers", strings.Join(c1.ListenAddrs(), ","), "--out", a, "--partitions", "2", "--rate", "500", "--duration", "1s", "--no-verify"); code != exitPass {
		t.Fatalf("run a: exit %d\n%s", code, o)
	}
	c1.Close()
	c2, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	brokers := strings.Join(c2.ListenAddrs(), ",")
	if code, o := run("run", "--brokers", brokers, "--out", b, "--partitions", "2", "--rate", "500", "--duration", "1s"); code != exitPass {
		t.Fatalf("run b: exit %d\n%s", code, o)
	}
	// a's own verdict: none of its messages is on c2.
	if code, o := run("verify", "--out", a, "--brokers", brokers, "--read-idle-timeout", "3s"); code != exitFail || readResult(t, a).Lost != 500 {
		t.Fatalf("verify a: exit %d, lost %d\n%s", code, readResult(t, a).Lost, o)
	}

	withReads := filepath.Join(dir, "a-with-b-reads")
	copyTree(t, a, withReads)
	os.RemoveAll(filepath.Join(withReads, "reads"))
	copyTree(t, filepath.Join(b, "reads"), filepath.Join(withReads, "reads"))
	withLedger := filepath.Join(dir, "a-with-b-ledger")
	copyTree(t, a, withLedger)
	os.RemoveAll(filepath.Join(withLedger, "ledger"))
	os.RemoveAll(filepath.Join(withLedger, "reads"))
	copyTree(t, filepath.Join(b, "ledger"), filepath.Join(withLedger, "ledger"))

	tests := []struct {
		name string
		args []string
		out  string
		code int
		says string
		lost int64 // result.json afterwards
	}{
		{"a's own reads: FAIL", []string{"report", "--out", a}, a, exitFail, "verdict: FAIL", 500},
		{"b's own reads: PASS", []string{"report", "--out", b}, b, exitPass, "verdict: PASS", 0},
		{"report with b's reads in a", []string{"report", "--out", withReads}, withReads, exitError, "the read-back ledger is not this run's", 500},
		{"verify with b's ledger in a", []string{"verify", "--out", withLedger, "--brokers", brokers, "--read-idle-timeout", "3s"}, withLedger, exitError, "the ledger is not this run's", 500},
		{"report with b's ledger in a", []string{"report", "--out", withLedger}, withLedger, exitError, "the ledger is not this run's", 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, o := run(tc.args...)
			r := readResult(t, tc.out)
			if code != tc.code || !strings.Contains(o, tc.says) || r.Lost != tc.lost {
				t.Fatalf("exit %d (want %d), result.json lost %d (want %d), output does not say %q?\n%s", code, tc.code, r.Lost, tc.lost, tc.says, o)
			}
			if tc.code == exitError && r.Verdict != verifier.Fail {
				t.Fatalf("a refused re-read changed result.json to %s", r.Verdict)
			}
		})
	}
}

// run.json's checks are held to those the run recorded in its ledger
// (hostile review of issue 24's fixes): a run that FAILed --max-no-ack
// 1ms, its run.json's max_no_ack edited to 0s, gave `report` PASS, exit
// 0, with nothing in result.json to say so (dropping the checks at least
// printed that they were unknown). Both are now refused (exit 2); the
// untouched run.json still gives FAIL, and a flag still changes a check
// openly.
func TestEditedChecksRefused(t *testing.T) {
	c := kfakeCluster(t)
	out := filepath.Join(t.TempDir(), "run")
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, o := run("run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--partitions", "2", "--rate", "500", "--duration", "1s", "--max-no-ack", "1ms"); code != exitFail {
		t.Fatalf("run: exit %d\n%s", code, o)
	}
	path := filepath.Join(out, "run.json")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(checks map[string]any, s map[string]any)) []byte {
		var s map[string]any
		if err := json.Unmarshal(orig, &s); err != nil {
			t.Fatal(err)
		}
		checks, _ := s["checks"].(map[string]any)
		f(checks, s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		runJSON []byte
		args    []string
		code    int
		says    string
	}{
		{"run.json as the run left it", orig, nil, exitFail, "verdict: FAIL"},
		{"max_no_ack turned off in run.json", edit(func(c, _ map[string]any) { c["max_no_ack"] = "0s" }), nil, exitError, "run.json was changed after the run"},
		{"checks dropped from run.json", edit(func(_, s map[string]any) { delete(s, "checks") }), nil, exitError, "run.json was changed after the run"},
		{"a flag changes the check openly", orig, []string{"--max-no-ack", "none"}, exitPass, "--max-no-ack: 1ms at the run, none at this report"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.runJSON, 0o644); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(out, "result.json"))
			code, o := run(append([]string{"report", "--out", out}, tc.args...)...)
			if code != tc.code || !strings.Contains(o, tc.says) {
				t.Fatalf("exit %d (want %d), output does not say %q?\n%s", code, tc.code, tc.says, o)
			}
			if after, _ := os.ReadFile(filepath.Join(out, "result.json")); tc.code == exitError && !bytes.Equal(before, after) {
				t.Fatal("a refused report changed result.json")
			}
		})
	}
}
