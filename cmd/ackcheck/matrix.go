package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/matrix"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

func newMatrixCmd() *cobra.Command {
	var o matrixOptions
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Run every system x setting x scenario of a matrix file, repeated, and write a scorecard",
		Long: `matrix runs a grid of ordinary ackcheck runs and puts them side by side.
Each cell (system x setting x scenario) runs --repeat times, each time as one
ordinary run on a fresh topic in DIR/<system>/<setting>/<scenario>/<i>/.
The runs interleave (every column once, then every column again) so that
drift in the machine falls on every column alike. Every run heals its
faults before the next starts; a heal that fails stops the matrix.

A matrix interrupted and started again with the same command skips the runs
that reached a final verdict and runs the others again (a half-done run
directory is moved aside to <i>.partial-<time>).

At the end it writes DIR/scorecard.md, scorecard.html and scorecard.json:
one row per measure, one column per system x setting, n and min / median /
max over the repeats, each figure linked to its run. See docs/matrix.md.`,
		Example: `  ackcheck matrix -f matrix.yaml --out runs/matrix`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMatrix(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "matrix file (YAML): systems, settings, scenarios, repeat, overrides (see docs/matrix.md)")
	cmd.Flags().StringVar(&o.out, "out", "", "matrix directory: one run directory per cell and repeat, and the scorecard; give the same one again to resume")
	return cmd
}

// matrixOptions are the inputs of one matrix command.
type matrixOptions struct {
	file, out string
	// beforeRun, if set, is called as each run starts, with the run
	// (tests interrupt a matrix there).
	beforeRun func(ctx context.Context, r matrix.Run)
}

// runMatrix reads the matrix file, checks that every cell can run before
// the first does, runs them (matrix.Execute) and writes the scorecard of
// what is done, also when the matrix stopped early.
func runMatrix(ctx context.Context, stdout, stderr io.Writer, o matrixOptions) error {
	if o.file == "" {
		return fmt.Errorf("-f is required: the matrix file (see docs/matrix.md)")
	}
	if o.out == "" {
		return fmt.Errorf("--out is required: the matrix directory (give the same one again to resume)")
	}
	f, err := matrix.Read(o.file)
	if err != nil {
		return err
	}
	runs := f.Runs()
	// Every cell is prepared once now: a key no command knows, a scenario
	// a system cannot run, is an error before the first run.
	seen := map[string]bool{}
	for _, r := range runs {
		key := filepath.Dir(r.Rel())
		if seen[key] {
			continue
		}
		seen[key] = true
		if _, err := prepareRun(f, r); err != nil {
			return err
		}
	}
	if err := claimMatrixDir(o.file, o.out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "matrix: %d runs (%d columns x %d scenarios x repeat %d) into %s\n", len(runs), len(f.Columns()), len(f.Scenarios), f.Repeat, o.out)
	exec := func(ctx context.Context, r matrix.Run, out string) error {
		if o.beforeRun != nil {
			o.beforeRun(ctx, r)
		}
		target, err := prepareRun(f, r)
		if err != nil {
			return err
		}
		fs := target.Flags()
		if err := fs.Set("out", out); err != nil {
			return err
		}
		if err := fs.Set("topic", freshTopic(r)); err != nil {
			return err
		}
		target.SetContext(ctx)
		target.SetOut(stdout)
		target.SetErr(stderr)
		err = target.RunE(target, nil)
		if errors.Is(err, errVerdictFailed) {
			return nil // a verdict: the scorecard shows it
		}
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	sum, runErr := matrix.Execute(ctx, f, matrix.Options{Out: o.out, Logf: logf}, exec)
	card := f.Card(o.out)
	if err := card.Write(o.out); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(stdout, "matrix: ran %d, skipped %d done before, moved aside %d half-done; verdicts %v\nscorecard: %s (and %s, %s)\n",
		sum.Ran, sum.Skipped, sum.MovedAside, sum.Verdicts, filepath.Join(o.out, matrix.CardMarkdown), matrix.CardHTML, matrix.CardJSON)
	if runErr != nil {
		return runErr
	}
	if n := sum.Verdicts["incomplete"] + sum.Verdicts["unproven"]; n > 0 {
		return fmt.Errorf("%d runs reached no final verdict (incomplete or unproven): start the matrix again with the same command to run them again", n)
	}
	if sum.Verdicts["fail"] > 0 {
		fmt.Fprintf(stdout, "matrix: %d runs FAILED their verdict (see the scorecard)\n", sum.Verdicts["fail"])
		return errVerdictFailed
	}
	return nil
}

// claimMatrixDir makes out and keeps a copy of the matrix file in it; a
// directory started from another matrix file is refused, since its runs
// would be counted as the new matrix's.
func claimMatrixDir(file, out string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("matrix file: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	copyPath := filepath.Join(out, matrix.FileCopy)
	old, err := os.ReadFile(copyPath)
	switch {
	case err == nil && !bytes.Equal(old, data):
		return fmt.Errorf("--out %s was started from another matrix file (its copy is %s): give a new --out, or the same file to resume", out, copyPath)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty and holds no matrix: give a new directory", out)
	}
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		return fmt.Errorf("--out %s: keep the matrix file: %w", out, err)
	}
	return nil
}

var topicUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// freshTopic names a topic no earlier run wrote: the cell, the repeat and
// the time, so that a run started again after an interruption does not
// read the half-done run's messages back.
func freshTopic(r matrix.Run) string {
	t := fmt.Sprintf("mx-%s-%s-%s-%d-%s", r.System.Name, r.Setting.Name, r.Scenario.Dir, r.Index, time.Now().UTC().Format("20060102T150405.000"))
	t = topicUnsafe.ReplaceAllString(t, "_")
	if len(t) > 200 {
		t = t[len(t)-200:]
	}
	return t
}

// prepareRun makes the command a run of the matrix goes through (run,
// leader-kill, fsync-audit: the same code as on the command line) and
// sets its flags from the matrix file, the highest precedence first: the
// setting, the system, overrides, then the scenario file. It refuses a
// key no flag has (with "did you mean") and a scenario the system cannot
// run.
func prepareRun(f *matrix.File, r matrix.Run) (*cobra.Command, error) {
	var (
		target   *cobra.Command
		scenFile *scenarioFile
		variant  *scenarioFile
		driver   string
	)
	sc := r.Scenario
	switch {
	case sc.Path != "":
		sf, err := readScenarioFile(sc.Path)
		if err != nil {
			return nil, err
		}
		scenFile = sf
		switch sf.scenario {
		case "", "run":
			target = newRunCmd()
		default:
			var ok bool
			if target, ok = builtinCommand(sf.scenario); !ok {
				return nil, fmt.Errorf("%s:%d: scenario %q: use one of %s", sf.path, sf.line, sf.scenario, strings.Join(fileScenarios, ", "))
			}
		}
	case sc.Name == matrix.Plain:
		target = newRunCmd()
	default:
		b, settings, err := findScenario(sc.Name)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w, or plain (a load with no fault), or a scenario file (.yaml)", f.Path, sc.Line, err)
		}
		target, _ = builtinCommand(b.command)
		driver = b.driver
		// A name as a run prints it (kafka/leader-kill/acks=all) carries
		// its variant's settings: they rank with a scenario file's, lowest.
		if len(settings) > 0 {
			variant = &scenarioFile{path: f.Path}
			for _, k := range slices.Sorted(maps.Keys(settings)) {
				variant.settings = append(variant.settings, fileSetting{key: k, line: sc.Line, value: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: settings[k]}})
			}
		}
	}
	fs := target.Flags()
	layers := []struct {
		what string
		keys []matrix.KV
	}{{"setting " + r.Setting.Name, r.Setting.Keys}, {"system " + r.System.Name, r.System.Keys}, {"overrides", f.Overrides}}
	for _, l := range layers {
		sf := &scenarioFile{path: f.Path}
		for _, kv := range l.keys {
			sf.settings = append(sf.settings, fileSetting{key: kv.Key, line: kv.Line, value: kv.Value})
		}
		// apply leaves a flag a higher layer set alone, as it leaves one
		// the command line set.
		if err := sf.apply(fs, target.Name()); err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, l.what)
		}
	}
	for _, low := range []*scenarioFile{scenFile, variant} {
		if low != nil {
			if err := low.apply(fs, target.Name()); err != nil {
				return nil, err
			}
		}
	}
	if err := canRun(f, r, target, driver); err != nil {
		return nil, err
	}
	if driver != "" && !fs.Changed("driver") {
		if err := fs.Set("driver", driver); err != nil {
			return nil, err
		}
	}
	return target, nil
}

