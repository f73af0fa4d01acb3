package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/matrix"
	"github.com/ackcheck/ackcheck/scenarios"
)

// notReached is the error every path below gives once the schedule is
// read and accepted: the next thing each checks, before any broker or
// cluster is touched.
var notReached = map[string]string{
	"run":    "--out is required",
	"matrix": "--out is required",
	"faults": "holds no cluster",
}

// scheduleThrough reads schedule (a load of 60s, driver driver) through
// each command that takes one: run -f with a scenario file, matrix with
// the same file as a scenario (its check of every cell, then the run it
// would start), and faults (the process of a sharded load). It returns
// each path's error, "" when the schedule was accepted.
func scheduleThrough(t *testing.T, driver, schedule string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	text := fmt.Sprintf("driver: %s\nduration: 60s\nfault: %q\n", driver, schedule)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	keep := func(path string, err error) {
		switch {
		case err == nil:
			t.Fatalf("%s: %q went further than it may here", path, schedule)
		case strings.Contains(err.Error(), notReached[path]):
			got[path] = ""
		default:
			got[path] = err.Error()
		}
	}

	root := newRoot(io.Discard, io.Discard)
	root.SetArgs([]string{"run", "-f", file})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	keep("run", root.ExecuteContext(context.Background()))

	mfile := filepath.Join(dir, "matrix.yaml")
	mtext := "systems:\n  - {name: s, cluster-file: " + filepath.Join(dir, "nodes.yaml") + "}\nscenarios: [s.yaml]\n"
	if err := os.WriteFile(mfile, []byte(mtext), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := matrix.Read(mfile)
	if err != nil {
		t.Fatal(err)
	}
	target, err := prepareRun(f, f.Runs()[0])
	if err == nil {
		target.SetContext(context.Background())
		target.SetOut(io.Discard)
		err = target.RunE(target, nil)
	}
	keep("matrix", err)

	root = newRoot(io.Discard, io.Discard)
	root.SetArgs([]string{"faults", "--driver", driver, "--duration", "60s", "--start-dir", filepath.Join(dir, "start"),
		"--shards", "1", "--cluster-dir", filepath.Join(dir, "none"), "--fault", schedule})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	keep("faults", root.ExecuteContext(context.Background()))
	return got
}

// builtinSchedule is a built-in scenario's schedule with its command's
// defaults, as the built-in computes it.
func builtinSchedule(t *testing.T, b builtinScenario) []faults.Step {
	t.Helper()
	cmd, _ := builtinCommand(b.command)
	fs := cmd.Flags()
	dur, err := time.ParseDuration(fs.Lookup("duration").DefValue)
	if err != nil {
		t.Fatal(err)
	}
	switch b.command {
	case "leader-kill":
		restart, err := time.ParseDuration(fs.Lookup("restart-after").DefValue)
		if err != nil {
			t.Fatal(err)
		}
		return scenarios.LeaderKill{Topic: fs.Lookup("topic").DefValue, KillAt: dur / 3, RestartAfter: restart}.Steps()
	case "fsync-audit":
		return scenarios.FsyncAudit{LossAt: dur / 3}.Steps()
	}
	t.Fatalf("built-in %s: no schedule known to this test", b.name())
	return nil
}

// Every command reads a schedule alike: every built-in scenario of every
// broker, each broker's own target words (Pulsar's owner:), and the
// mistakes, are accepted or refused by run -f, matrix and faults alike,
// with the same error. Before, matrix read schedules without the brokers'
// words and refused owner:t/0 ("use leader:..."), which run accepted.
func TestEveryCommandReadsASchedule(t *testing.T) {
	type tc struct{ name, driver, schedule, refused string }
	var cases []tc
	for _, b := range builtinScenarios() {
		want := builtinSchedule(t, b)
		text := stepsText(want)
		got, err := profiles().readSchedule(text, 60*time.Second)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: its schedule %q reads back as %v, %v", b.name(), text, got, err)
		}
		cases = append(cases, tc{b.name(), b.driver, text, ""})
	}
	words, err := profiles().targetWords()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range profiles() {
		tw, ok := p.(drivers.TargetWords)
		if !ok {
			continue
		}
		for w, kind := range tw.TargetWords() {
			if words[w] != faults.Leader || kind != string(faults.Leader) {
				t.Fatalf("%s's word %s: this test writes words for leader only", p.Name(), w)
			}
			cases = append(cases, tc{p.Name() + " " + w, p.Name(), "at=5s kill " + w + ":t/0; at=20s restart", ""})
		}
	}
	if len(cases) < 2*len(profiles()) {
		t.Fatalf("only %d cases", len(cases))
	}
	cases = append(cases,
		tc{"power loss of all with kill", "kafka", "at=5s kill all", "kill cannot target all"},
		tc{"unknown target", "kafka", "at=5s kill rack:1", `target "rack:1"`},
		tc{"after the load", "kafka", "at=5s kill node:1; at=60s restart", "fires after the load ends (--duration 1m0s)"},
		tc{"unknown action", "pulsar", "at=5s explode owner:t/0", "unknown action explode"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := scheduleThrough(t, c.driver, c.schedule)
			for path, err := range got {
				if c.refused == "" && err != "" {
					t.Errorf("%s refuses %q: %s", path, c.schedule, err)
				}
				if c.refused != "" && !strings.Contains(err, c.refused) {
					t.Errorf("%s: %q gave %q, want %q", path, c.schedule, err, c.refused)
				}
			}
			if c.refused != "" {
				// The same error everywhere: matrix puts where before it.
				_, runErr, _ := strings.Cut(got["run"], "fault ")
				for path, err := range got {
					if !strings.HasSuffix(err, runErr) {
						t.Errorf("%s says %q, run %q", path, err, got["run"])
					}
				}
			}
		})
	}
}

