package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	reportpkg "github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

func newFsyncAuditCmd() *cobra.Command {
	var (
		rf     runFlags
		lossAt time.Duration
	)
	cmd := &cobra.Command{
		Use:   "fsync-audit",
		Short: "Run the same load under each fsync setting with a power loss of every node; compare loss and latency",
		Long: `fsync-audit answers "does an ack mean fsynced on the replicas, or held in
memory?" by measurement. The same load runs once per setting, each on a
topic of its own. The settings of each driver:
` + auditSettingsDoc() + `
A setting that is the servers' own is switched on the local cluster by a
clean restart between the runs, and the value found is put back at the end.
At --loss-at every node loses power at once: ackcheck lazyfs drops every
write the node had not fsynced and the broker is SIGKILLed at that instant,
then restarted on what its disk kept. Every acked message is read back.

It writes <out>/<setting>/ (a full run each: result.json, report.html),
<out>/audit.md and <out>/audit.json (and with --junit one JUnit suite, a
case per setting: failed when a setting whose acks mean fsynced lost an
acked message, an error when a setting reached no conclusion): acked messages lost, the longest time
without acks, publish and end-to-end latency before the loss and over the
whole run, and for each setting what an ack meant (read from the cluster)
and whether the measurement agrees with the documentation.

With --group NAME (and --consumers N) a consumer group runs beside each
setting's load (NAME-<setting>), and its commits go through the same power
loss: where the driver can switch what a commit means (Kafka: the offsets
topic's flush.messages), each setting's commits are fsynced where its acks
are and from memory where they are not, read back before the run and put
back as found at the end. NATS has no such switch: a durable consumer's
acks follow the servers' sync_interval, the setting the audit switches
for the streams; after each run the group's consumers are read (replicas,
mem_storage) to say what their acks meant (an R1 consumer answers before
it writes its state, so its acks count as not fsynced). Queen neither:
an ack is a cursor update committed in PostgreSQL under the
synchronous_commit the audit switches for the produces. audit.md then has a consumer table: what a commit
meant (read from the cluster), commit latency (poll to answer) before the
loss and over the run, and the acknowledged commits lost; a fsynced commit
lost is a broken promise, like a fsynced ack lost.

The cluster's data dirs must be on lazyfs: ackcheck cluster <broker> up
--lazyfs (--lazyfs-entries journal for brokers that rely on a journaling
filesystem's directory entries, as NATS and Pulsar do).
Exit status 1 only when a setting whose acks mean fsynced lost an acked
message; the default setting losing messages is the expected finding.`,
		Example: `  ackcheck cluster kafka up --dir /tmp/kl --lazyfs --base-port 29291
  ackcheck fsync-audit --cluster-dir /tmp/kl --rate 500 --duration 30s --loss-at 10s --out runs/audit
  ackcheck cluster nats up --dir /tmp/nl --lazyfs --lazyfs-entries journal --base-port 24522
  ackcheck fsync-audit --driver nats --cluster-dir /tmp/nl --partitions 3 --rate 300 --duration 20s --out runs/nats-audit
  ackcheck fsync-audit --cluster-dir /tmp/kl --group audit --consumers 2 --rate 300 --duration 20s --out runs/group-audit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFsyncAudit(cmd, &rf, lossAt) },
	}
	rf.register(cmd)
	cmd.Flags().DurationVar(&lossAt, "loss-at", 0, "when every node loses power, after the load starts (default: a third of --duration)")
	cmd.Flags().Lookup("duration").DefValue = "60s"
	return cmd
}

// runFsyncAudit is fsync-audit's run: the audit's settings one after the
// other, each with its power loss at lossAt, then audit.md, audit.json and
// the JUnit suite.
func runFsyncAudit(cmd *cobra.Command, rf *runFlags, lossAt time.Duration) error {
	if err := rf.applyScenario(cmd, "the cluster whose power is cut (`ackcheck cluster <broker> up --lazyfs --dir D`)", "loss-at", &lossAt); err != nil {
		return err
	}
	if !cmd.Flags().Changed("topic") {
		rf.topic.Name = "fsync-audit-" + time.Now().UTC().Format("20060102t150405")
	}
	if _, err := os.Stat(rf.out); err == nil {
		return fmt.Errorf("--out %s exists: choose a new directory", rf.out)
	}
	audit := scenarios.FsyncAudit{Topic: rf.topic.Name, LossAt: lossAt}
	if lossAt <= 0 || lossAt >= rf.lc.Duration {
		return audit.Validate(rf.lc.Duration)
	}
	cfg, d, err := rf.config(cmd, audit.Steps())
	if err != nil {
		return err
	}
	defer d.Close()
	defer rf.release()
	restore, err := prepareAudit(cmd, rf, d, &audit)
	if err != nil {
		return err
	}
	defer restore()
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "scenario %s: power loss of every node at %s\n", audit.Name(), lossAt)
	res, err := audit.Run(cmd.Context(), cfg, func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) })
	if res != nil && len(res.Rows) > 0 {
		md := res.Markdown()
		os.WriteFile(filepath.Join(rf.out, "audit.md"), []byte(md), 0o644)
		data, _ := json.MarshalIndent(res, "", "  ")
		os.WriteFile(filepath.Join(rf.out, "audit.json"), append(data, '\n'), 0o644)
		fmt.Fprintf(out, "\n%s\naudit: %s/audit.md, %s/audit.json\n", md, rf.out, rf.out)
	}
	if rf.cf.junit != "" {
		if jerr := writeAuditJUnit(rf.cf.junit, audit, res, err); jerr != nil {
			return errors.Join(err, jerr)
		}
		fmt.Fprintf(out, "junit: %s\n", rf.cf.junit)
	}
	if err != nil {
		return err
	}
	if res.BrokenPromise {
		return errVerdictFailed
	}
	return nil
}

// prepareAudit fills the audit's settings from the driver's profile. A
// setting that is the servers' own (NATS sync_interval, Pulsar
// journalSyncData) is switched on the local cluster by a clean restart
// before its run; restore puts back the value found, however the audit
// ends.
func prepareAudit(cmd *cobra.Command, rf *runFlags, d drivers.Driver, audit *scenarios.FsyncAudit) (restore func(), err error) {
	p := rf.profile
	dur, ok := p.Durability()
	if !ok {
		return nil, fmt.Errorf("--driver %s: ackcheck knows no fsync settings to audit for it", p.Name())
	}
	if dur.Check != nil {
		if err := dur.Check(d); err != nil {
			return nil, err
		}
	}
	audit.Broker = p.Name()
	commits, err := prepareAuditCommits(cmd, rf, d, audit)
	if err != nil {
		return nil, err
	}
	if !scenarios.NeedsServerFsync(dur) {
		audit.Settings = scenarios.AuditSettings(dur, nil)
		return commits, audit.Validate(rf.lc.Duration)
	}
	var sw cluster.FsyncSwitch
	if rf.opened != nil && rf.opened.local != nil {
		sw, _ = rf.opened.local.(cluster.FsyncSwitch)
	}
	if sw == nil {
		commits()
		return nil, fmt.Errorf("the %s audit switches the servers' own fsync setting, which needs a local cluster: --cluster-dir of `ackcheck cluster %s up --lazyfs --lazyfs-entries journal --dir D`", p.Name(), p.Name())
	}
	audit.Settings = scenarios.AuditSettings(dur, sw.SetFsync)
	was := sw.FsyncOn()
	restore = func() {
		defer commits()
		if sw.FsyncOn() == was {
			return
		}
		k := sw.FsyncKnob()
		fmt.Fprintf(cmd.OutOrStdout(), "putting %s back to %s (a clean restart) ...\n", k.Setting, k.Value(was))
		if err := sw.SetFsync(context.WithoutCancel(cmd.Context()), was); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "could not put %s back: %v; run `ackcheck cluster %s up --dir %s %s`\n",
				k.Setting, err, p.Name(), rf.opened.local.Dir(), k.Flags(was))
		}
	}
	return restore, audit.Validate(rf.lc.Duration)
}

// prepareAuditCommits gives the audit the driver's commit fsync switch
// when it runs a group (--group) and the driver has one: the offsets
// topic is made (a coordinator named) so that the setting can be read,
// and restore puts back the value found, however the audit ends.
func prepareAuditCommits(cmd *cobra.Command, rf *runFlags, d drivers.Driver, audit *scenarios.FsyncAudit) (restore func(), err error) {
	cs, ok := d.(drivers.CommitFsyncSetter)
	gc, isGroup := d.(drivers.GroupConsumer)
	if rf.group.Name == "" || !ok || !isGroup {
		return func() {}, nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	// Kafka makes its offsets topic, where the setting lives, when a
	// coordinator is first asked for; NATS knows no group before its
	// topic is made, and reads its setting from the servers instead.
	_, perr := gc.CommitPromise(ctx, rf.group.Name)
	was, err := cs.CommitFsync(ctx)
	if err != nil {
		if perr != nil {
			return nil, fmt.Errorf("--group %s: read what a commit means on this cluster: %w (the brokers must answer and name a group coordinator); %w", rf.group.Name, perr, err)
		}
		return nil, fmt.Errorf("--group %s: %w", rf.group.Name, err)
	}
	audit.Commits = cs
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 30*time.Second)
		defer cancel()
		if now, err := cs.CommitFsync(ctx); err == nil && now == was {
			return
		}
		fmt.Fprintf(cmd.OutOrStdout(), "putting %s back to fsync %v ...\n", cs.CommitFsyncSetting(), was)
		if err := cs.SetCommitFsync(ctx, was); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "could not put %s back to fsync %v: %v\n", cs.CommitFsyncSetting(), was, err)
		}
	}, nil
}

// auditSettingsDoc lists, per driver, the settings the audit compares.
func auditSettingsDoc() string {
	var b strings.Builder
	for _, p := range profiles() {
		d, ok := p.Durability()
		if !ok {
			continue
		}
		var labels []string
		for _, s := range d.Settings {
			labels = append(labels, s.Label)
		}
		fmt.Fprintf(&b, "  --driver %s: %s\n", p.Name(), strings.Join(labels, "; "))
	}
	return b.String()
}

// writeAuditJUnit writes the audit as one JUnit suite with a case per
// setting, named by the setting (stable from run to run). A case fails
// where the exit status does: a setting whose acks mean fsynced lost an
// acked message. A setting that reached no conclusion (the power loss did
// not apply, the read-back did not finish, its run failed) is an error;
// settings after a failed one were not run and are skipped. The measured
// loss and the finding are the case's system-out.
func writeAuditJUnit(path string, audit scenarios.FsyncAudit, res *scenarios.AuditResult, runErr error) error {
	data, err := reportpkg.Suite("ackcheck "+audit.Name(), "ackcheck.fsync-audit", auditCases(audit, res, runErr))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write --junit %s: %w", path, err)
	}
	return nil
}

func auditCases(audit scenarios.FsyncAudit, res *scenarios.AuditResult, runErr error) []reportpkg.Check {
	var rows []scenarios.AuditRow
	if res != nil {
		rows = res.Rows
	}
	var cs []reportpkg.Check
	for i, s := range audit.Settings {
		c := reportpkg.Check{Name: fmt.Sprintf("%s (%s)", s.Name, s.Label), Status: reportpkg.Passed}
		switch {
		case i < len(rows):
			r := rows[i]
			c.Out = fmt.Sprintf("acked %d, lost %d, longest without acks %.0f ms, verdict %s, power loss %s: %s",
				r.Acked, r.Lost, r.LongestNoAckMs, r.Verdict, r.PowerLoss, r.Finding)
			if g := r.Consumer; g != nil {
				c.Out += fmt.Sprintf("\ngroup %s: %d commits acknowledged, %d lost, commit p50 %.1f ms p99 %.1f ms: %s",
					g.Group, g.Commits, g.CommitsLost, g.CommitLatency.P50, g.CommitLatency.P99, g.Finding)
			}
			c.Seconds = runSeconds(r.Out)
			switch {
			case r.Verdict == verifier.Incomplete:
				c.Status, c.Message = reportpkg.Errored, fmt.Sprintf("no conclusion: the read-back did not finish; finish it with `ackcheck verify --out %s`", r.Out)
			case !strings.HasPrefix(r.PowerLoss, "applied"), r.Verdict == verifier.Aborted, r.Verdict == verifier.Unproven:
				c.Status, c.Message = reportpkg.Errored, r.Finding
			case !s.ExpectLoss && r.Lost > 0:
				c.Status, c.Message = reportpkg.Failed, r.Finding
			case r.Consumer != nil && r.Consumer.BrokenPromise():
				c.Status, c.Message = reportpkg.Failed, r.Consumer.Finding
			}
		case i == len(rows) && runErr != nil:
			c.Status, c.Message = reportpkg.Errored, runErr.Error()
		case runErr != nil:
			c.Status, c.Message = reportpkg.Skipped, fmt.Sprintf("not run: the audit stopped at setting %s", audit.Settings[len(rows)].Name)
		default:
			c.Status, c.Message = reportpkg.Errored, "no result for this setting"
		}
		cs = append(cs, c)
	}
	return cs
}

// runSeconds is how long a setting's run loaded and read back, from its
// result.json (0 when it has none).
func runSeconds(out string) float64 {
	r, err := runner.ReadResult(out)
	if err != nil || r.LoadStart.IsZero() {
		return 0
	}
	return max(0, r.LoadEnd.Sub(r.LoadStart).Seconds()) + r.ReadBackS
}
