package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// groupRun runs a load with a consumer group of two members on d,
// restarting them at 1 s, and returns the result, the run directory and
// its progress lines.
func groupRun(t *testing.T, d drivers.Driver) (*verifier.Result, string, string) {
	t.Helper()
	var buf lockedBuf
	out := filepath.Join(t.TempDir(), "run")
	steps, err := faults.ParseSchedule("at=1s restart-consumers")
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 3},
		Load:   load.Config{Rate: 400, Duration: 2500 * time.Millisecond, MessageSize: 100},
		Verify: true, Progress: &buf, ProgressEvery: 500 * time.Millisecond,
		Group:  &load.GroupConfig{Name: "g", Members: 2},
		Faults: &runner.FaultPlan{Steps: steps},
	}
	res, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, out, buf.String()
}

// A run with --group records the group's deliveries and acknowledged
// commits beside the acks, restarts its members when asked, and shows
// its progress.
func TestGroupRunRecordsDeliveriesAndCommits(t *testing.T) {
	d := kfakeDriver(t)
	res, out, log := groupRun(t, d)
	if !strings.Contains(log, "group delivered ") || !strings.Contains(log, "left without committing and joined again") {
		t.Fatalf("progress lines lack the group:\n%s", log)
	}
	l, err := ledger.OpenReadOnly(runner.LedgerDir(out), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dels, err := l.Count(context.Background(), ledger.Delivery, nil)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := l.Count(context.Background(), ledger.Commit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dels < res.Acked || commits == 0 {
		t.Fatalf("%d deliveries and %d commits recorded for %d acked", dels, commits, res.Acked)
	}
	var run ledger.RunInfo
	if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
		t.Fatal(err)
	}
	if run.Group == nil || run.Group.Name != "g" || run.Group.Members != 2 || run.Group.Restarts != 1 || run.Group.Err != "" {
		t.Fatalf("run's group: %+v", run.Group)
	}
	// kadm's account of the group's commits: at the partitions' ends.
	got, err := d.CommittedOffsets(context.Background(), "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := d.EndOffsets(context.Background(), "t")
	for p, e := range end {
		if got[p] != e {
			t.Fatalf("partition %d: the broker holds commit %d, the partition ends at %d", p, got[p], e)
		}
	}
	t.Logf("%d acked, %d deliveries, %d commits; %s", res.Acked, dels, commits, run.Group.Promise)
}

// Issue 39, point 2: each of the group's classes fires when a consumer
// group really misbehaves (drivertest.FaultyGroup over kfake's group),
// and stays quiet on the same run with the group honest: skipped fails,
// a forgotten commit fails where commits are promised durable,
// redelivered is counted, with the fault before it.
func TestGroupClassesFireAndStayQuiet(t *testing.T) {
	type counts struct{ skipped, lost, redelivered, afterCommit int64 }
	for _, tc := range []struct {
		mode    drivertest.GroupMisbehavior
		every   int
		verdict string
		check   string
		want    func(c counts) bool
	}{
		// Honest: restart-consumers may cut a commit short, and what it
		// covered is delivered again, but never after a commit covered it.
		{drivertest.GroupHonest, 1, verifier.Pass, "", func(c counts) bool { return c.skipped == 0 && c.lost == 0 && c.afterCommit == 0 }},
		{drivertest.GroupSkip, 97, verifier.Fail, verifier.CheckSkipped, func(c counts) bool { return c.skipped > 0 && c.lost == 0 }},
		{drivertest.GroupForget, 40, verifier.Fail, verifier.CheckCommitLost, func(c counts) bool { return c.lost > 0 && c.skipped == 0 && c.redelivered > 0 }},
		{drivertest.GroupRedeliver, 50, verifier.Pass, "", func(c counts) bool {
			return c.redelivered >= 20 && c.afterCommit == 0 && c.lost == 0 && c.skipped == 0
		}},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			fg := &drivertest.FaultyGroup{Driver: kfakeDriver(t), Mode: tc.mode, Every: tc.every}
			res, out, _ := groupRun(t, fg)
			g := res.Group
			if g == nil {
				t.Fatal("result has no group")
			}
			c := counts{g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit}
			if res.Verdict != tc.verdict || !tc.want(c) {
				t.Fatalf("%s: verdict %s, %+v (misdeeds %d); reasons %v", tc.mode, res.Verdict, c, fg.Done(), res.Reasons)
			}
			if tc.check != "" && !slices.ContainsFunc(res.Failures, func(f verifier.Failure) bool { return f.Check == tc.check }) {
				t.Fatalf("no failure of %s: %v", tc.check, res.Failures)
			}
			for file, n := range map[string]int64{verifier.SkippedFile: c.skipped, verifier.CommitsLostFile: c.lost, verifier.RedeliveredFile: g.Deliveries - g.Delivered} {
				data, err := os.ReadFile(filepath.Join(out, file))
				if err != nil {
					t.Fatal(err)
				}
				if lines := int64(strings.Count(string(data), "\n")); lines != n {
					t.Fatalf("%s has %d lines, want %d", file, lines, n)
				}
			}
			if tc.mode == drivertest.GroupRedeliver && g.RedeliveredWhile["after restart-consumers at 1.0 s"]+g.RedeliveredWhile[verifier.NoFaultInForce] == 0 {
				t.Fatalf("redeliveries not put beside the fault: %v", g.RedeliveredWhile)
			}
			t.Logf("%s: %+v, %d deliveries of %d acked, %d commits, misdeeds %d; stalls %+v", tc.mode, c, g.Deliveries, res.Acked, g.Commits, fg.Done(), g.Stalls)
		})
	}
}
