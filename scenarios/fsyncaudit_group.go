package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/verifier"
)

// The audit's consumer side (fsync-audit --group): a consumer group runs
// beside each setting's load, and its acknowledged commits go through the
// same power loss as the producers' acks. With a driver that can switch
// its commits' fsync (drivers.CommitFsyncSetter: Kafka's offsets topic
// flush.messages), each setting's run has its commits fsynced where its
// acks are, and from memory where they are not, so that both sides of
// "no message lost" are measured under one setting.

// ConsumerRow is one setting's consumer side.
type ConsumerRow struct {
	Group string `json:"group"`
	// CommitMeaning is what an acknowledged commit meant, read from the
	// cluster at the run's start (drivers.CommitPromise), not assumed.
	CommitMeaning string `json:"commit_meaning"`
	// CommitSetting names the setting switched (empty: none could be) and
	// CommitFsync its value read back from the broker before the run.
	CommitSetting string `json:"commit_setting,omitempty"`
	CommitFsync   *bool  `json:"commit_fsync,omitempty"`
	// CommitFsyncWhy, where the driver reads it from the group's own
	// consumers after the run (drivers.GroupCommitFsyncReader), says why
	// CommitFsync is what it is; that reading overrides the setting's.
	CommitFsyncWhy string `json:"commit_fsync_why,omitempty"`
	Commits        int64  `json:"commits"`
	// CommitsLost are acknowledged commits the group later resumed before
	// (verifier.GroupResult.CommitsLost), counted as the run counts them.
	CommitsLost            int64 `json:"commits_lost"`
	Skipped                int64 `json:"skipped"`
	Redelivered            int64 `json:"redelivered"`
	RedeliveredAfterCommit int64 `json:"redelivered_after_commit"`
	// CommitLatency over the whole run, and SteadyCommit over the commits
	// that followed polls wholly before the power loss (the setting's
	// cost), as the producer side's Publish and SteadyPublish.
	CommitLatency verifier.Latency `json:"commit_latency_ms"`
	SteadyCommit  verifier.Latency `json:"steady_commit_latency_ms"`
	// UntilProgressMs is from the power loss to the group's first
	// progress after it (-1: none came before the load's end).
	UntilProgressMs float64 `json:"until_progress_ms"`
	Agrees          bool    `json:"agrees"`
	Finding         string  `json:"finding"`
}

// ExpectLoss is the consumer side's expectation: commits not fsynced
// before their answer can be lost by a power loss of every node. It is
// known only when the commit setting was switched and read back.
func (c ConsumerRow) ExpectLoss() (expect, known bool) {
	if c.CommitFsync == nil {
		return false, false
	}
	return !*c.CommitFsync, true
}

// BrokenPromise: a commit fsynced before its answer was lost.
func (c ConsumerRow) BrokenPromise() bool {
	expect, known := c.ExpectLoss()
	return known && !expect && c.CommitsLost > 0
}

// commitFsyncFor is the commit setting a setting's run gets: fsynced
// where the setting's acks are.
func commitFsyncFor(s AuditSetting) bool { return !s.ExpectLoss }

// consumerRow builds a setting's consumer side from its run's result;
// cf is the commit setting read back before the run and, where the
// driver reads it, from the group's consumers after it. nil when the run
// had no group.
func (a FsyncAudit) consumerRow(r *verifier.Result, row AuditRow, setting string, cf commitFsync) *ConsumerRow {
	g := r.Group
	if g == nil {
		return nil
	}
	c := &ConsumerRow{Group: g.Name, CommitMeaning: g.Promise, CommitSetting: setting, CommitFsync: cf.on, CommitFsyncWhy: cf.why,
		Commits: g.Commits, CommitsLost: g.CommitsLost, Skipped: g.Skipped, Redelivered: g.Redelivered,
		RedeliveredAfterCommit: g.RedeliveredAfterCommit, CommitLatency: g.CommitLatency, UntilProgressMs: -1}
	c.SteadyCommit, _ = r.CommitLatencyBetween(steadyStart, a.steadyEnd())
	for _, st := range g.Stalls {
		if strings.HasPrefix(st.Fault, "power-loss") {
			c.UntilProgressMs = st.UntilProgressMs
		}
	}
	c.Agrees, c.Finding = consumerFinding(*c, row)
	return c
}

