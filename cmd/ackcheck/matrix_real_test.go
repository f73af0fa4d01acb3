package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/matrix"
	"github.com/ackcheck/ackcheck/runner"
)

// realMatrixOut is where a real-cluster matrix writes: a temporary
// directory, or $ACKCHECK_REPORT_DIR/<name> to keep the scorecard.
func realMatrixOut(t *testing.T, name string) string {
	if dir := os.Getenv("ACKCHECK_REPORT_DIR"); dir != "" {
		out := filepath.Join(dir, name+"-"+time.Now().UTC().Format("20060102T150405"))
		return out
	}
	return filepath.Join(t.TempDir(), name)
}

// The CI proof of issue 28: a small matrix on the local 3-node Kafka,
// acks=all and acks=1, a leader kill, repeat 3, short loads. Every
// acks=all run loses nothing; each acks=1 run's loss appears as its
// result.json measured it; every figure of the scorecard is checked
// against the runs' result.json.
func TestRealMatrixLeaderKill(t *testing.T) {
	dir := realCluster(t, kafkaCluster).Dir()
	file := writeMatrix(t, fmt.Sprintf(`
systems:
  - {name: kafka-local, cluster-dir: %s}
settings:
  - {name: acks-all, acks: all}
  - {name: acks-1, acks: "1", idempotent: false}
scenarios: [kafka/leader-kill]
repeat: 3
overrides: {rate: 300, duration: 10s, kill-at: 2s, restart-after: 3s, partitions: 3, recovery-timeout: 60s}
`, dir))
	out := realMatrixOut(t, "matrix-leader-kill")
	var log bytes.Buffer
	start := time.Now()
	err := runMatrix(context.Background(), &log, &log, matrixOptions{file: file, out: out})
	t.Logf("matrix of 6 leader kills took %s", time.Since(start).Round(time.Second))
	if err != nil && !errors.Is(err, errVerdictFailed) {
		t.Fatalf("matrix: %v\n%s", err, log.String())
	}
	card := readCard(t, out)
	checkCardAgainstRuns(t, out, card, 3)
	tb := card.Tables[0]
	if strings.Join(tb.Columns, " ") != "kafka-local/acks-all kafka-local/acks-1" {
		t.Fatalf("columns %v", tb.Columns)
	}
	var inSync matrix.Row
	for _, row := range tb.Rows {
		if row.Measure == "all replicas in sync" {
			inSync = row
		}
	}
	for _, row := range tb.Rows {
		switch row.Measure {
		case "acked messages lost":
			all, one := row.Cells[0], row.Cells[1]
			if all.N != 3 || all.Total == nil || *all.Total != 0 {
				t.Errorf("acks=all lost acked messages: %+v", all.Runs)
			}
			var lost []string
			for _, p := range one.Runs {
				res, err := runner.ReadResult(filepath.Join(out, p.Run))
				if err != nil || p.Value == nil || *p.Value != float64(res.Lost) {
					t.Errorf("acks=1 run %s: scorecard %v, result.json lost %d (%v)", p.Run, p.Value, res.Lost, err)
				}
				lost = append(lost, p.Text)
			}
			t.Logf("acks=1 lost per run: %s", strings.Join(lost, "; "))
		case "verdict":
			if row.Cells[0].Summary != "3 pass" {
				t.Errorf("acks=all verdicts: %s", row.Cells[0].Summary)
			}
		case "all replicas in sync, by the brokers' logs":
			// The brokers' own account stands beside ackcheck's figure
			// wherever ackcheck saw the replicas in sync within the run's
			// recovery timeout (on a loaded machine a restarted broker can
			// take longer; then neither has a figure, and the card says so).
			for i, c := range row.Cells {
				for j, p := range c.Runs {
					own := inSync.Cells[i].Runs[j]
					if own.Value != nil && p.Value == nil {
						t.Errorf("%s: ackcheck saw the replicas in sync after %s ms, the brokers' logs give no figure: %s", p.Run, own.Text, p.Text)
					}
					if own.Value != nil && p.Value != nil {
						t.Logf("%s: all replicas in sync after %s ms by ackcheck, %s ms by the brokers' logs", p.Run, own.Text, p.Text)
					}
				}
			}
		case "kill proof":
			for i, c := range row.Cells {
				if c.Summary != "3 holds" {
					t.Errorf("%s kill proofs: %s", tb.Columns[i], c.Summary)
				}
			}
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, matrix.CardMarkdown))
	t.Logf("scorecard:\n%s", md)
}

// A matrix on the real cluster interrupted once its third run's load is
// under way, then started again, ends with every run done once: the two
// done before are kept, the third runs again.
func TestRealMatrixResume(t *testing.T) {
	dir := realCluster(t, kafkaCluster).Dir()
	file := writeMatrix(t, fmt.Sprintf(`
systems: [{name: kafka-local, cluster-dir: %s}]
settings: {acks: [all, "1"]}
scenarios: [plain]
repeat: 2
overrides: {rate: 300, duration: 5s, partitions: 3}
`, dir))
	out := realMatrixOut(t, "matrix-resume")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log bytes.Buffer
	err := runMatrix(ctx, &log, &log, matrixOptions{file: file, out: out, beforeRun: func(_ context.Context, r matrix.Run) {
		if r.Seq != 3 {
			return
		}
		go func() {
			for ctx.Err() == nil {
				if _, err := os.Stat(filepath.Join(out, r.Rel(), "run.json")); err == nil {
					time.Sleep(2 * time.Second) // the load is under way
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted matrix: %v\n%s", err, log.String())
	}
	ids := map[string]string{}
	for _, rel := range []string{"kafka-local/acks-all/plain/1", "kafka-local/acks-1/plain/1"} {
		s, err := runner.ReadSettings(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		ids[rel] = s.RunID
	}
	log.Reset()
	if err := runMatrix(context.Background(), &log, &log, matrixOptions{file: file, out: out}); err != nil && !errors.Is(err, errVerdictFailed) {
		t.Fatalf("resumed matrix: %v\n%s", err, log.String())
	}
	// On a loaded machine the load may not have begun 2 s after run.json:
	// an interrupt then undoes the run's claim (nothing to move aside).
	// Either way the third run runs again, and the first two do not.
	aside, _ := filepath.Glob(filepath.Join(out, "kafka-local/acks-all/plain/2.partial-*"))
	if want := fmt.Sprintf("ran 2, skipped 2 done before, moved aside %d half-done", len(aside)); len(aside) > 1 || !strings.Contains(log.String(), want) {
		t.Fatalf("resumed matrix (%d moved aside), want %q:\n%s", len(aside), want, log.String())
	}
	t.Logf("the interrupted run was moved aside: %v", aside)
	for rel, id := range ids {
		if s, _ := runner.ReadSettings(filepath.Join(out, rel)); s.RunID != id {
			t.Fatalf("%s ran again", rel)
		}
	}
	for _, r := range []string{"kafka-local/acks-all/plain/1", "kafka-local/acks-1/plain/1", "kafka-local/acks-all/plain/2", "kafka-local/acks-1/plain/2"} {
		if st, v := matrix.StateOf(filepath.Join(out, r)); st != matrix.Done {
			t.Fatalf("%s: %v %s", r, st, v)
		}
	}
	checkCardAgainstRuns(t, out, readCard(t, out), 2)
}
