package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
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
topic of its own: for Kafka its default (no fsync per message) and
flush.messages=1; for NATS JetStream (--driver nats) the servers' default
sync_interval (2m) and sync_interval: always; for Pulsar (--driver
pulsar) the bookie's journalSyncData=false and true. NATS and Pulsar
settings are switched on the local cluster by a clean restart between the
runs, and the setting found is put back at the end. At --loss-at every node loses power at once: ackcheck lazyfs drops
every write the node had not fsynced and the broker is SIGKILLed at that
instant, then restarted on what its disk kept. Every acked message is read
back.

It writes <out>/<setting>/ (a full run each: result.json, report.html),
<out>/audit.md and <out>/audit.json: acked messages lost, the longest time
without acks, publish and end-to-end latency before the loss and over the
whole run, and for each setting what an ack meant (read from the cluster)
and whether the measurement agrees with the documentation.

The cluster's data dirs must be on lazyfs: ackcheck cluster kafka up --lazyfs
(or cluster nats|pulsar up --lazyfs --lazyfs-entries journal).
Exit status 1 only when a setting whose acks mean fsynced lost an acked
message; the default setting losing messages is the expected finding.`,
		Example: `  ackcheck cluster kafka up --dir /tmp/kl --lazyfs --base-port 29291
  ackcheck fsync-audit --cluster-dir /tmp/kl --rate 500 --duration 30s --loss-at 10s --out runs/audit
  ackcheck cluster nats up --dir /tmp/nl --lazyfs --lazyfs-entries journal --base-port 24522
  ackcheck fsync-audit --driver nats --cluster-dir /tmp/nl --partitions 3 --rate 300 --duration 20s --out runs/nats-audit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rf.clusterDir == "" && rf.clusterFile == "" {
				return fmt.Errorf("--cluster-dir or --cluster-file is required: the cluster whose power is cut (`ackcheck cluster kafka up --lazyfs --dir D`)")
			}
			if !cmd.Flags().Changed("loss-at") {
				lossAt = rf.lc.Duration / 3
			}
			if !cmd.Flags().Changed("topic") {
				rf.topic.Name = "fsync-audit-" + time.Now().UTC().Format("20060102t150405")
			}
			audit := scenarios.FsyncAudit{Topic: rf.topic.Name, LossAt: lossAt, Settings: scenarios.KafkaFsyncSettings()}
			var restore func()
			switch strings.ToLower(rf.driverName) {
			case "kafka":
				if rf.kf.acks != "all" && rf.kf.acks != "-1" {
					return fmt.Errorf("the audit compares fsync settings under acks=all; --acks %s would measure replication instead", rf.kf.acks)
				}
			case "nats", "pulsar":
				// Their fsync setting is the servers' own: the audit
				// switches the local cluster between settings, and puts
				// back the one it found when it ends, however it ends.
				sw, err := openSwitch(strings.ToLower(rf.driverName), rf.clusterDir)
				if err != nil {
					return err
				}
				audit.Settings, audit.Broker = sw.settings(sw.set), strings.ToLower(rf.driverName)
				was := sw.get()
				restore = func() {
					if sw.get() == was {
						return
					}
					fmt.Fprintf(cmd.OutOrStdout(), "putting %s back to %s (a clean restart) ...\n", sw.name, sw.value(was))
					if err := sw.set(context.WithoutCancel(cmd.Context()), was); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "could not put %s back: %v; run `%s`\n", sw.name, err, sw.fix(was))
					}
				}
			default:
				return fmt.Errorf("--driver %s: the audit knows the fsync settings of kafka (flush.messages), nats (sync_interval) and pulsar (journalSyncData)", rf.driverName)
			}
			if err := audit.Validate(rf.lc.Duration); err != nil {
				return err
			}
			if _, err := os.Stat(rf.out); err == nil {
				return fmt.Errorf("--out %s exists: choose a new directory", rf.out)
			}
			cfg, d, err := rf.config(cmd, audit.Steps())
			if err != nil {
				return err
			}
			defer d.Close()
			defer rf.nodesClose()
			if restore != nil {
				defer restore()
			}
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

// settingSwitch is a server-wide fsync setting of a local cluster that
// the audit switches by restarting it.
type settingSwitch struct {
	name     string // as the broker names it
	get      func() bool
	set      func(context.Context, bool) error
	value    func(bool) string                                                // the setting's value for on/off
	fix      func(bool) string                                                // the command that puts it back by hand
	settings func(func(context.Context, bool) error) []scenarios.AuditSetting // the audit's settings, switched by set
}

// openSwitch opens the local cluster in dir, which must be of kind.
func openSwitch(kind, dir string) (*settingSwitch, error) {
	if dir == "" || cluster.Kind(dir) != kind {
		return nil, fmt.Errorf("the %s audit switches the servers' own fsync setting, which needs a local cluster: --cluster-dir of `ackcheck cluster %s up --lazyfs --lazyfs-entries journal --dir D`", kind, kind)
	}
	if kind == "nats" {
		n, err := cluster.OpenNATS(cluster.NATSOptions{Dir: dir})
		if err != nil {
			return nil, err
		}
		value := func(on bool) string { return map[bool]string{true: "always", false: "default"}[on] }
		return &settingSwitch{name: "sync_interval", get: n.SyncAlways, set: n.SetSyncAlways, value: value,
			fix: func(on bool) string {
				return fmt.Sprintf("ackcheck cluster nats up --dir %s --sync %s", dir, value(on))
			},
			settings: scenarios.NATSFsyncSettings}, nil
	}
	p, err := cluster.OpenPulsar(cluster.PulsarOptions{Dir: dir})
	if err != nil {
		return nil, err
	}
	return &settingSwitch{name: "journalSyncData", get: p.JournalSyncData, set: p.SetJournalSyncData, value: strconv.FormatBool,
		fix: func(on bool) string {
			return fmt.Sprintf("ackcheck cluster pulsar up --dir %s --journal-sync-data=%v", dir, on)
		},
		settings: scenarios.PulsarFsyncSettings}, nil
}
