package queen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
)

// These tests need a real Queen server on PostgreSQL 15, both on lazyfs,
// started by `ackcheck cluster queen up --lazyfs ...`; .ci/run starts one
// and sets ACKCHECK_QUEEN_DIR. They measure and report; what they assert
// is what an account ackcheck did not compute says: PostgreSQL's log for
// when the database was back, the Queen server's log for when it started,
// lazyfs for what a power loss dropped, and the invariants of the counts
// (every acked message is queued, duplicate or buffered; a lost message
// fails the verdict).

func queenRun(t *testing.T, q *queen.Cluster, name, schedule string) *verifier.Result {
	t.Helper()
	d, err := queen.New(q.DriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	steps, err := faults.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("queen-%s-%d", name, time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cfg := runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic: drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 1},
		Load: load.Config{Rate: 300, Duration: 30 * time.Second, Producers: 2, MessageSize: 1024, LiveRead: true,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	}
	if len(steps) > 0 {
		cfg.Faults = &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, RecoveryTimeout: 2 * time.Minute, Steps: steps}
	}
	res, err := runner.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "queen-"+name, res)
	if err := q.Up(ctx); err != nil {
		t.Fatalf("cluster not whole after the run: %v", err)
	}
	// Invariants of every run.
	var classes int64
	for _, n := range res.AckedByClass {
		classes += n
	}
	if res.Acked == 0 || classes != res.Acked {
		t.Errorf("acked %d, by class %v", res.Acked, res.AckedByClass)
	}
	if (res.Lost > 0) != (res.Verdict == verifier.Fail && strings.Contains(strings.Join(res.Reasons, " "), "not read back")) {
		t.Errorf("lost %d but verdict %s %v", res.Lost, res.Verdict, res.Reasons)
	}
	if res.Corrupt != 0 || res.Phantom != 0 {
		t.Errorf("corrupt %d, phantom %d", res.Corrupt, res.Phantom)
	}
	if len(res.AckMeanings) == 0 || !strings.Contains(res.AckMeanings[0].Meaning, "synchronous_commit=") {
		t.Errorf("what an ack meant does not come from PostgreSQL's settings: %+v", res.AckMeanings)
	}
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Errorf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
	}
	t.Logf("queen %s: acked %d (%v), lost %d, duplicates %d, reordered %d, longest without acks %.0f ms",
		name, res.Acked, res.AckedByClass, res.Lost, res.Duplicates, res.Reordered, res.LongestNoAckMs)
	for _, f := range res.Faults {
		if f.Action.TakesNodeAway() {
			t.Logf("  %s %s: first ack of every partition %.0f ms after it, ready %.0f ms, in sync %.0f ms", f.Action, f.Target, f.SlowestFirstAckMs, f.ReadyMs, f.InSyncMs)
		}
	}
	return res
}

// checkReady asserts that a node's ready figure agrees with its own log:
// not before the line that says it was back, and within slack of it.
func checkReady(t *testing.T, f verifier.FaultReport, q *queen.Cluster, node int32, what string, slack time.Duration) {
	t.Helper()
	if f.ReadyMs <= 0 {
		t.Errorf("%s %s: no ready figure", f.Action, f.Target)
		return
	}
	ready := f.At.Add(time.Duration(f.ReadyMs * float64(time.Millisecond)))
	path := q.LogFile(node)
	back, err := q.LastLine(node, what, ready.Add(slack))
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	if back.IsZero() || back.Before(f.At) {
		t.Errorf("%s %s: %s has no %q after the fault", f.Action, f.Target, path, what)
		return
	}
	// The log's clock has millisecond resolution: 2 ms of rounding.
	if ready.Before(back.Add(-2*time.Millisecond)) || ready.After(back.Add(slack)) {
		t.Errorf("%s %s: ackcheck says ready %.0f ms after it, the log says %q at %.0f ms",
			f.Action, f.Target, f.ReadyMs, what, float64(back.Sub(f.At))/float64(time.Millisecond))
	}
	t.Logf("oracle: %s %s ready %.0f ms, %s: %q at %.0f ms", f.Action, f.Target, f.ReadyMs, filepath.Base(path), what, float64(back.Sub(f.At))/float64(time.Millisecond))
}

