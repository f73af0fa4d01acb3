package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
)

// switched is a server-wide setting the audit's settings switch (their
// Prepare); runSwitchedAudit puts back the value it found.
type switched struct {
	name string
	get  func() bool
	set  func(context.Context, bool) error
}

// runSwitchedAudit runs an audit whose settings switch the cluster (their
// Prepare), on 3 partitions of replication rf: 300 msg/s of 512 B for
// 16 s, power loss of every node at 6 s. A setting expected to lose is
// run up to 3 times until it does (a loss can find everything written
// back). Each row's power loss must have applied on nodes nodes, and its
// latency before the loss must be measured. The comparison goes to
// $ACKCHECK_REPORT_DIR/<report>/audit.md when that is set.
func runSwitchedAudit(t *testing.T, sw switched, audit FsyncAudit, d drivers.Driver, nodes faults.Nodes, rf, n int, report string) *AuditResult {
	t.Helper()
	was := sw.get()
	defer func() {
		if err := sw.set(context.Background(), was); err != nil {
			t.Errorf("put %s back: %v", sw.name, err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if rd := os.Getenv("ACKCHECK_REPORT_DIR"); rd != "" {
		dir = filepath.Join(rd, report)
		os.RemoveAll(dir)
	}
	base := runner.Config{
		Driver:          d,
		Topic:           drivers.TopicSpec{Partitions: 3, ReplicationFactor: rf},
		Load:            load.Config{Rate: 300, Duration: 16 * time.Second, Producers: 2, MessageSize: 512, LiveRead: true},
		ReadIdleTimeout: 30 * time.Second,
		Faults:          &runner.FaultPlan{Nodes: nodes, RecoveryTimeout: time.Minute},
		Progress:        testWriter{t}, ProgressEvery: 5 * time.Second,
	}
	res := &AuditResult{Scenario: audit.Name(), LossAtS: audit.LossAt.Seconds(), SteadyEndS: audit.steadyEnd().Seconds()}
	for _, s := range audit.Settings {
		var row AuditRow
		for try := 1; try <= 3; try++ {
			a := audit
			a.Topic = fmt.Sprintf("%s-try%d", audit.Topic, try)
			var err error
			if row, err = a.RunSetting(ctx, base, s, filepath.Join(dir, fmt.Sprintf("%s-try%d", s.Name, try))); err != nil {
				t.Fatal(err)
			}
			if !s.ExpectLoss || row.Lost > 0 {
				break
			}
			t.Logf("try %d of %s lost nothing", try, s.Name)
		}
		res.Rows = append(res.Rows, row)
	}
	md := res.Markdown()
	t.Logf("\n%s", md)
	os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644)
	for _, r := range res.Rows {
		if r.PowerLoss != "applied" || len(r.NodeLoss) != n {
			t.Fatalf("%s: power loss %q on %d nodes, want %d", r.Setting.Name, r.PowerLoss, len(r.NodeLoss), n)
		}
		if r.SteadyPublish.Count == 0 {
			t.Errorf("%s: no latency before the loss", r.Setting.Name)
		}
	}
	return res
}
