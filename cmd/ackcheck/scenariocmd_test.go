package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Names as scenario list and as a run prints them (with a variant) are
// found; others are refused naming what is wrong.
func TestFindScenarioByRunName(t *testing.T) {
	tests := []struct {
		name     string
		want     string
		settings map[string]string
		err      string
	}{
		{"kafka/leader-kill", "kafka/leader-kill", map[string]string{}, ""},
		{"leader-kill", "kafka/leader-kill", map[string]string{}, ""},
		{"kafka/leader-kill/acks=all", "kafka/leader-kill", map[string]string{"acks": "all"}, ""},
		{"kafka/leader-kill/acks=1,restart-after=5s", "kafka/leader-kill", map[string]string{"acks": "1", "restart-after": "5s"}, ""},
		{"nats/fsync-audit", "nats/fsync-audit", map[string]string{}, ""},
		{"kafka/leader-kill/foo=1", "", nil, `"foo" is not a setting of kafka/leader-kill`},
		{"kafka/leader-kill/acks", "", nil, `"acks" after kafka/leader-kill is not a setting key=value`},
		{"nats/leader-kill/acks=1", "", nil, `"acks" is a setting of the kafka driver, not of nats`},
		{"kafka/chaos/acks=all", "", nil, `no built-in scenario "kafka/chaos/acks=all"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, settings, err := findScenario(tt.name)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.name() != tt.want || !reflect.DeepEqual(settings, tt.settings) {
				t.Errorf("found %s %v, want %s %v", b.name(), settings, tt.want, tt.settings)
			}
		})
	}
}

// scenario show --duration writes the times the built-in would use for
// that duration (a third in), and a variant as a setting the file runs.
func TestScenarioShowScalesWithDuration(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"kafka/leader-kill"}, []string{"\nduration: 1m\n", "\nkill-at: 20s\n", `"at=20s kill most-leaders:ackcheck; at=30s restart previous"`}},
		{[]string{"kafka/leader-kill", "--duration", "90s"}, []string{"\nduration: 1m30s\n", "\nkill-at: 30s\n", `"at=30s kill most-leaders:ackcheck; at=40s restart previous"`}},
		{[]string{"kafka/leader-kill/acks=1", "--duration", "30s"}, []string{"\nduration: 30s\n", "\nkill-at: 10s\n", "\nacks: \"1\"\n"}},
		{[]string{"nats/fsync-audit", "--duration", "45s"}, []string{"\nduration: 45s\n", "\nloss-at: 15s\n"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := execute(context.Background(), append([]string{"scenario", "show"}, tt.args...), &out, &errb); code != exitPass {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("lacks %q:\n%s", w, out.String())
				}
			}
			// The file is one the built-in takes: it stops only at the
			// missing cluster, after every setting was read and checked.
			f := filepath.Join(t.TempDir(), "s.yaml")
			os.WriteFile(f, out.Bytes(), 0o644)
			out.Reset()
			errb.Reset()
			execute(context.Background(), []string{"run", "-f", f, "--out", filepath.Join(t.TempDir(), "r")}, &out, &errb)
			if !strings.Contains(errb.String(), "--cluster-dir or --cluster-file is required") {
				t.Errorf("run -f of the shown file: %s", errb.String())
			}
		})
	}
}

// scenario run NAME runs the built-in with the name's driver and variant.
func TestScenarioRun(t *testing.T) {
	argv, err := scenarioArgs("kafka/leader-kill/acks=1", []string{"--duration", "90s", "--out", "runs/x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"leader-kill", "--acks=1", "--driver=kafka", "--duration", "90s", "--out", "runs/x"}; !reflect.DeepEqual(argv, want) {
		t.Errorf("scenarioArgs = %q, want %q", argv, want)
	}
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		// It reached leader-kill's own checks, with its flags parsed.
		{[]string{"kafka/leader-kill/acks=all", "--duration", "90s", "--out", "runs/x"}, exitError, "--cluster-dir or --cluster-file is required: the cluster whose leader is killed"},
		{[]string{"nats/fsync-audit", "--out", "runs/x"}, exitError, "--cluster-dir"},
		{[]string{"kafka/leader-kill", "--kill-at", "2m", "--cluster-dir", "/nonexistent", "--out", "runs/x"}, exitError, "--kill-at 2m0s must fall inside the load"},
		{[]string{"kafka/leader-kill/acks=all", "--acks", "1"}, exitError, "the scenario name kafka/leader-kill/acks=all sets it to all"},
		{[]string{"kafka/leader-kill", "--no-such-flag"}, exitError, "unknown flag: --no-such-flag"},
		{[]string{"kafka/nope"}, exitError, `no built-in scenario "kafka/nope"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"scenario", "run"}, tt.args...), &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errb.String(), tt.code, tt.stderr)
			}
		})
	}
}