// A Pulsar scenario with owner:<topic>/<partition> in a matrix file is
// accepted before the first run (it was refused: issue 36).
func TestMatrixTakesPulsarsOwner(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "owner.yaml"), []byte("driver: pulsar\nduration: 30s\nfault: at=5s kill owner:t/0; at=15s restart\n"), 0o644)
	mfile := filepath.Join(dir, "matrix.yaml")
	os.WriteFile(mfile, []byte("systems:\n  - {name: p, cluster-file: "+filepath.Join(dir, "nodes.yaml")+"}\nscenarios: [owner.yaml]\n"), 0o644)
	f, err := matrix.Read(mfile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareRun(f, f.Runs()[0]); err != nil {
		t.Fatalf("matrix refuses owner:t/0: %v", err)
	}
}

// --fault's help is the action table's, with the brokers' words.
func TestFaultHelpFromTheTable(t *testing.T) {
	words, err := profiles().targetWords()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run"} {
		c, _, err := newRoot(io.Discard, io.Discard).Find([]string{cmd})
		if err != nil {
			t.Fatal(err)
		}
		usage := c.Flags().Lookup("fault").Usage
		if usage != faults.ScheduleHelp(words) {
			t.Errorf("%s --fault: %q is not the table's help", cmd, usage)
		}
		for _, want := range []string{"kill <node>", "heal-network", "owner: for leader:"} {
			if !strings.Contains(usage, want) {
				t.Errorf("%s --fault's help lacks %q", cmd, want)
			}
		}
	}
}

// No command reads a schedule without the brokers' words: outside
// package faults, no code but its tests calls faults.ParseSchedule or
// faults.ParseTarget (each command goes through readSchedule).
func TestNoScheduleReadWithoutTheBrokersWords(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || path == filepath.Join(root, "faults")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, call := range []string{"faults.ParseSchedule(", "faults.ParseTarget("} {
			if strings.Contains(string(src), call) {
				t.Errorf("%s calls %s: read schedules with readSchedule (the brokers' words and the load's length)", path, call)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
