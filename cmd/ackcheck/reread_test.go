package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	reportpkg "github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// junitStatuses parses a JUnit file into case name -> passed, failed,
// error or skipped.
func junitStatuses(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Time    *string   `xml:"time,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	got := map[string]string{}
	for _, c := range s.Cases {
		st := "passed"
		switch {
		case c.Failure != nil:
			st = "failed"
		case c.Error != nil:
			st = "error"
		case c.Skipped != nil:
			st = "skipped"
		}
		if c.Time == nil {
			t.Errorf("%s: case %q has no time", path, c.Name)
		}
		got[c.Name] = st
	}
	return got
}

// The case: `run --ordered --max-no-ack 1ms` fails; verify and
// report without flags fail the same way (they used to pass); verify
// --max-no-ack none passes, prints the change and records it.
func TestRereadFromTheCommandLine(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	ctx := context.Background()
	exec := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := execute(ctx, args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := exec("run", "--brokers", brokers, "--out", out, "--partitions", "2", "--rate", "500", "--duration", "1s",
		"--ordered", "--max-no-ack", "1ms", "--junit", filepath.Join(dir, "run.xml"))
	if code != exitFail {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	failsOnNoAck := func(r verifier.Result) bool {
		return r.Verdict == verifier.Fail && slices.ContainsFunc(r.Failures, func(f verifier.Failure) bool { return f.Check == verifier.CheckMaxNoAck })
	}
	for _, args := range [][]string{
		{"verify", "--out", out, "--junit", filepath.Join(dir, "verify.xml")},
		{"report", "--out", out, "--junit", filepath.Join(dir, "report.xml")},
	} {
		code, stdout, stderr := exec(args...)
		if r := readResult(t, out); code != exitFail || !failsOnNoAck(r) || len(r.CheckChanges) != 0 {
			t.Fatalf("%s: exit %d, verdict %s %v changes %q\n%s\n%s", args[0], code, r.Verdict, r.Reasons, r.CheckChanges, stdout, stderr)
		}
	}
	for _, f := range []string{"run.xml", "verify.xml", "report.xml"} {
		got := junitStatuses(t, filepath.Join(dir, f))
		want := map[string]string{"deadline: acks never stop longer than --max-no-ack": "failed", "in order (--ordered)": "passed",
			"no duplicates (--no-duplicates)": "skipped", "deadline: nodes ready again within --max-ready": "skipped", "no acked message lost": "passed"}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: case %q is %q, want %q", f, name, got[name], w)
			}
		}
	}
	code, stdout, stderr = exec("verify", "--out", out, "--max-no-ack", "none")
	change := "--max-no-ack: 1ms at the run, none at this verify"
	r := readResult(t, out)
	if code != exitPass || !strings.Contains(stdout, "note: "+change) || !slices.Equal(r.CheckChanges, []string{change}) || !r.Checks.Ordered {
		t.Fatalf("verify --max-no-ack none: exit %d, changes %q, checks %+v\n%s\n%s", code, r.CheckChanges, r.Checks, stdout, stderr)
	}
}

// A verify whose fetches fail leaves result.json (incomplete) and a JUnit
// error case, exits 2, and says how to finish.
func TestIncompleteFromTheCommandLine(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", brokers, "--out", out, "--partitions", "2", "--rate", "500",
		"--duration", "1s", "--no-verify"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("run --no-verify: exit %d: %s", code, stderr.String())
	}
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("fetch refused on purpose"), true
	})
	junit := filepath.Join(dir, "verify.xml")
	code := execute(context.Background(), []string{"verify", "--out", out, "--read-idle-timeout", "1s", "--junit", junit}, &stdout, &stderr)
	r := readResult(t, out)
	t.Logf("stderr: %s", stderr.String())
	if code != exitError || r.Verdict != verifier.Incomplete || r.ReadBackComplete ||
		!strings.Contains(stderr.String(), "finish it with `ackcheck verify --out "+out+"`") || !strings.Contains(stderr.String(), "partition 1: no progress") {
		t.Fatalf("exit %d, verdict %s, complete %v\n%s\n%s", code, r.Verdict, r.ReadBackComplete, stdout.String(), stderr.String())
	}
	got := junitStatuses(t, junit)
	if got["read-back complete"] != "error" || got["no acked message lost"] != "error" || got["something acked"] != "passed" {
		t.Fatalf("junit %v", got)
	}
}

// fsync-audit --junit: one suite, a case per setting, failing only where
// the exit status fails (a setting whose acks mean fsynced lost acked
// messages), an error where a setting reached no conclusion, skipped
// after the audit stopped.
func TestAuditJUnit(t *testing.T) {
	setting := func(name string, expectLoss bool) scenarios.AuditSetting {
		return scenarios.AuditSetting{DurabilitySetting: drivers.DurabilitySetting{Name: name, Label: name + " label", ExpectLoss: expectLoss}}
	}
	audit := scenarios.FsyncAudit{Broker: "kafka", LossAt: 10 * time.Second,
		Settings: []scenarios.AuditSetting{setting("default", true), setting("fsync", false), setting("other", false), setting("last", false)}}
	row := func(lost int64, power string) scenarios.AuditRow {
		return scenarios.AuditRow{Acked: 100, Lost: lost, PowerLoss: power, Verdict: verifier.Fail, Finding: "finding"}
	}
	grouped := func(r scenarios.AuditRow, fsync bool, commitsLost int64) scenarios.AuditRow {
		r.Consumer = &scenarios.ConsumerRow{Group: "g", CommitFsync: &fsync, Commits: 100, CommitsLost: commitsLost}
		return r
	}
	tests := []struct {
		name   string
		rows   []scenarios.AuditRow
		runErr error
		want   []string
	}{
		{"expected loss passes, promised fsync keeps", []scenarios.AuditRow{row(12, "applied"), row(0, "applied"), row(0, "applied"), row(0, "applied")}, nil,
			[]string{"passed", "passed", "passed", "passed"}},
		{"broken promise fails, no power loss errs", []scenarios.AuditRow{row(0, "applied"), row(3, "applied"), row(0, "failed: no lazyfs"), row(0, "applied")}, nil,
			[]string{"passed", "failed", "error", "passed"}},
		{"the audit stopped", []scenarios.AuditRow{row(12, "applied")}, errors.New("setting fsync: heal the cluster"),
			[]string{"passed", "error", "skipped", "skipped"}},
		// --group: a commit lost fails only where commits were fsynced.
		{"a fsynced commit lost fails", []scenarios.AuditRow{grouped(row(12, "applied"), false, 40), grouped(row(0, "applied"), true, 2),
			grouped(row(0, "applied"), true, 0), row(0, "applied")}, nil,
			[]string{"passed", "failed", "passed", "passed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.xml")
			if err := writeAuditJUnit(path, audit, &scenarios.AuditResult{Rows: tc.rows}, tc.runErr); err != nil {
				t.Fatal(err)
			}
			got := junitStatuses(t, path)
			if len(got) != len(audit.Settings) {
				t.Fatalf("%d cases for %d settings: %v", len(got), len(audit.Settings), got)
			}
			for i, s := range audit.Settings {
				if name := s.Name + " (" + s.Label + ")"; got[name] != tc.want[i] {
					t.Errorf("case %q is %q, want %q", name, got[name], tc.want[i])
				}
			}
		})
	}
	if _, err := reportpkg.Suite("x", "y", []reportpkg.Check{{Name: "a", Status: "maybe"}}); err == nil {
		t.Fatal("a case of no known status was written")
	}
}