// The measured cells of issue 14: a clean run, the Queen server and the
// database killed or stopped mid-load, and a maintenance window (the file
// buffer path) during which the server is SIGKILLed, stopped cleanly, or
// loses power.
func TestRealQueenFaults(t *testing.T) {
	q := lazyQueen.Get(t)
	pgReady := queen.DBBack
	t.Run("clean", func(t *testing.T) {
		res := queenRun(t, q, "clean", "")
		if res.Lost != 0 || res.Verdict != verifier.Pass {
			t.Errorf("a clean run: lost %d, verdict %s %v", res.Lost, res.Verdict, res.Reasons)
		}
	})
	t.Run("kill-server", func(t *testing.T) {
		res := queenRun(t, q, "kill-server", "at=8s kill node:1; at=14s restart")
		// The server answers /health once it has loaded its schema: its
		// log's start line comes before, by up to a few seconds.
		checkReady(t, res.Faults[0], q, queen.ServerNode, queen.ServerBack, 10*time.Second)
		checkQueenProductOracle(t, q, res, queen.ServerNode, queen.Listening)
	})
	t.Run("kill-db", func(t *testing.T) {
		res := queenRun(t, q, "kill-db", "at=8s kill db; at=14s restart db")
		checkReady(t, res.Faults[0], q, queen.DBNode, pgReady, 2*time.Second)
		checkQueenProductOracle(t, q, res, queen.DBNode, pgReady)
	})
	t.Run("stop-db", func(t *testing.T) {
		res := queenRun(t, q, "stop-db", "at=8s stop db; at=14s restart db")
		checkReady(t, res.Faults[0], q, queen.DBNode, pgReady, 2*time.Second)
	})
	for _, c := range []struct{ name, fault string }{
		{"maintenance-kill-server", "at=10s kill node:1; at=14s restart"},
		{"maintenance-stop-server", "at=10s stop node:1; at=14s restart"},
		{"maintenance-power-loss-server", "at=10s power-loss node:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := queenRun(t, q, c.name, "at=5s maintenance-on; "+c.fault+"; at=20s maintenance-off")
			if res.AckedByClass["buffered"] == 0 {
				t.Errorf("no buffered ack during maintenance mode: %v", res.AckedByClass)
			}
			// What a lost message can be: only an ack the database had
			// not committed, a buffered one.
			if res.Lost > res.AckedByClass["buffered"] {
				t.Errorf("lost %d, more than the %d buffered acks", res.Lost, res.AckedByClass["buffered"])
			}
			if strings.HasPrefix(c.name, "maintenance-power-loss") {
				pl := res.Faults[1]
				if !strings.Contains(pl.Lost[queen.ServerNode], "bytes dropped") {
					t.Errorf("lazyfs's account of the power loss: %q", pl.Lost[queen.ServerNode])
				}
				t.Logf("lazyfs under the Queen server's file buffer: %s; ackcheck: %d acked lost, of %d buffered", pl.Lost[queen.ServerNode], res.Lost, res.AckedByClass["buffered"])
			}
		})
	}
}

// The fsync audit on Queen: PostgreSQL's default (synchronous_commit=on)
// against synchronous_commit=off, each with a power loss of the database
// (and the server) at 12 s.
func TestRealQueenFsyncAudit(t *testing.T) {
	q := lazyQueen.Get(t)
	d, err := queen.New(q.DriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	defer q.SetFsync(context.Background(), true)
	audit := scenarios.FsyncAudit{Topic: fmt.Sprintf("queen-audit-%d", time.Now().Unix()), LossAt: 12 * time.Second,
		Settings: scenariotest.AuditSettings(t, queen.Profile{}, q.SetFsync), Broker: queen.Profile{}.Name()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := audit.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "audit"), Driver: d,
		Topic: drivers.TopicSpec{Partitions: 4, ReplicationFactor: 1},
		Load: load.Config{Rate: 300, Duration: 30 * time.Second, Producers: 2, MessageSize: 1024, LiveRead: true,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, RecoveryTimeout: 2 * time.Minute},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	md := res.Markdown()
	t.Log(md)
	if dir := os.Getenv("ACKCHECK_REPORT_DIR"); dir != "" {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "queen-fsync-audit.md"), []byte(md), 0o644)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	for _, row := range res.Rows {
		want := "synchronous_commit=on"
		if row.Setting.Name == "synchronous-commit-off" {
			want = "synchronous_commit=off"
		}
		if !strings.Contains(row.AckMeaning, want) {
			t.Errorf("%s: an ack meant %q, read from PostgreSQL; want it to say %s", row.Setting.Name, row.AckMeaning, want)
		}
		if row.PowerLoss != "applied" || !strings.Contains(row.NodeLoss[queen.DBNode], "bytes dropped") {
			t.Errorf("%s: power loss %q, the database's filesystem: %q", row.Setting.Name, row.PowerLoss, row.NodeLoss[queen.DBNode])
		}
		t.Logf("%s: acked %d, lost %d, verdict %s", row.Setting.Name, row.Acked, row.Lost, row.Verdict)
	}
}