// consumerFinding says whether the commits lost agree with what a commit
// meant, on the same grounds as the producer side's finding: no
// conclusion without a power loss or a whole read-back.
func consumerFinding(c ConsumerRow, r AuditRow) (bool, string) {
	expect, known := c.ExpectLoss()
	switch {
	case !strings.HasPrefix(r.PowerLoss, "applied"):
		return false, "No conclusion: the power loss did not apply (" + r.PowerLoss + ")."
	case r.Verdict == verifier.Incomplete, r.Verdict == verifier.Aborted, r.Verdict == verifier.Unproven:
		return false, fmt.Sprintf("No conclusion: the run's verdict is %s (see the producer side's finding).", r.Verdict)
	case c.Commits == 0:
		return false, "No conclusion: the group had no commit acknowledged."
	case c.UntilProgressMs < 0 && c.CommitsLost == 0 && r.Acked > 0 && r.Lost == r.Acked:
		// NATS's default: the streams' creation was never fsynced, so
		// the power loss took the topic and the group's consumers too.
		return false, fmt.Sprintf("No conclusion: the power loss took every acked message too (%d of %d: the topic itself, where its creation had not been fsynced), so the group had nothing to resume on and a lost commit could not show (%d acknowledged commits).", r.Lost, r.Acked, c.Commits)
	case c.UntilProgressMs < 0 && c.CommitsLost == 0:
		// A lost commit shows only as a delivery below it: a group that
		// never resumed (the node came back after the load and the
		// catch-up, or the log lost what was left to deliver) shows none.
		return false, fmt.Sprintf("No conclusion: the group made no progress after the power loss before it stopped, so a lost commit could not show (%d acknowledged commits, none seen lost). Give the nodes time to come back within the load: a longer --duration.", c.Commits)
	case !known:
		return false, fmt.Sprintf("Measured, not judged: %d of %d acknowledged commits lost; ackcheck cannot switch or read this broker's commit fsync setting, so it has no expectation to hold them to.", c.CommitsLost, c.Commits)
	case expect && c.CommitsLost > 0:
		why := ""
		if r.Lost > 0 {
			// The group's commits and the log it reads went back
			// together: a delivery below a commit may come from either.
			why = " The log lost acked messages in the same power loss, so the group resumed on a log cut back too."
		}
		return true, fmt.Sprintf("As documented: %d of %d acknowledged commits were lost; a commit did not mean it was on disk.%s", c.CommitsLost, c.Commits, why)
	case expect:
		return false, fmt.Sprintf("Disagrees with the expectation: none of %d acknowledged commits was lost, although commits were not fsynced before their answer. One power loss found nothing unsynced; it does not show the setting is safe.", c.Commits)
	case c.CommitsLost == 0:
		return true, fmt.Sprintf("As documented: none of %d acknowledged commits was lost; a commit meant fsynced.", c.Commits)
	}
	return false, fmt.Sprintf("Disagrees with the expectation: %d of %d acknowledged commits were lost although each was fsynced before its answer: a durability bug in the broker or in this setup.", c.CommitsLost, c.Commits)
}

// commitFsync is what a setting's commits meant on disk: on is nil when
// the audit has no commit switch; why is set when the driver read it from
// the group's own consumers.
type commitFsync struct {
	on  *bool
	why string
}

