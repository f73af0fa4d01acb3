package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/matrix"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// writeMatrix writes a matrix file into a new temporary directory.
func writeMatrix(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "matrix.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readCard reads a matrix's scorecard.json.
func readCard(t *testing.T, out string) matrix.Card {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, matrix.CardJSON))
	if err != nil {
		t.Fatal(err)
	}
	var c matrix.Card
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkCardAgainstRuns checks every figure of the scorecard against the
// result.json (and run.json) of the run it links to, read here on its
// own, and that every column holds the runs it should.
func checkCardAgainstRuns(t *testing.T, out string, card matrix.Card, wantN int) {
	t.Helper()
	checked := 0
	for _, tb := range card.Tables {
		for _, row := range tb.Rows {
			for ci, cell := range row.Cells {
				if len(cell.Runs) != wantN {
					t.Fatalf("%s, %s: %d runs, want %d", row.Measure, tb.Columns[ci], len(cell.Runs), wantN)
				}
				for _, p := range cell.Runs {
					if !strings.HasPrefix(p.Run, tb.Columns[ci]+"/") {
						t.Fatalf("%s: run %s in column %s", row.Measure, p.Run, tb.Columns[ci])
					}
					dir := filepath.Join(out, p.Run)
					res, err := runner.ReadResult(dir)
					if err != nil {
						t.Fatal(err)
					}
					s, err := runner.ReadSettings(dir)
					if err != nil {
						t.Fatal(err)
					}
					want, ok := figureOf(row.Measure, res, s)
					switch {
					case !ok:
						continue
					case p.Value == nil:
						t.Fatalf("%s of %s: no figure, result.json has %v", row.Measure, p.Run, want)
					case *p.Value != want:
						t.Fatalf("%s of %s: scorecard %v, result.json %v", row.Measure, p.Run, *p.Value, want)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no figure checked")
	}
	t.Logf("%d figures checked against result.json", checked)
}

// figureOf is a measure as result.json states it, read independently of
// the scorecard's code.
func figureOf(measure string, r verifier.Result, s runner.Settings) (float64, bool) {
	var kill *verifier.FaultReport
	for i := range r.Faults {
		if r.Faults[i].Action == "kill" {
			kill = &r.Faults[i]
			break
		}
	}
	switch measure {
	case "acked messages lost":
		return float64(r.Lost), true
	case "longest interval with zero acks":
		return r.LongestNoAckMs, true
	case "killed server ready":
		if kill == nil {
			return 0, false
		}
		return kill.ReadyMs, kill.ReadyMs >= 0
	case "all replicas in sync":
		if kill == nil {
			return 0, false
		}
		return kill.InSyncMs, kill.InSyncMs >= 0
	case "publish latency p50":
		return r.Publish.P50, true
	case "publish latency p99":
		return r.Publish.P99, true
	case "end-to-end latency p50":
		return r.E2E.P50, r.E2E.Count > 0
	case "end-to-end latency p99":
		return r.E2E.P99, r.E2E.Count > 0
	case "achieved rate":
		return float64(r.Acked) / r.LoadEnd.Sub(r.LoadStart).Seconds(), true
	}
	return 0, false
}

// runOrder lists a matrix's run directories by when each run began.
func runOrder(t *testing.T, out string) []string {
	t.Helper()
	type started struct {
		rel string
		at  string
	}
	var runs []started
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "run.json" {
			s, err := runner.ReadSettings(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(out, filepath.Dir(path))
			runs = append(runs, started{rel, s.CreatedAt.Format("2006-01-02T15:04:05.000000000")})
		}
		return nil
	})
	sort.Slice(runs, func(i, j int) bool { return runs[i].at < runs[j].at })
	var rels []string
	for _, r := range runs {
		rels = append(rels, r.rel)
	}
	return rels
}

func TestMatrixOnKfake(t *testing.T) {
	c := kfakeCluster(t)
	file := writeMatrix(t, fmt.Sprintf(`
systems:
  - {name: fake, brokers: [%s]}
settings:
  - {name: acks-all, acks: all}
  - {name: acks-1, acks: "1"}
scenarios: [plain]
repeat: 3
overrides: {rate: 300, duration: 1s, partitions: 2}
`, strings.Join(c.ListenAddrs(), ", ")))
	out := filepath.Join(t.TempDir(), "m")
	var stdout bytes.Buffer
	if err := runMatrix(context.Background(), &stdout, &stdout, matrixOptions{file: file, out: out}); err != nil {
		t.Fatalf("matrix: %v\n%s", err, stdout.String())
	}
	want := []string{"fake/acks-all/plain/1", "fake/acks-1/plain/1", "fake/acks-all/plain/2", "fake/acks-1/plain/2", "fake/acks-all/plain/3", "fake/acks-1/plain/3"}
	if got := runOrder(t, out); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("runs began in the order\n%v\nwant\n%v", got, want)
	}
	// Each run wrote its own fresh topic, with the setting's acks.
	topics := map[string]bool{}
	for _, rel := range want {
		s, err := runner.ReadSettings(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		if topics[s.Topic.Name] {
			t.Fatalf("topic %s written twice", s.Topic.Name)
		}
		topics[s.Topic.Name] = true
		wantAcks := map[bool]string{true: `"acks": "all"`, false: `"acks": "1"`}[strings.Contains(rel, "acks-all")]
		if !strings.Contains(string(s.DriverSettings), wantAcks) || s.Rate != 300 || s.Topic.Partitions != 2 {
			t.Fatalf("%s ran with %s, rate %v, %d partitions", rel, s.DriverSettings, s.Rate, s.Topic.Partitions)
		}
	}
	card := readCard(t, out)
	if len(card.Tables) != 1 || strings.Join(card.Tables[0].Columns, " ") != "fake/acks-all fake/acks-1" {
		t.Fatalf("card %+v", card.Tables)
	}
	checkCardAgainstRuns(t, out, card, 3)
	md, _ := os.ReadFile(filepath.Join(out, matrix.CardMarkdown))
	if !strings.Contains(string(md), "(fake/acks-1/plain/2/report.md)") {
		t.Fatalf("scorecard.md links no run:\n%s", md)
	}
	// Started again: every run is done, nothing runs.
	stdout.Reset()
	if err := runMatrix(context.Background(), &stdout, &stdout, matrixOptions{file: file, out: out}); err != nil || !strings.Contains(stdout.String(), "ran 0, skipped 6") {
		t.Fatalf("second start: %v\n%s", err, stdout.String())
	}
	// compare lays out two cells the same way.
	var cmpOut, cmpErr bytes.Buffer
	code := execute(context.Background(), []string{"compare", filepath.Join(out, "fake/acks-all/plain"), filepath.Join(out, "fake/acks-1/plain/2"), "--out", filepath.Join(out, "cmp")}, &cmpOut, &cmpErr)
	if code != exitPass {
		t.Fatalf("compare: exit %d\n%s%s", code, cmpOut.String(), cmpErr.String())
	}
	cmp := readCard(t, filepath.Join(out, "cmp"))
	if lost := cmp.Tables[0].Rows[0]; lost.Cells[0].N != 3 || lost.Cells[1].N != 1 || lost.Cells[1].Runs[0].Run != "../fake/acks-1/plain/2" {
		t.Fatalf("compare's lost row %+v", lost)
	}
}

// A matrix stopped in its third run and started again skips the two
// done, runs the third again (its half-done directory moved aside) and the
// rest once.
func TestMatrixResumesOnKfake(t *testing.T) {
	c := kfakeCluster(t)
	file := writeMatrix(t, fmt.Sprintf(`
systems: [{name: fake, brokers: [%s]}]
settings: {acks: [all, "1"]}
scenarios: [plain]
repeat: 2
overrides: {rate: 200, duration: 3s, partitions: 1}
`, strings.Join(c.ListenAddrs(), ", ")))
	out := filepath.Join(t.TempDir(), "m")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	err := runMatrix(ctx, &stdout, &stdout, matrixOptions{file: file, out: out, beforeRun: func(_ context.Context, r matrix.Run) {
		if r.Seq == 3 {
			// Stop it once the third run's load is under way.
			go func() {
				for {
					if _, err := os.Stat(filepath.Join(out, r.Rel(), "run.json")); err == nil {
						// run.json is written before the load starts; a
						// cancel then undoes the whole claim. A second in,
						// the load is under way and stays half-done.
						time.Sleep(time.Second)
						cancel()
						return
					}
					if ctx.Err() != nil {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "matrix interrupted in fake/acks-all/plain/2") {
		t.Fatalf("interrupted matrix: %v\n%s", err, stdout.String())
	}
	first := map[string]string{}
	for _, rel := range []string{"fake/acks-all/plain/1", "fake/acks-1/plain/1"} {
		s, err := runner.ReadSettings(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		first[rel] = s.RunID
	}
	if st, _ := matrix.StateOf(filepath.Join(out, "fake/acks-all/plain/2")); st != matrix.Partial {
		t.Fatalf("the interrupted run is %v, want Partial", st)
	}
	stdout.Reset()
	if err := runMatrix(context.Background(), &stdout, &stdout, matrixOptions{file: file, out: out}); err != nil {
		t.Fatalf("resumed matrix: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "ran 2, skipped 2 done before, moved aside 1 half-done") {
		t.Fatalf("resumed matrix:\n%s", stdout.String())
	}
	for rel, id := range first {
		if s, _ := runner.ReadSettings(filepath.Join(out, rel)); s.RunID != id {
			t.Fatalf("%s ran again: run %s, was %s", rel, s.RunID, id)
		}
	}
	aside, _ := filepath.Glob(filepath.Join(out, "fake/acks-all/plain/2.partial-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
	checkCardAgainstRuns(t, out, readCard(t, out), 2)
}

// Whatever a cell cannot run is refused before the first run starts:
// nothing is written.
func TestMatrixRefusesBeforeTheFirstRun(t *testing.T) {
	dir := t.TempDir()
	natsDir := filepath.Join(dir, "natscluster")
	os.MkdirAll(natsDir, 0o755)
	os.WriteFile(filepath.Join(natsDir, "cluster.json"), []byte(`{"kind": "nats", "nodes": 3, "base_port": 1}`), 0o644)
	tests := []struct{ name, text, want string }{
		{"leader kill without a cluster", "systems:\n  - {name: fake, brokers: [127.0.0.1:1]}\nscenarios: [plain, kafka/leader-kill]\n",
			"matrix.yaml:2: system fake cannot run scenario kafka/leader-kill: it kills a broker's process, which needs the system's cluster-dir or cluster-file"},
		{"a kill in a scenario file without a cluster", "systems:\n  - {name: fake, brokers: [127.0.0.1:1]}\nscenarios: [kill.yaml]\n",
			`system fake cannot run scenario kill.yaml: its fault "at=1s kill node:1" acts on a broker's process`},
		{"a built-in of another broker", "systems:\n  - {name: n, cluster-dir: " + natsDir + "}\nscenarios: [kafka/leader-kill]\n",
			"the scenario is kafka's, and cluster-dir " + natsDir + " runs nats"},
		{"mistyped key in a setting", "systems: [{name: a, brokers: [x]}]\nsettings: [{name: s, akcs: all}]\nscenarios: [plain]\n",
			`matrix.yaml:2: unknown key "akcs": the keys are the flags of ackcheck run (see its --help); did you mean acks? (in setting s)`},
		{"mistyped key in overrides", "systems: [{name: a, brokers: [x]}]\nscenarios: [plain]\noverrides: {rat: 5}\n",
			`did you mean rate? (in overrides)`},
		{"wrong value", "systems: [{name: a, brokers: [x]}]\nscenarios: [plain]\noverrides: {rate: fast}\n",
			`matrix.yaml:3: rate:`},
		{"unknown built-in", "systems: [{name: a, brokers: [x]}]\nscenarios: [kafka/leader-kil]\n",
			`no built-in scenario "kafka/leader-kil"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := writeMatrix(t, tc.text)
			os.WriteFile(filepath.Join(filepath.Dir(file), "kill.yaml"), []byte("fault: at=1s kill node:1\n"), 0o644)
			out := filepath.Join(t.TempDir(), "m")
			ran := 0
			var stdout bytes.Buffer
			err := runMatrix(context.Background(), &stdout, &stdout, matrixOptions{file: file, out: out, beforeRun: func(context.Context, matrix.Run) { ran++ }})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) || ran != 0 {
				t.Fatalf("%d runs started, --out made: %v", ran, err)
			}
		})
	}
}

// A matrix directory holds one matrix: another file's runs are refused.
func TestMatrixRefusesAnotherFilesDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	a := writeMatrix(t, "systems: [{name: a, brokers: [x]}]\nscenarios: [plain]\n")
	b := writeMatrix(t, "systems: [{name: b, brokers: [x]}]\nscenarios: [plain]\n")
	if err := claimMatrixDir(a, out); err != nil {
		t.Fatal(err)
	}
	if err := claimMatrixDir(a, out); err != nil {
		t.Fatalf("the same file again: %v", err)
	}
	if err := claimMatrixDir(b, out); err == nil || !strings.Contains(err.Error(), "was started from another matrix file") {
		t.Fatalf("another file: %v", err)
	}
}
