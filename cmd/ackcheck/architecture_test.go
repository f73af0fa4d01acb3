package main

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tableKeys returns the first cell, in backticks, of each row of the first
// table after the line heading in md ("## Packages").
func tableKeys(md, heading string) []string {
	var keys []string
	in, table := false, false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case line == heading:
			in = true
		case !in:
		case strings.HasPrefix(line, "|"):
			table = true
			cell := strings.TrimSpace(strings.SplitN(line[1:], "|", 2)[0])
			if strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") && len(cell) > 2 {
				keys = append(keys, strings.Trim(cell, "`"))
			}
		case table || strings.HasPrefix(line, "#"):
			return keys
		}
	}
	return keys
}

// commandPaths are the command's subcommands to the second level
// ("scenario list"), a broker's name read as "<broker>" ("cluster
// <broker>": one row stands for every broker's). Cobra's own help and
// completion are added when the command runs, so they are not here.
func commandPaths(root *cobra.Command, brokers []string) []string {
	var out []string
	for _, c := range root.Commands() {
		if c.Hidden {
			continue
		}
		out = append(out, c.Name())
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			name := sub.Name()
			if slices.Contains(brokers, name) {
				name = "<broker>"
			}
			out = append(out, c.Name()+" "+name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// architectureProblems compares docs/architecture.md's two tables with the
// code: every package and command is in them, and they name none that
// does not exist.
func architectureProblems(md string, packages, commands []string) []string {
	var problems []string
	diff := func(what, heading string, want []string) {
		got := tableKeys(md, heading)
		if len(got) == 0 {
			problems = append(problems, "no table under "+heading)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				problems = append(problems, what+" `"+w+"` is missing under "+heading)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				problems = append(problems, heading+" names "+what+" `"+g+"`, which the code does not have")
			}
		}
	}
	diff("package", "## Packages", packages)
	diff("command", "## Commands", commands)
	return problems
}

// docs/architecture.md is drawn from the code: every package of go list
// ./... and every command (to the second level) has its row, and no row
// names one that is gone.
func TestArchitectureNamesEveryPackageAndCommand(t *testing.T) {
	md, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var packages []string
	for _, p := range strings.Fields(string(out)) {
		packages = append(packages, strings.TrimPrefix(p, module+"/"))
	}
	commands := commandPaths(newRoot(io.Discard, io.Discard), profileNames())
	if len(packages) < 20 || len(commands) < 15 {
		t.Fatalf("%d packages and %d commands found: the lists are not read right", len(packages), len(commands))
	}
	for _, p := range architectureProblems(string(md), packages, commands) {
		t.Error("docs/architecture.md: " + p)
	}
}

// The check fires on a missing package or command and on a row for one
// that does not exist, and stays quiet when the tables match.
func TestArchitectureProblemsFire(t *testing.T) {
	const md = "# A\n\n## Commands\n\n| command | does |\n|---|---|\n| `run` | runs |\n| `cluster <broker>` | up |\n\ntext\n\n## Packages\n\n| package | owns |\n|---|---|\n| `ledger` | the ledger |\n| `drivers/kafka` | Kafka |\n\n## Later\n\n| x | y |\n|---|---|\n| `ignored` | no |\n"
	pkgs, cmds := []string{"ledger", "drivers/kafka"}, []string{"run", "cluster <broker>"}
	tests := []struct {
		name       string
		pkgs, cmds []string
		want       []string
	}{
		{"matching", pkgs, cmds, nil},
		{"a package missing", append([]string{"netns"}, pkgs...), cmds, []string{"package `netns` is missing under ## Packages"}},
		{"a package gone", pkgs[:1], cmds, []string{"## Packages names package `drivers/kafka`, which the code does not have"}},
		{"a command missing", pkgs, append([]string{"compare"}, cmds...), []string{"command `compare` is missing under ## Commands"}},
		{"a command gone", pkgs, cmds[:1], []string{"## Commands names command `cluster <broker>`, which the code does not have"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := architectureProblems(md, tc.pkgs, tc.cmds)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := architectureProblems("# A\n", pkgs, cmds); len(got) != 2+len(pkgs)+len(cmds) {
		t.Errorf("a page without the tables: %q", got)
	}
}
