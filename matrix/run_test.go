package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// writeRun makes dir a run directory holding res and an offered rate, as
// a run leaves it.
func writeRun(t *testing.T, dir string, res verifier.Result, rate float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"result.json": res, "run.json": runner.Settings{Rate: rate, RunID: res.RunID}} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func twoByTwo(t *testing.T, repeat int) *File {
	t.Helper()
	f, err := Parse("m.yaml", []byte("systems: [{name: a}, {name: b}]\nscenarios: [plain]\nrepeat: "+string(rune('0'+repeat))+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fakeExec records the runs it is given and leaves each a verdict.
type fakeExec struct {
	ran     []string
	verdict func(r Run) string // "" : write nothing
	err     func(r Run) error
	after   func(r Run, out string)
}

func (e *fakeExec) run(_ context.Context, r Run, out string) error {
	e.ran = append(e.ran, r.String())
	v := verifier.Pass
	if e.verdict != nil {
		v = e.verdict(r)
	}
	if v != "" {
		os.MkdirAll(out, 0o755)
		data, _ := json.Marshal(verifier.Result{Verdict: v})
		os.WriteFile(filepath.Join(out, "result.json"), data, 0o644)
	}
	if e.after != nil {
		e.after(r, out)
	}
	if e.err != nil {
		return e.err(r)
	}
	return nil
}

func TestExecuteResumes(t *testing.T) {
	out := t.TempDir()
	f := twoByTwo(t, 2)
	// Before: the first run done, the second half-done (a run.json and no
	// result.json: interrupted), the third ended incomplete, the fourth
	// aborted (its load stopped early: not the experiment, issue 35).
	writeRun(t, filepath.Join(out, "a/default/plain/1"), verifier.Result{Verdict: verifier.Pass}, 1)
	os.MkdirAll(filepath.Join(out, "b/default/plain/1"), 0o755)
	os.WriteFile(filepath.Join(out, "b/default/plain/1/run.json"), []byte("{}"), 0o644)
	writeRun(t, filepath.Join(out, "a/default/plain/2"), verifier.Result{Verdict: verifier.Incomplete}, 1)
	writeRun(t, filepath.Join(out, "b/default/plain/2"), verifier.Result{Verdict: verifier.Aborted}, 1)
	e := &fakeExec{}
	var lines []string
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	sum, err := Execute(context.Background(), f, Options{Out: out, Now: func() time.Time { return now }, Logf: func(f string, a ...any) { lines = append(lines, f) }}, e.run)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.ran, " "); got != "b/default/plain/1 a/default/plain/2 b/default/plain/2" {
		t.Fatalf("ran %s", got)
	}
	if sum.Ran != 3 || sum.Skipped != 1 || sum.MovedAside != 3 || sum.Verdicts[verifier.Pass] != 4 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(out, "b/default/plain/1.partial-20261202T040000.000/run.json")); err != nil {
		t.Fatalf("the half-done run was not moved aside: %v", err)
	}
	// Again: everything is done, nothing runs.
	e2 := &fakeExec{}
	sum, err = Execute(context.Background(), f, Options{Out: out}, e2.run)
	if err != nil || len(e2.ran) != 0 || sum.Skipped != 4 {
		t.Fatalf("second start ran %v, %+v, %v", e2.ran, sum, err)
	}
}

func TestExecuteStops(t *testing.T) {
	boom := errors.New("brokers unreachable")
	tests := []struct {
		name    string
		exec    *fakeExec
		ctx     func() (context.Context, context.CancelFunc)
		wantRan string
		wantErr string
		isHeal  bool
	}{
		{name: "a run with no verdict", exec: &fakeExec{verdict: func(r Run) string {
			if r.Seq == 2 {
				return "" // the run wrote no result.json
			}
			return verifier.Pass
		},
			err: func(r Run) error {
				if r.Seq == 2 {
					return boom
				}
				return nil
			}},
			wantRan: "a/default/plain/1 b/default/plain/1", wantErr: "b/default/plain/1 reached no verdict: brokers unreachable"},
		{name: "a failed verdict goes on", exec: &fakeExec{verdict: func(Run) string { return verifier.Fail }},
			wantRan: "a/default/plain/1 b/default/plain/1 a/default/plain/2 b/default/plain/2"},
		{name: "an incomplete verdict goes on", exec: &fakeExec{verdict: func(Run) string { return verifier.Incomplete }},
			wantRan: "a/default/plain/1 b/default/plain/1 a/default/plain/2 b/default/plain/2"},
		{name: "a failed heal", exec: &fakeExec{verdict: func(Run) string { return verifier.Pass }, after: func(r Run, out string) {
			if r.Seq == 1 {
				j, _ := faults.OpenJournal(runner.JournalPath(out))
				j.Add(faults.Undo{Kind: faults.UndoStart, Node: 2, Why: "killed"})
				j.Close()
			}
		}}, wantRan: "a/default/plain/1", wantErr: "its faults were not all undone ([start node 2])", isHeal: true},
		{name: "a healed run goes on", exec: &fakeExec{verdict: func(Run) string { return verifier.Pass }, after: func(r Run, out string) {
			j, _ := faults.OpenJournal(runner.JournalPath(out))
			id, _ := j.Add(faults.Undo{Kind: faults.UndoStart, Node: 2, Why: "killed"})
			j.Done(id)
			j.Close()
		}}, wantRan: "a/default/plain/1 b/default/plain/1 a/default/plain/2 b/default/plain/2"},
		{name: "interrupted", exec: &fakeExec{verdict: func(Run) string { return "" }},
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, c := context.WithCancel(context.Background())
				c()
				return ctx, c
			},
			wantRan: "", wantErr: "matrix interrupted before a/default/plain/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			_, err := Execute(ctx, twoByTwo(t, 2), Options{Out: t.TempDir()}, tc.exec.run)
			if got := strings.Join(tc.exec.ran, " "); got != tc.wantRan {
				t.Fatalf("ran %q, want %q", got, tc.wantRan)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			case errors.Is(err, ErrHealFailed) != tc.isHeal:
				t.Fatalf("error %v: is ErrHealFailed %v, want %v", err, !tc.isHeal, tc.isHeal)
			}
		})
	}
}

// A half-done run whose faults are still applied is not moved aside and
// run again on a cluster that is not whole: heal it first.
func TestExecuteRefusesAnUnhealedHalfDoneRun(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "a/default/plain/1")
	os.MkdirAll(dir, 0o755)
	j, _ := faults.OpenJournal(runner.JournalPath(dir))
	j.Add(faults.Undo{Kind: faults.UndoResume, Node: 1, Why: "paused"})
	j.Close()
	e := &fakeExec{}
	_, err := Execute(context.Background(), twoByTwo(t, 1), Options{Out: out}, e.run)
	if !errors.Is(err, ErrHealFailed) || !strings.Contains(err.Error(), "ackcheck heal --out "+dir) || len(e.ran) != 0 {
		t.Fatalf("ran %v, error %v", e.ran, err)
	}
}
