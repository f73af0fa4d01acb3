package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/pflag"
)

// Every built-in printed by scenario show, read back with -f, sets every
// flag of the built-in to the value the built-in runs with: the file
// reproduces it.
func TestScenarioShowReproducesTheBuiltin(t *testing.T) {
	dir := t.TempDir()
	for _, b := range builtinScenarios() {
		t.Run(b.name(), func(t *testing.T) {
			var out bytes.Buffer
			if code := execute(context.Background(), []string{"scenario", "show", b.name()}, &out, &out); code != 0 {
				t.Fatalf("scenario show: exit %d: %s", code, out.String())
			}
			path := filepath.Join(dir, strings.ReplaceAll(b.name(), "/", "-")+".yaml")
			os.WriteFile(path, out.Bytes(), 0o644)

			fromFile, _ := builtinCommand(b.command)
			if err := fromFile.ParseFlags([]string{"-f", path}); err != nil {
				t.Fatal(err)
			}
			if err := applyScenarioFile(fromFile, path); err != nil {
				t.Fatalf("the printed file does not read back: %v\n%s", err, out.String())
			}
			// The file runs: none of its settings is refused (a deadline
			// written as 0s would be).
			if err := refuseDurations(fromFile.Flags()); err != nil {
				t.Errorf("the printed file would be refused: %v", err)
			}
			builtin, _ := builtinCommand(b.command)
			args := []string{"--driver", b.driver}
			builtin.ParseFlags(args)
			// The built-in's own defaults that depend on --duration.
			dur := builtin.Flags().Lookup("duration").Value.String()
			want := map[string]string{"kill-at": third(t, dur), "loss-at": third(t, dur)}
			builtin.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "file" {
					return
				}
				got := fromFile.Flags().Lookup(f.Name).Value.String()
				w, ok := want[f.Name]
				if !ok {
					w = f.Value.String()
				}
				if got != w {
					t.Errorf("--%s: the file sets %q, the built-in runs with %q", f.Name, got, w)
				}
			})
			if b.command == "fsync-audit" && fromFile.Flags().Changed("topic") {
				t.Errorf("the audit's file fixes the topic: a second run would read the first one's messages")
			}
			if b.command == "leader-kill" {
				// The schedule written in the comment is the built-in's.
				line := out.String()[strings.Index(out.String(), "#   fault: ")+len("#   fault: "):]
				line = strings.Trim(line[:strings.Index(line, "\n")], `"`)
				steps, err := faults.ParseSchedule(line)
				if err != nil {
					t.Fatalf("the schedule in the comment does not parse: %v", err)
				}
				ka, _ := fromFile.Flags().GetDuration("kill-at")
				ra, _ := fromFile.Flags().GetDuration("restart-after")
				sc := scenarios.LeaderKill{Topic: "ackcheck", KillAt: ka, RestartAfter: ra}
				if got, want := stepsText(steps), stepsText(sc.Steps()); got != want {
					t.Errorf("comment's schedule %q, the built-in's %q", got, want)
				}
			}
		})
	}
}

func third(t *testing.T, dur string) string {
	var fs pflag.FlagSet
	d := fs.Duration("d", 0, "")
	fs.Set("d", dur)
	return (*d / 3).String()
}

func stepsText(steps []faults.Step) string {
	var s []string
	for _, st := range steps {
		s = append(s, st.String())
	}
	return strings.Join(s, "; ")
}

