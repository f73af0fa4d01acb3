package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const issueExample = `
systems:
  - {name: kafka-local, cluster-dir: ./k}
  - {name: fake, brokers: [127.0.0.1:9092]}
settings:
  - {name: acks-all, acks: all}
  - {name: acks-1, acks: "1"}
scenarios: [plain, kafka/leader-kill]   # "plain": a load with no fault
repeat: 3
overrides: {rate: 500, duration: 30s}
`

func TestParseIssueExample(t *testing.T) {
	f, err := Parse("m.yaml", []byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Systems) != 2 || len(f.Scenarios) != 2 || f.Repeat != 3 || len(f.Overrides) != 2 {
		t.Fatalf("parsed %+v", f)
	}
	if got := strings.Join(f.Columns(), " "); got != "kafka-local/acks-all kafka-local/acks-1 fake/acks-all fake/acks-1" {
		t.Fatalf("columns %s", got)
	}
	if k := f.Systems[1].Keys; len(k) != 1 || k[0].Key != "brokers" || k[0].Line != 4 {
		t.Fatalf("system keys %+v", k)
	}
	if s := f.Scenarios[1]; s.Dir != "kafka-leader-kill" || s.Path != "" {
		t.Fatalf("scenario %+v", s)
	}
	if n := len(f.Runs()); n != 2*2*2*3 {
		t.Fatalf("%d runs", n)
	}
}

func TestParseSettingsForms(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte("rate: 10\n"), 0o644)
	f, err := Parse(filepath.Join(dir, "m.yaml"), []byte(`
systems:
  - {name: a, brokers: [x]}
  - name: b
    brokers: [y]
    settings: [{name: only, acks: all}]
settings: {acks: [all, "1"], linger: [0ms, 5ms]}
scenarios: [plain, mine.yaml]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Columns(), " "); got != "a/acks-all_linger-0ms a/acks-all_linger-5ms a/acks-1_linger-0ms a/acks-1_linger-5ms b/only" {
		t.Fatalf("columns %s", got)
	}
	if kv := f.Systems[0].Settings[3].Keys; len(kv) != 2 || kv[0].Value.Value != "1" || kv[1].Value.Value != "5ms" {
		t.Fatalf("keys of the last setting %+v", kv)
	}
	if s := f.Scenarios[1]; s.Path != filepath.Join(dir, "mine.yaml") || s.Dir != "mine" {
		t.Fatalf("scenario file %+v", s)
	}
	if f.Repeat != 1 {
		t.Fatalf("repeat defaults to %d", f.Repeat)
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown top key", "systems: [{name: a}]\nscenario: [plain]\n", `m.yaml:2: unknown key "scenario": a matrix file's keys are systems, settings, scenarios, repeat, overrides; did you mean scenarios?`},
		{"far unknown key", "systems: [{name: a}]\nscenarios: [plain]\nsoak: 1\n", `m.yaml:3: unknown key "soak"`},
		{"no systems", "scenarios: [plain]\n", "systems: name at least one"},
		{"no scenarios", "systems: [{name: a}]\n", "scenarios: name at least one"},
		{"system without a name", "systems: [{brokers: [x]}]\nscenarios: [plain]\n", "a system needs a name"},
		{"system twice", "systems: [{name: a}, {name: a}]\nscenarios: [plain]\n", "system a is named twice (first on line 1)"},
		{"unsafe name", "systems: [{name: ../a}]\nscenarios: [plain]\n", `system name "../a"`},
		{"topic reserved", "systems: [{name: a, topic: t}]\nscenarios: [plain]\n", "m.yaml:1: topic cannot be set in a matrix: every run writes a fresh topic of its own"},
		{"out in overrides", "systems: [{name: a}]\nscenarios: [plain]\noverrides: {out: x}\n", "out cannot be set in a matrix"},
		{"out in settings map", "systems: [{name: a}]\nscenarios: [plain]\nsettings: {out: [x]}\n", "out cannot be set in a matrix"},
		{"repeat 0", "systems: [{name: a}]\nscenarios: [plain]\nrepeat: 0\n", `repeat "0": give a whole number from 1 to 100`},
		{"repeat text", "systems: [{name: a}]\nscenarios: [plain]\nrepeat: three\n", `repeat "three"`},
		{"key twice", "systems: [{name: a}]\nscenarios: [plain]\nscenarios: [plain]\n", "scenarios is given twice (first on line 2)"},
		{"same scenario dir", "systems: [{name: a}]\nscenarios: [kafka/leader-kill, kafka-leader-kill]\n", "would share the directory kafka-leader-kill"},
		{"missing scenario file", "systems: [{name: a}]\nscenarios: [nothere.yaml]\n", "scenario file nothere.yaml"},
		{"setting twice", "systems: [{name: a}]\nscenarios: [plain]\nsettings: [{name: s}, {name: s}]\n", "setting s is named twice"},
		{"not a mapping", "- a\n", "a matrix file is a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The order alternates the columns inside every repeat (ABAB), never
// runs a column's repeats back to back (AAAA BBBB).
func TestRunsInterleave(t *testing.T) {
	f, err := Parse("m.yaml", []byte("systems: [{name: a}, {name: b}]\nscenarios: [plain, x/y]\nrepeat: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range f.Runs() {
		if r.Seq != i+1 {
			t.Fatalf("run %d has seq %d", i, r.Seq)
		}
		got = append(got, r.String())
	}
	want := "a/default/plain/1 b/default/plain/1 a/default/x-y/1 b/default/x-y/1 a/default/plain/2 b/default/plain/2 a/default/x-y/2 b/default/x-y/2"
	if strings.Join(got, " ") != want {
		t.Fatalf("order\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
