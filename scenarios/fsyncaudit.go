package scenarios

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// FsyncAudit answers "does an ack mean fsynced, or in memory?" by
// measurement: the same load runs once per durability setting, each with
// a power loss of every node at once (ackcheck lazyfs drops what no node
// fsynced), and the runs are compared on what they lost and what they
// cost. The expectation each setting carries comes from the broker's
// documentation; the audit reports whether the measurement agrees, and
// never tunes a run to make it agree.
type FsyncAudit struct {
	// Topic is the base name: each setting writes <Topic>-<setting name>.
	Topic string
	// LossAt is when the power goes out, after the load starts.
	LossAt   time.Duration
	Settings []AuditSetting
	// Broker names the scenario (the driver's name).
	Broker string
	// Commits, when set and the runs have a consumer group
	// (runner.Config.Group), is switched before each setting's run: the
	// group's commits fsynced where the setting's acks are, from memory
	// where they are not. nil leaves the commits as the cluster has them.
	// The caller puts back the value it found.
	Commits drivers.CommitFsyncSetter
}

// AuditSetting is one durability setting under audit, and how the audit
// puts it in force.
type AuditSetting struct {
	drivers.DurabilitySetting
	// Prepare, if set, puts the setting in force before its run (a
	// server-wide setting: reconfigure and restart the cluster).
	Prepare func(context.Context) error `json:"-"`
}

// AuditSettings are a broker's durability settings as the audit runs
// them. A setting that needs the servers' own fsync switch is put in force
// by setServerFsync (a clean restart of a local cluster); with
// setServerFsync nil, the cluster is taken to run the setting already.
func AuditSettings(d drivers.Durability, setServerFsync func(context.Context, bool) error) []AuditSetting {
	var out []AuditSetting
	for _, s := range d.Settings {
		a := AuditSetting{DurabilitySetting: s}
		if s.ServerFsync != nil && setServerFsync != nil {
			on := *s.ServerFsync
			a.Prepare = func(ctx context.Context) error { return setServerFsync(ctx, on) }
		}
		out = append(out, a)
	}
	return out
}

// NeedsServerFsync reports whether any setting is the servers' own.
func NeedsServerFsync(d drivers.Durability) bool {
	for _, s := range d.Settings {
		if s.ServerFsync != nil {
			return true
		}
	}
	return false
}

// Steps is one setting's schedule: every node loses power at LossAt.
func (a FsyncAudit) Steps() []faults.Step {
	return []faults.Step{{At: a.LossAt, Action: faults.PowerLoss, Target: faults.Target{Kind: faults.All}}}
}

// The steady state before the loss: from steadyStart (the first second
// holds the producers' connection set-up) to 2 s before the loss
// (messages sent later may be in flight when the power goes).
const steadyStart = time.Second

func (a FsyncAudit) steadyEnd() time.Duration { return max(a.LossAt-2*time.Second, 2*steadyStart) }

// NewResult is the audit's result before any setting ran: its name and
// the bounds of the steady state it compares. Run starts from it, and so
// does a caller that runs the settings one at a time (RunSetting).
func (a FsyncAudit) NewResult() *AuditResult {
	return &AuditResult{Scenario: a.Name(), LossAtS: a.LossAt.Seconds(), SteadyEndS: a.steadyEnd().Seconds()}
}

// Name is the scenario's hierarchical name.
func (a FsyncAudit) Name() string {
	if a.Broker == "" {
		return "fsync-audit/power-loss-all"
	}
	return a.Broker + "/fsync-audit/power-loss-all"
}

// Validate checks the schedule fits a load of the given duration.
func (a FsyncAudit) Validate(duration time.Duration) error {
	if a.LossAt <= 0 || a.LossAt >= duration {
		return fmt.Errorf("--loss-at %s must fall inside the load (--duration %s)", a.LossAt, duration)
	}
	if len(a.Settings) == 0 {
		return fmt.Errorf("no settings to audit")
	}
	return nil
}

