package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/scenarios"
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
<out>/audit.md and <out>/audit.json: acked messages lost, the longest time
without acks, publish and end-to-end latency before the loss and over the
whole run, and for each setting what an ack meant (read from the cluster)
and whether the measurement agrees with the documentation.

The cluster's data dirs must be on lazyfs: ackcheck cluster <broker> up
--lazyfs (--lazyfs-entries journal for brokers that rely on a journaling
filesystem's directory entries, as NATS and Pulsar do).
Exit status 1 only when a setting whose acks mean fsynced lost an acked
message; the default setting losing messages is the expected finding.`,
		Example: `  ackcheck cluster kafka up --dir /tmp/kl --lazyfs --base-port 29291
  ackcheck fsync-audit --cluster-dir /tmp/kl --rate 500 --duration 30s --loss-at 10s --out runs/audit
  ackcheck cluster nats up --dir /tmp/nl --lazyfs --lazyfs-entries journal --base-port 24522
  ackcheck fsync-audit --driver nats --cluster-dir /tmp/nl --partitions 3 --rate 300 --duration 20s --out runs/nats-audit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.applyFiles(cmd); err != nil {
				return err
			}
			if rf.clusterDir == "" && rf.clusterFile == "" {
				return fmt.Errorf("--cluster-dir or --cluster-file is required: the cluster whose power is cut (`ackcheck cluster <broker> up --lazyfs --dir D`)")
			}
			if !cmd.Flags().Changed("loss-at") {
				lossAt = rf.lc.Duration / 3
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
			restore, err := prepareAudit(cmd, &rf, d, &audit)
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
			if err != nil {
				return err
			}
			if res.BrokenPromise {
				return errVerdictFailed
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().DurationVar(&lossAt, "loss-at", 0, "when every node loses power, after the load starts (default: a third of --duration)")
	cmd.Flags().Lookup("duration").DefValue = "60s"
	return cmd
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
	if !scenarios.NeedsServerFsync(dur) {
		audit.Settings = scenarios.AuditSettings(dur, nil)
		return func() {}, audit.Validate(rf.lc.Duration)
	}
	var sw cluster.FsyncSwitch
	if rf.opened != nil && rf.opened.local != nil {
		sw, _ = rf.opened.local.(cluster.FsyncSwitch)
	}
	if sw == nil {
		return nil, fmt.Errorf("the %s audit switches the servers' own fsync setting, which needs a local cluster: --cluster-dir of `ackcheck cluster %s up --lazyfs --lazyfs-entries journal --dir D`", p.Name(), p.Name())
	}
	audit.Settings = scenarios.AuditSettings(dur, sw.SetFsync)
	was := sw.FsyncOn()
	restore = func() {
		if sw.FsyncOn() == was {
			return
		}
		fmt.Fprintf(cmd.OutOrStdout(), "putting %s back to %s (a clean restart) ...\n", sw.FsyncSetting(), sw.FsyncValue(was))
		if err := sw.SetFsync(context.WithoutCancel(cmd.Context()), was); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "could not put %s back: %v; run `ackcheck cluster %s up --dir %s %s`\n",
				sw.FsyncSetting(), err, p.Name(), rf.opened.local.Dir(), sw.FsyncFlags(was))
		}
	}
	return restore, audit.Validate(rf.lc.Duration)
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