// readGroupCommits refines cf, the setting read back before the run, by
// what the driver reads from the group's consumers after it (a driver
// without drivers.GroupCommitFsyncReader leaves cf as it is). A group
// whose consumers cannot be read keeps the setting, and why says so.
func (a FsyncAudit) readGroupCommits(ctx context.Context, cf commitFsync, group, topic string) commitFsync {
	rd, ok := a.Commits.(drivers.GroupCommitFsyncReader)
	if !ok || cf.on == nil {
		return cf
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	on, why, err := rd.GroupCommitFsync(ctx, group, topic)
	if err != nil {
		cf.why = fmt.Sprintf("the group's consumers could not be read after the run (%v): held to the setting as switched", err)
		return cf
	}
	return commitFsync{on: &on, why: why}
}

// switchCommits puts s's commit setting in force on the cluster and
// returns it as read back (nil when the audit has no commit switch).
func (a FsyncAudit) switchCommits(ctx context.Context, s AuditSetting) (*bool, error) {
	if a.Commits == nil {
		return nil, nil
	}
	want := commitFsyncFor(s)
	if err := a.Commits.SetCommitFsync(ctx, want); err != nil {
		return nil, fmt.Errorf("switch %s for the group: %w", a.Commits.CommitFsyncSetting(), err)
	}
	got, err := a.Commits.CommitFsync(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s back: %w", a.Commits.CommitFsyncSetting(), err)
	}
	if got != want {
		return nil, fmt.Errorf("%s reads fsync %v after it was set to %v: the brokers do not take the setting", a.Commits.CommitFsyncSetting(), got, want)
	}
	return &got, nil
}

// consumerMarkdown is the consumer side's table, one column per setting
// (empty when no setting ran a group).
func (a *AuditResult) consumerMarkdown() string {
	var b strings.Builder
	var groups []string
	for _, r := range a.Rows {
		if r.Consumer != nil {
			groups = append(groups, r.Consumer.Group)
		}
	}
	if len(groups) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "\n## Consumer groups %s: commits through the same power loss\n\nOne group per setting, beside its load. Commit latency is from the poll's return to the broker's answer, one sample per commit call; \"before the loss\" covers the commits after polls in the same span as the producers' latency.\n\n", strings.Join(groups, ", "))
	cell := func(f func(ConsumerRow) string) string {
		var cs []string
		for _, r := range a.Rows {
			if r.Consumer == nil {
				cs = append(cs, "-")
				continue
			}
			cs = append(cs, f(*r.Consumer))
		}
		return strings.Join(cs, " | ")
	}
	lat := func(l verifier.Latency) string {
		if l.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f / %.1f (%d calls)", l.P50, l.P99, l.Max, l.Count)
	}
	var head []string
	for _, r := range a.Rows {
		head = append(head, r.Setting.Label)
	}
	fmt.Fprintf(&b, "| | %s |\n|---|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(a.Rows)))
	rows := []struct {
		name string
		f    func(ConsumerRow) string
	}{
		{"commit setting (read back)", func(c ConsumerRow) string {
			if c.CommitFsync == nil {
				return "not switched"
			}
			if c.CommitFsyncWhy != "" {
				return fmt.Sprintf("%s: commits fsynced %s: %s", c.CommitSetting, onOff(*c.CommitFsync), c.CommitFsyncWhy)
			}
			return fmt.Sprintf("%s: fsync %s", c.CommitSetting, onOff(*c.CommitFsync))
		}},
		{"what a commit meant (read from the cluster)", func(c ConsumerRow) string { return cmp.Or(c.CommitMeaning, "not known") }},
		{"acknowledged commits", func(c ConsumerRow) string { return fmt.Sprint(c.Commits) }},
		{"**commits lost**", func(c ConsumerRow) string { return fmt.Sprintf("**%d**", c.CommitsLost) }},
		{"skipped", func(c ConsumerRow) string { return fmt.Sprint(c.Skipped) }},
		{"redelivered (after a commit covered them)", func(c ConsumerRow) string {
			return fmt.Sprintf("%d (%d)", c.Redelivered, c.RedeliveredAfterCommit)
		}},
		{"commit p50 / p99 / max ms, before the loss", func(c ConsumerRow) string { return lat(c.SteadyCommit) }},
		{"commit p50 / p99 / max ms, whole run", func(c ConsumerRow) string { return lat(c.CommitLatency) }},
		{"group's first progress after the loss", func(c ConsumerRow) string {
			if c.UntilProgressMs < 0 {
				return "never"
			}
			return fmt.Sprintf("%.0f ms", c.UntilProgressMs)
		}},
		{"finding", func(c ConsumerRow) string { return c.Finding }},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row.name, strings.ReplaceAll(cell(row.f), "\n", " "))
	}
	if len(a.Rows) == 2 && a.Rows[0].Consumer != nil && a.Rows[1].Consumer != nil {
		x, y := a.Rows[0], a.Rows[1]
		if x.Consumer.SteadyCommit.P50 > 0 && y.Consumer.SteadyCommit.P50 > 0 {
			fmt.Fprintf(&b, "\nCommit cost before the loss: %s has %.2fx the commit p50 and %.2fx the commit p99 of %s.\n",
				y.Setting.Label, y.Consumer.SteadyCommit.P50/x.Consumer.SteadyCommit.P50, y.Consumer.SteadyCommit.P99/x.Consumer.SteadyCommit.P99, x.Setting.Label)
		}
	}
	return b.String()
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}