// AuditRow is one setting's measurement.
type AuditRow struct {
	Setting AuditSetting `json:"setting"`
	Out     string       `json:"out"`
	Topic   string       `json:"topic"`
	// AckMeaning is read from the running cluster (the topic's settings),
	// not assumed.
	AckMeaning string `json:"ack_meaning"`
	Acked      int64  `json:"acked"`
	// Lost counts the acked messages proven lost: not read back from a
	// partition read to its end. Unread counts those acked in partitions
	// an unfinished read-back did not reach the end of: not judged.
	Lost           int64   `json:"lost"`
	Unread         int64   `json:"unread,omitempty"`
	Verdict        string  `json:"verdict"`
	LongestNoAckMs float64 `json:"longest_no_ack_ms"`
	// Publish and E2E cover the whole run, outage included; Steady* only
	// the windows wholly before the power loss: the cost of the setting.
	Publish       verifier.Latency `json:"publish_latency_ms"`
	E2E           verifier.Latency `json:"e2e_latency_ms"`
	SteadyPublish verifier.Latency `json:"steady_publish_latency_ms"`
	SteadyE2E     verifier.Latency `json:"steady_e2e_latency_ms"`
	// PowerLoss is the fault's result ("applied", or why not) and what
	// each node's filesystem lost.
	PowerLoss string           `json:"power_loss"`
	NodeLoss  map[int32]string `json:"node_loss,omitempty"`
	ReadyMs   float64          `json:"ready_ms"`
	InSyncMs  float64          `json:"in_sync_ms"`
	// LossAt is when the power loss hit; LossNodes the nodes it hit.
	LossAt    time.Time `json:"loss_at"`
	LossNodes []int32   `json:"loss_nodes,omitempty"`
	// Agrees: the measurement agrees with the documented expectation.
	Agrees  bool   `json:"agrees"`
	Finding string `json:"finding"`
	// Consumer is the consumer group's side of the run (--group), nil
	// without one.
	Consumer *ConsumerRow `json:"consumer,omitempty"`
}

// AuditResult is the side-by-side comparison.
type AuditResult struct {
	Scenario string  `json:"scenario"`
	LossAtS  float64 `json:"loss_at_s"`
	// SteadyEndS ends the span whose latency counts as "before the loss".
	SteadyEndS float64    `json:"steady_end_s"`
	Rows       []AuditRow `json:"rows"`
	// BrokenPromise is set when a setting whose acks mean fsynced lost an
	// acked message, or whose commits were fsynced lost an acknowledged
	// commit: the finding a vendor must answer for.
	BrokenPromise bool `json:"broken_promise"`
}