// canRun refuses, before the first run, a scenario the system cannot run:
// one that acts on broker processes without a cluster to act on, or a
// built-in of another broker than the system's cluster runs.
func canRun(f *matrix.File, r matrix.Run, target *cobra.Command, driver string) error {
	fs := target.Flags()
	val := func(name string) string {
		if fl := fs.Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return ""
	}
	clusterDir, clusterFile := val("cluster-dir"), val("cluster-file")
	hasCluster := clusterDir != "" || clusterFile != ""
	where := fmt.Sprintf("%s:%d: system %s cannot run scenario %s", f.Path, r.System.Line, r.System.Name, r.Scenario.Name)
	needs := ""
	switch target.Name() {
	case "leader-kill":
		needs = "it kills a broker's process"
	case "fsync-audit":
		needs = "it cuts a broker's power"
	default:
		load, err := time.ParseDuration(val("duration"))
		if err != nil {
			return fmt.Errorf("%s: duration %q: %w", where, val("duration"), err)
		}
		steps, err := profiles().readSchedule(val("fault"), load)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, st := range steps {
			if st.ActsOnNodes() {
				needs = fmt.Sprintf("its fault %q acts on a broker's process", st)
				break
			}
		}
	}
	if needs != "" && !hasCluster {
		return fmt.Errorf("%s: %s, which needs the system's cluster-dir or cluster-file; give the system one, or leave the scenario out", where, needs)
	}
	want := driver
	if fs.Changed("driver") {
		want = val("driver")
	}
	if clusterDir != "" && want != "" {
		kind := cluster.Kind(clusterDir)
		for _, p := range profiles() {
			if l, ok := launcherOf(p); ok && l.Kind() == kind && !strings.EqualFold(p.Name(), want) {
				return fmt.Errorf("%s: the scenario is %s's, and cluster-dir %s runs %s", where, want, clusterDir, p.Name())
			}
		}
	}
	return nil
}