// What a file may say, and how each mistake is named.
func TestScenarioFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		args       []string
		wantErr    string // "" for none
		check      func(t *testing.T, fs *pflag.FlagSet)
	}{
		{name: "every kind of value", file: "rate: 2500\nduration: 90s\nno-duplicates: true\ntopic-config:\n  flush.messages: 1\n  min.insync.replicas: 2\nbrokers: [a:1, b:2]\nfault:\n  - at=10s kill node:1\n  - at=20s restart\n",
			check: func(t *testing.T, fs *pflag.FlagSet) {
				for name, want := range map[string]string{"rate": "2500", "duration": "1m30s", "no-duplicates": "true",
					"topic-config": "[flush.messages=1,min.insync.replicas=2]", "brokers": "[a:1,b:2]", "fault": "at=10s kill node:1; at=20s restart"} {
					if got := fs.Lookup(name).Value.String(); got != want {
						t.Errorf("%s = %q, want %q", name, got, want)
					}
				}
			}},
		{name: "the command line wins", file: "rate: 2500\nduration: 90s\n", args: []string{"--rate", "10"},
			check: func(t *testing.T, fs *pflag.FlagSet) {
				if r, _ := fs.GetFloat64("rate"); r != 10 {
					t.Errorf("rate %v: the file overrode the command line", r)
				}
				if d := fs.Lookup("duration").Value.String(); d != "1m30s" {
					t.Errorf("duration %s: the file's was not taken", d)
				}
			}},
		{name: "unknown key", file: "rate: 10\nrtae: 20\n", wantErr: `:2: unknown key "rtae": the keys are the flags of ackcheck run (see its --help); did you mean rate?`},
		{name: "wrong type", file: "duration: 90s\nrate: fast\n", wantErr: `:2: rate: invalid argument "fast"`},
		{name: "duration without unit", file: "duration: 90\n", wantErr: `:1: duration: invalid argument "90"`},
		{name: "list for a number", file: "rate: [1, 2]\n", wantErr: ":1: rate: expects one number, got a list"},
		{name: "mapping for a string", file: "topic:\n  name: x\n", wantErr: ":1: topic: expects one string, got a mapping"},
		{name: "plain value for a mapping", file: "topic-config: flush.messages=1\n", wantErr: ":1: topic-config: expects a mapping"},
		{name: "key twice", file: "rate: 1\nduration: 2s\nrate: 3\n", wantErr: ":3: rate is given twice (first on line 1)"},
		{name: "empty value", file: "rate:\n", wantErr: ":1: rate: has no value"},
		{name: "not a mapping", file: "- rate: 1\n", wantErr: ":1: a scenario file is a mapping of flag names to values"},
		{name: "empty file", file: "", wantErr: "is empty"},
		{name: "yaml syntax", file: "rate: 1\n  duration: [\n", wantErr: "yaml: line"},
		{name: "a hidden or invocation flag", file: "file: other.yaml\n", wantErr: `:1: unknown key "file"`},
		{name: "a file for another command", file: "scenario: leader-kill\nrate: 1\n", wantErr: ":1: the file is for ackcheck leader-kill"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "s"+string(rune('a'+i))+".yaml")
			os.WriteFile(path, []byte(tc.file), 0o644)
			cmd := newRunCmd()
			if err := cmd.ParseFlags(append([]string{"-f", path}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			err := applyScenarioFile(cmd, path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("no error, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not say %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.HasPrefix(err.Error(), path) && !strings.Contains(err.Error(), "scenario file "+path):
				t.Fatalf("error %q does not name the file", err)
			}
			if tc.check != nil {
				tc.check(t, cmd.Flags())
			}
		})
	}
}

// run -f dispatches a file naming a built-in to it, carrying the command
// line's flags over; exit 2 for each mistake, before anything runs.
func TestRunFileDispatch(t *testing.T) {
	dir := t.TempDir()
	lk := filepath.Join(dir, "lk.yaml")
	os.WriteFile(lk, []byte("scenario: leader-kill\nrate: 100\nduration: 30s\n"), 0o644)
	odd := filepath.Join(dir, "odd.yaml")
	os.WriteFile(odd, []byte("scenario: chaos\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		// The leader kill's own refusal: the file reached it.
		{[]string{"run", "-f", lk, "--out", dir + "/x"}, "--cluster-dir or --cluster-file is required: the cluster whose leader is killed"},
		{[]string{"run", "-f", lk, "--fault", "at=1s kill node:1"}, "--fault is not a setting of the leader-kill scenario"},
		{[]string{"run", "-f", odd}, `:1: scenario "chaos": use one of run, leader-kill, fsync-audit`},
		{[]string{"run", "-f", filepath.Join(dir, "missing.yaml")}, "scenario file: open"},
		{[]string{"scenario", "show", "kafka/chaos"}, "no built-in scenario \"kafka/chaos\": the built-ins are kafka/leader-kill"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		if code := execute(context.Background(), tc.args, &stdout, &stderr); code != exitError {
			t.Errorf("%v: exit %d, want 2; stderr %s", tc.args, code, stderr.String())
			continue
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not say %q", tc.args, stderr.String(), tc.want)
		}
	}
	// A plain run file runs: the kfake pass of TestExitCodes, from a file.
	c := kfakeCluster(t)
	plain := filepath.Join(dir, "plain.yaml")
	os.WriteFile(plain, []byte("brokers: ["+strings.Join(c.ListenAddrs(), ", ")+"]\npartitions: 4\nrate: 500\nduration: 2s\nno-duplicates: true\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "-f", plain, "--out", dir + "/ok", "--rate", "250"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if r := readResult(t, dir+"/ok"); r.Acked != 500 {
		t.Fatalf("acked %d, want 500: --rate 250 from the command line over the file's 500, for the file's 2s", r.Acked)
	}
}
