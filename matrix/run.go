package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// Run is one cell of the matrix at one repeat: one ordinary ackcheck run.
type Run struct {
	System   *System
	Setting  *Named
	Scenario *Scenario
	// Index is the repeat, from 1.
	Index int
	// Seq is the run's place in the order, from 1.
	Seq int
}

// Column is the scorecard column a run belongs to: system/setting.
func (r Run) Column() string { return r.System.Name + "/" + r.Setting.Name }

// Rel is the run's directory under the matrix's --out:
// <system>/<setting>/<scenario>/<i>.
func (r Run) Rel() string {
	return filepath.Join(r.System.Name, r.Setting.Name, r.Scenario.Dir, strconv.Itoa(r.Index))
}

func (r Run) String() string { return filepath.ToSlash(r.Rel()) }

// Runs lists every run in the order they run: repeat by repeat, and
// within a repeat scenario by scenario, every column (system x setting)
// once in turn. Columns alternate (ABAB, not AAAA BBBB) so that whatever
// drifts on the machine while the matrix runs (page cache, disk, a
// neighbour's load) falls on every column alike.
func (f *File) Runs() []Run {
	var out []Run
	for i := 1; i <= f.Repeat; i++ {
		for sc := range f.Scenarios {
			for sy := range f.Systems {
				sys := &f.Systems[sy]
				for st := range sys.Settings {
					out = append(out, Run{System: sys, Setting: &sys.Settings[st], Scenario: &f.Scenarios[sc], Index: i, Seq: len(out) + 1})
				}
			}
		}
	}
	return out
}

// Columns lists system/setting in the file's order.
func (f *File) Columns() []string {
	var out []string
	for _, s := range f.Systems {
		for _, st := range s.Settings {
			out = append(out, s.Name+"/"+st.Name)
		}
	}
	return out
}

// State is what a run's directory holds.
type State int

const (
	// Missing: no directory; the run has not started.
	Missing State = iota
	// Partial: a directory without a final verdict (the run was
	// interrupted, failed to start, or ended incomplete or unproven).
	Partial
	// Done: result.json holds a final verdict, pass or fail.
	Done
)

// StateOf says whether the run directory dir is done, and its verdict
// when result.json has one.
func StateOf(dir string) (State, string) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return Missing, ""
	}
	res, err := runner.ReadResult(dir)
	if err != nil {
		return Partial, ""
	}
	switch res.Verdict {
	case verifier.Pass, verifier.Fail:
		return Done, res.Verdict
	}
	return Partial, res.Verdict
}

// PendingHeal lists what a run directory's heal journal still holds
// undone: a fault its run applied and did not put back.
func PendingHeal(dir string) ([]string, error) {
	path := runner.JournalPath(dir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	j, err := faults.OpenJournal(path)
	if err != nil {
		return nil, fmt.Errorf("read the heal journal of %s: %w", dir, err)
	}
	defer j.Close()
	_, pending := j.Pending()
	var out []string
	for _, p := range pending {
		out = append(out, p.String())
	}
	return out, nil
}

// Executor runs one run with out as its run directory, through the same
// code path as `ackcheck run`. It returns nil when the run reached a
// verdict (a failed verdict too) and an error when it did not.
type Executor func(ctx context.Context, r Run, out string) error

// Options are what Execute needs besides the file.
type Options struct {
	// Out is the matrix's directory.
	Out string
	// Logf prints a line of progress (nil: none).
	Logf func(format string, a ...any)
	// Now stamps the name a half-done run directory is moved aside to
	// (nil: time.Now).
	Now func() time.Time
}

// Summary counts what Execute did.
type Summary struct {
	Ran, Skipped, MovedAside int
	// Verdicts counts the verdicts of every run, skipped ones included.
	Verdicts map[string]int
}

// ErrHealFailed is wrapped by Execute's error when a run left a fault
// applied: the cluster is not the one the next run expects, so the
// matrix stops.
var ErrHealFailed = errors.New("a run's heal failed")

// Execute runs every run of f in order (File.Runs), skipping runs whose
// directory holds a final verdict (Done) and moving a half-done one
// (Partial) aside to <i>.partial-<UTC time> before running it again, so
// that a matrix started again after an interruption ends with every run
// done once.
//
// It stops at the first run that reaches no verdict (exec's error, or
// ctx cancelled), and at a run whose heal journal still holds an undo
// after it: every run's heal must have happened before the next starts.
// A run ending incomplete or unproven does not stop it; the next Execute
// runs it again.
func Execute(ctx context.Context, f *File, o Options, exec Executor) (Summary, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	sum := Summary{Verdicts: map[string]int{}}
	runs := f.Runs()
	for _, r := range runs {
		dir := filepath.Join(o.Out, r.Rel())
		st, verdict := StateOf(dir)
		switch st {
		case Done:
			sum.Skipped++
			sum.Verdicts[verdict]++
			logf("matrix: run %d of %d, %s: done before (%s), skipped", r.Seq, len(runs), r, verdict)
			continue
		case Partial:
			pending, err := PendingHeal(dir)
			if err != nil {
				return sum, err
			}
			if len(pending) > 0 {
				return sum, fmt.Errorf("%s was interrupted with faults still applied (%v): run `ackcheck heal --out %s`, then start the matrix again: %w", dir, pending, dir, ErrHealFailed)
			}
			aside := fmt.Sprintf("%s.partial-%s", dir, now().UTC().Format("20060102T150405.000"))
			if err := os.Rename(dir, aside); err != nil {
				return sum, fmt.Errorf("move the half-done run %s aside to run it again: %w", dir, err)
			}
			sum.MovedAside++
			logf("matrix: %s had no final verdict (%s): moved aside to %s, running it again", r, orNone(verdict), aside)
		}
		if err := ctx.Err(); err != nil {
			return sum, fmt.Errorf("matrix interrupted before %s: start it again with the same command to run what is left: %w", r, err)
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return sum, fmt.Errorf("make the directory of %s: %w", r, err)
		}
		logf("matrix: run %d of %d, %s", r.Seq, len(runs), r)
		runErr := exec(ctx, r, dir)
		sum.Ran++
		pending, err := PendingHeal(dir)
		if err != nil {
			return sum, err
		}
		if len(pending) > 0 {
			return sum, fmt.Errorf("matrix stopped after %s: its faults were not all undone (%v), so the next run would not start from a whole cluster; fix the cause, run `ackcheck heal --out %s`, then start the matrix again: %w", r, pending, dir, ErrHealFailed)
		}
		st, verdict = StateOf(dir)
		if verdict != "" {
			sum.Verdicts[verdict]++
		}
		if ctx.Err() != nil && st != Done {
			return sum, fmt.Errorf("matrix interrupted in %s: start it again with the same command; it skips the runs that are done and runs this one again: %w", r, ctx.Err())
		}
		if verdict == "" {
			if runErr == nil {
				runErr = errors.New("it wrote no result.json")
			}
			return sum, fmt.Errorf("matrix stopped: %s reached no verdict: %w", r, runErr)
		}
		if st != Done {
			logf("matrix: %s ended %s: not counted as done; starting the matrix again runs it again", r, verdict)
		}
	}
	return sum, nil
}

func orNone(v string) string {
	if v == "" {
		return "no result.json"
	}
	return "verdict " + v
}
