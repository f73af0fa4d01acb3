package faults

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Every kind of undo the journal can hold is put back by the fault that
// journaled it; a kind no fault owns (a journal from a newer ackcheck) is
// refused with what to do, never skipped as healed.
func TestEachUndoKindHasItsFault(t *testing.T) {
	for _, tc := range []struct {
		kind UndoKind
		want undoer
	}{
		{UndoResume, pause{}},
		{UndoStart, takeDown{}},
		{UndoTopicConfig, fsyncTopic{}},
		{UndoNodeConfig, fsyncBrokers{}},
		{UndoSwitch, switchMode{}},
		{"unplug", nil},
	} {
		got, err := undoerOf(tc.kind)
		if got != tc.want || (err != nil) != (tc.want == nil) {
			t.Errorf("undoerOf(%q) = %T, %v; want %T", tc.kind, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "newer ackcheck") {
			t.Errorf("undoerOf(%q): %v does not say what to do", tc.kind, err)
		}
	}
}

// Each node fault journals its own undo before it acts, and the heal that
// follows hands that undo to the same fault, which brings the node back:
// a killed or stopped node runs again, a paused one is resumed, and each
// is up again for the death watch. A fault whose undo the schedule already
// did (restart, resume) leaves nothing to heal.
func TestNodeFaultsOwnTheirUndo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		schedule string
		undo     UndoKind // "": nothing left to heal
		signals  string   // what the heal sent or started
	}{
		{"at=0s kill node:2", UndoStart, ""},
		{"at=0s stop node:2", UndoStart, ""},
		{"at=0s pause node:2", UndoResume, "2:continued"},
		{"at=0s kill node:2; at=0s restart", "", ""},
		{"at=0s pause node:2; at=0s resume", "", ""},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			nodes := newFakeNodes(1, 2, 3)
			in := &Injector{Nodes: nodes}
			steps, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range steps {
				if r := in.Apply(ctx, st); r.Result != Applied {
					t.Fatalf("%s: %s %s", st, r.Result, r.Error)
				}
			}
			_, undos := in.Journal.Pending()
			if (len(undos) > 0) != (tc.undo != "") || (len(undos) > 0 && undos[0].Kind != tc.undo) {
				t.Fatalf("pending %+v, want one %q", undos, tc.undo)
			}
			before := len(nodes.signals)
			done, err := in.Heal(ctx)
			if err != nil || len(done) != len(undos) {
				t.Fatalf("heal did %q, %v; want %d undos done", done, err, len(undos))
			}
			if pid, _ := nodes.PID(ctx, 2); pid == 0 || nodes.paused[2] {
				t.Fatalf("node 2 after heal: PID %d, paused %v", pid, nodes.paused[2])
			}
			if got := strings.Join(nodes.signals[before:], " "); got != tc.signals {
				t.Errorf("heal signalled %q, want %q", got, tc.signals)
			}
			if !in.w.states.are(nodeUp, 1, 2, 3) {
				t.Errorf("after heal not every node is up for the death watch: %v", in.w.states.m)
			}
			if _, left := in.Journal.Pending(); len(left) != 0 {
				t.Errorf("still pending after heal: %+v", left)
			}
		})
	}
}

// expecter is a broker profile with its own expectation of one action.
type expecter struct{}

func (expecter) ExpectFault(f drivers.NodeFault, _ drivers.Driver) string {
	if f == drivers.NodePaused {
		return "the broker's own words on a pause"
	}
	return ""
}

// A profile's expectation of an action is quoted in the record when it
// has one; otherwise, and for a profile with none, the generic one is.
func TestRecordQuotesTheProfilesExpectation(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		profile any
		action  string
		want    string
	}{
		{expecter{}, "pause node:1", "the broker's own words on a pause"},
		{expecter{}, "kill node:1", Kill.Expectation()},
		{struct{}{}, "pause node:1", Pause.Expectation()},
	} {
		steps, err := ParseSchedule("at=0s " + tc.action)
		if err != nil {
			t.Fatal(err)
		}
		in := &Injector{Nodes: newFakeNodes(1, 2, 3), Expect: ExpectFrom(tc.profile, nil)}
		if r := in.Apply(ctx, steps[0]); r.Expect != tc.want || tc.want == "" {
			t.Errorf("%T %s: expect %q, want %q", tc.profile, tc.action, r.Expect, tc.want)
		}
	}
}

// SwitchAction is the inverse of Action.Switch.
func TestSwitchActionRoundTrip(t *testing.T) {
	for _, on := range []bool{true, false} {
		a := SwitchAction("maintenance", on)
		if name, gotOn, ok := a.Switch(); !ok || name != "maintenance" || gotOn != on {
			t.Errorf("SwitchAction(maintenance, %v) = %q reads back as %q, %v, %v", on, a, name, gotOn, ok)
		}
	}
}

// actionLiteralComparisons lists, in Go source, every comparison of a
// string literal that names an action (case "kill":, x == "pause"):
// past the parser, actions are this package's typed constants.
func actionLiteralComparisons(t *testing.T, name, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"unexpected-death"}
	for _, a := range []Action{Kill, Stop, Restart, Pause, Resume, FsyncOn, FsyncOff, PowerLoss} {
		names = append(names, a.String())
	}
	var found []string
	check := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(names, v) {
			found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				check(e)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				check(n.X)
				check(n.Y)
			}
		}
		return true
	})
	return found
}

func TestActionLiteralComparisonsFound(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`package p; func f(a string) bool { switch a { case "kill", "stop": return true }; return false }`, 2},
		{`package p; func f(a string) bool { return a == "power-loss" }`, 1},
		{`package p; func f(a string) bool { return "fsync-on" != a }`, 1},
		{`package p; func f(a string) bool { switch a { case "up", "down": return true }; return a == "status" }`, 0},
		{`package p; var label = "kill " + "node"`, 0},
	} {
		if got := actionLiteralComparisons(t, "x.go", tc.src); len(got) != tc.want {
			t.Errorf("%s: found %q, want %d", tc.src, got, tc.want)
		}
	}
}

// The packages that read fault records (reports, the verdict, the runner)
// and the broker profiles compare actions as typed values, never by name.
func TestNoActionComparedByName(t *testing.T) {
	for _, dir := range []string{"../report", "../verifier", "../runner", "../drivers", "../metrics", "../scenarios"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, c := range actionLiteralComparisons(t, path, string(src)) {
				t.Errorf("%s: compare a faults.Action constant instead", c)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