// Run runs every setting in turn with base's load, driver and cluster.
// base.Out is the audit's directory (each setting gets a subdirectory);
// base.Faults must name the cluster (its Nodes). progress may be nil.
func (a FsyncAudit) Run(ctx context.Context, base runner.Config, logf func(string, ...any)) (*AuditResult, error) {
	if base.Faults == nil || base.Faults.Nodes == nil {
		return nil, fmt.Errorf("the fsync audit needs the cluster it cuts the power of: --cluster-dir of a cluster started with --lazyfs, or a --cluster-file with lose_command")
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := a.NewResult()
	for _, s := range a.Settings {
		row, err := a.runSetting(ctx, base, s, logf)
		if err != nil {
			return res, fmt.Errorf("setting %s: %w", s.Name, err)
		}
		res.Rows = append(res.Rows, row)
		if row.Broken() {
			res.BrokenPromise = true
		}
	}
	return res, nil
}

// Broken reports whether the row breaks its setting's promise: acks
// meant fsynced and an acked message was lost, or commits were fsynced
// and an acknowledged commit was lost.
func (r AuditRow) Broken() bool {
	return (!r.Setting.ExpectLoss && r.Lost > 0) || (r.Consumer != nil && r.Consumer.BrokenPromise())
}

// RunSetting runs one setting (tests repeat one).
func (a FsyncAudit) RunSetting(ctx context.Context, base runner.Config, s AuditSetting, out string) (AuditRow, error) {
	base.Out = out
	return a.runSetting(ctx, base, s, func(string, ...any) {})
}

func (a FsyncAudit) runSetting(ctx context.Context, base runner.Config, s AuditSetting, logf func(string, ...any)) (AuditRow, error) {
	cfg := base
	if filepath.Base(cfg.Out) != s.Name {
		cfg.Out = filepath.Join(base.Out, s.Name)
	}
	cfg.Topic.Name = a.Topic + "-" + s.Name
	cfg.Topic.Configs = maps.Clone(base.Topic.Configs)
	if cfg.Topic.Configs == nil {
		cfg.Topic.Configs = map[string]string{}
	}
	maps.Copy(cfg.Topic.Configs, s.TopicConfigs)
	plan := *base.Faults
	plan.Steps = a.Steps()
	cfg.Faults = &plan
	cfg.Verify = true
	if base.Group != nil {
		g := *base.Group
		g.Name = base.Group.Name + "-" + s.Name // a group of its own per setting, as its topic
		cfg.Group = &g
	}
	if cfg.Check.Window <= 0 {
		cfg.Check.Window = time.Second // fine enough to find the steady state before the loss
	}
	logf("== %s: %s -> %s", s.Name, s.Label, cfg.Out)
	if s.Prepare != nil {
		if err := s.Prepare(ctx); err != nil {
			return AuditRow{}, fmt.Errorf("put %s in force: %w", s.Label, err)
		}
	}
	var cf commitFsync
	if cfg.Group != nil {
		var err error
		if cf.on, err = a.switchCommits(ctx, s); err != nil {
			return AuditRow{}, err
		}
	}
	r, err := runner.Run(ctx, cfg)
	if err != nil {
		return AuditRow{}, err
	}
	row := AuditRow{Setting: s, Out: cfg.Out, Topic: cfg.Topic.Name, Acked: r.Acked,
		Lost: r.Lost, Unread: r.Unread, Verdict: r.Verdict, LongestNoAckMs: r.LongestNoAckMs, Publish: r.Publish, E2E: r.E2E,
		PowerLoss: "not recorded", ReadyMs: -1, InSyncMs: -1}
	if len(r.AckMeanings) > 0 {
		row.AckMeaning = r.AckMeanings[0].Meaning
	}
	row.SteadyPublish, row.SteadyE2E, _ = r.LatencyBetween(steadyStart, a.steadyEnd())
	for _, f := range r.Faults {
		if f.Action != faults.PowerLoss {
			continue
		}
		row.PowerLoss, row.NodeLoss, row.ReadyMs, row.InSyncMs = string(f.Result), f.Lost, f.ReadyMs, f.InSyncMs
		row.LossAt, row.LossNodes = f.At, f.Nodes
		if f.Error != "" {
			row.PowerLoss += ": " + f.Error
		}
	}
	row.Agrees, row.Finding = finding(s, row)
	setting := ""
	if a.Commits != nil {
		setting = a.Commits.CommitFsyncSetting()
	}
	if cfg.Group != nil && r.Group != nil {
		cf = a.readGroupCommits(ctx, cf, cfg.Group.Name, cfg.Topic.Name)
	}
	row.Consumer = a.consumerRow(r, row, setting, cf)
	return row, nil
}

func finding(s AuditSetting, r AuditRow) (bool, string) {
	pct := 0.0
	if r.Acked > 0 {
		pct = 100 * float64(r.Lost) / float64(r.Acked)
	}
	switch {
	case !strings.HasPrefix(r.PowerLoss, "applied"):
		return false, "No conclusion: the power loss did not apply (" + r.PowerLoss + ")."
	case r.Verdict == verifier.Incomplete:
		// What was not read is neither lost nor kept: the loss count of a
		// setting is only comparable once every partition was read.
		return false, fmt.Sprintf("No conclusion yet: the read-back did not finish; %d acked messages are not read so far and %d are proven lost. Run `ackcheck verify --out %s` when the brokers answer.", r.Unread, r.Lost, r.Out)
	case r.Verdict == verifier.Aborted:
		return false, fmt.Sprintf("No conclusion: the run is not the experiment it was asked for (its load stopped early or a fault did not fire): %d acked messages not read back prove nothing about the setting.", r.Lost)
	case r.Verdict == verifier.Unproven:
		return false, fmt.Sprintf("No conclusion: the run's ledger cannot be proven whole, so what was not read back is no proof of a loss (%d acked messages not read back).", r.Lost)
	case s.ExpectLoss && r.Lost > 0:
		return true, fmt.Sprintf("As documented: %d of %d acked messages (%.1f%%) were lost; an ack did not mean the data was on disk.", r.Lost, r.Acked, pct)
	case s.ExpectLoss:
		return false, fmt.Sprintf("Disagrees with the expectation: no acked message was lost, although acks did not wait for fsync. This power loss found nothing acked that was not yet on disk; one run does not show the setting is safe.")
	case r.Lost == 0:
		return true, fmt.Sprintf("As documented: none of %d acked messages was lost; an ack meant fsynced on the in-sync replicas.", r.Acked)
	}
	return false, fmt.Sprintf("Disagrees with the expectation: %d of %d acked messages (%.1f%%) were lost although each ack waited for fsync: a durability bug in the broker or in this setup.", r.Lost, r.Acked, pct)
}

// Markdown renders the comparison, one column per setting.
func (a *AuditResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nPower loss of every node at once at %.1f s into the load; each node keeps only what it had fsynced (ackcheck lazyfs), then restarts. Latency \"sent before the loss\" covers messages sent from %.0f s (after the producers connected) to %.1f s (2 s before the loss, so that none was in flight when the power went).\n\n", a.Scenario, a.LossAtS, steadyStart.Seconds(), a.SteadyEndS)
	cell := func(f func(AuditRow) string) string {
		var cs []string
		for _, r := range a.Rows {
			cs = append(cs, f(r))
		}
		return strings.Join(cs, " | ")
	}
	ms := func(v float64) string {
		if v < 0 {
			return "never"
		}
		return fmt.Sprintf("%.0f ms", v)
	}
	lat := func(l verifier.Latency) string {
		if l.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f / %.1f", l.P50, l.P99, l.Max)
	}
	fmt.Fprintf(&b, "| | %s |\n|---|%s\n", cell(func(r AuditRow) string { return r.Setting.Label }), strings.Repeat("---|", len(a.Rows)))
	rows := []struct {
		name string
		f    func(AuditRow) string
	}{
		{"acked", func(r AuditRow) string { return fmt.Sprint(r.Acked) }},
		{"**acked lost**", func(r AuditRow) string {
			if r.Unread > 0 {
				return fmt.Sprintf("**%d** (%d more not read: the read-back did not finish)", r.Lost, r.Unread)
			}
			return fmt.Sprintf("**%d**", r.Lost)
		}},
		{"verdict", func(r AuditRow) string { return r.Verdict }},
		{"longest without acks", func(r AuditRow) string { return ms(r.LongestNoAckMs) }},
		{"publish p50 / p99 / max ms, sent before the loss", func(r AuditRow) string { return lat(r.SteadyPublish) }},
		{"e2e p50 / p99 / max ms, sent before the loss", func(r AuditRow) string { return lat(r.SteadyE2E) }},
		{"publish p50 / p99 / max ms, whole run", func(r AuditRow) string { return lat(r.Publish) }},
		{"e2e p50 / p99 / max ms, whole run", func(r AuditRow) string { return lat(r.E2E) }},
		{"all nodes answer again", func(r AuditRow) string { return ms(r.ReadyMs) }},
		{"all replicas in sync", func(r AuditRow) string { return ms(r.InSyncMs) }},
		{"power loss", func(r AuditRow) string { return r.PowerLoss }},
		{"expected (documented)", func(r AuditRow) string { return r.Setting.Why }},
		{"what an ack meant (read from the cluster)", func(r AuditRow) string { return r.AckMeaning }},
		{"finding", func(r AuditRow) string { return r.Finding }},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row.name, strings.ReplaceAll(cell(row.f), "\n", " "))
	}
	if len(a.Rows) == 2 && a.Rows[0].SteadyPublish.P99 > 0 && a.Rows[1].SteadyPublish.P99 > 0 {
		x, y := a.Rows[0], a.Rows[1]
		fmt.Fprintf(&b, "\nCost before the loss: %s has %.2fx the publish p50 and %.2fx the publish p99 of %s.\n",
			y.Setting.Label, y.SteadyPublish.P50/x.SteadyPublish.P50, y.SteadyPublish.P99/x.SteadyPublish.P99, x.Setting.Label)
	}
	b.WriteString(a.consumerMarkdown())
	b.WriteString("\nWhat each node's filesystem lost:\n\n")
	for _, r := range a.Rows {
		ids := make([]int32, 0, len(r.NodeLoss))
		for id := range r.NodeLoss {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			fmt.Fprintf(&b, "- %s, node %d: %s\n", r.Setting.Name, id, r.NodeLoss[id])
		}
	}
	b.WriteString("\nEach setting's own report: ")
	for i, r := range a.Rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s/report.html", r.Out)
	}
	b.WriteString("\n")
	return b.String()
}
