package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/ackcheck/ackcheck/runner"
	"github.com/spf13/cobra"
)

// newFaultsCmd is `ackcheck faults`: the one process that applies the
// faults of a load spread over shards (issue 27, point 2; see
// runner.ApplyFaults and docs/scale-out.md).
func newFaultsCmd() *cobra.Command {
	var (
		rf       runFlags
		schedule string
		startDir string
		shards   int
		lead     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "Apply the fault schedule of a load spread over shards (run --shard ... --external-faults)",
		Long: `faults is the one process that applies the faults of a sharded load, when no
shard should (the shards are given --external-faults). It joins the shards'
start in --start-dir (start.json, written by whichever arrives first), fires
each --fault step at the load's start plus its time, watches for nodes that
die unasked until the load ends, measures recovery, heals, and keeps the
fault timeline in --start-dir/` + runner.TimelineFileName + `, rewritten whole (synced,
renamed) at every change. Every shard copies it into its ledger, and the
merged verify (verify --shard-dir) judges each fault's figures against all
shards' acks. A timeline that is missing or not finished gives no PASS.

Its own directory (--out, default START-DIR/faults) holds run.json and the
heal journal: if this process is killed, ackcheck heal --out DIR undoes
what it left applied.`,
		Example: `  ackcheck faults --cluster-dir /tmp/kafka --topic t --shards 4 --start-dir /shared/run-7/start \
    --duration 15m --fault "at=5m kill most-leaders:t; at=5m30s restart"
  # and each shard: ackcheck run --shard I/4 --start-dir /shared/run-7/start --external-faults ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if startDir == "" {
				return fmt.Errorf("--start-dir is required: the directory the shards share (their --start-dir)")
			}
			if shards < 1 {
				return fmt.Errorf("--shards %d: give the load's number of shards (N of their --shard I/N)", shards)
			}
			if rf.out == "" {
				rf.out = filepath.Join(startDir, "faults")
			}
			steps, err := profiles().readSchedule(schedule, rf.lc.Duration)
			if err != nil {
				return err
			}
			if err := runner.CheckFaultsToApply(steps, rf.fsync != "", rf.lc.Duration); err != nil {
				return err
			}
			if lead <= 0 {
				return fmt.Errorf("--start-lead %s: give how long the shards have to get ready, above 0", lead)
			}
			// The cluster and the driver first: a fault process that
			// cannot reach them must not set the shards' start.
			cfg, d, err := rf.config(cmd, steps)
			if err != nil {
				return err
			}
			defer d.Close()
			defer rf.release()
			runID, start, err := runner.JoinStart(startDir, shards, rf.topic.Name, lead, time.Second)
			if err != nil {
				return err
			}
			t, err := runner.ApplyFaults(cmd.Context(), runner.FaultsConfig{
				Out: rf.out, StartDir: startDir, Driver: d, DriverSettings: cfg.DriverSettings, Topic: rf.topic.Name,
				Shards: shards, RunID: runID, Start: start, Duration: rf.lc.Duration, Faults: cfg.Faults, Progress: cmd.OutOrStdout(),
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "faults done: %d records in %s\n", len(t.Records), runner.TimelinePath(startDir))
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&schedule, "fault", "", `the load's faults, as run's --fault: "at=<duration> <action> [<target>]; ...", each at the shards' start plus its time`)
	cmd.Flags().StringVar(&startDir, "start-dir", "", "the directory the shards share (their --start-dir): start.json, and the fault timeline written here")
	cmd.Flags().IntVar(&shards, "shards", 0, "the load's number of shards (N of their --shard I/N)")
	cmd.Flags().DurationVar(&lead, "start-lead", 20*time.Second, "if this process arrives first: how far ahead the load starts, so that every shard is ready")
	return cmd
}
