package main

import (
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/cobra"
)

func newLeaderKillCmd() *cobra.Command {
	var (
		rf      runFlags
		killAt  time.Duration
		restart time.Duration
	)
	cmd := &cobra.Command{
		Use:   "leader-kill",
		Short: "SIGKILL the broker leading the most partitions mid-load, restart it, verify",
		Long: `leader-kill runs the leader-kill cell of public broker reports, scaled to
this run: a paced load; at --kill-at, SIGKILL of the broker that leads the
most partitions of the topic (looked up at that moment); after
--restart-after, the same node started again on the same data dir; the load
stays on to the end; then every acked message is read back.

It reports acked messages lost, the longest interval without acks, for each
partition the time from the kill to its first ack, when the killed server
answered as a broker again, when every replica was back in sync, and a kill
proof (old and new PID, data dir inode, survivors' PIDs, restarts).`,
		Example: `  ackcheck cluster kafka up --dir /tmp/kafka
  ackcheck leader-kill --cluster-dir /tmp/kafka --rate 1000 --duration 90s --kill-at 30s --out runs/lk`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.applyScenario(cmd, "the cluster whose leader is killed (`ackcheck cluster <broker> up --dir D`)", "kill-at", &killAt); err != nil {
				return err
			}
			sc := scenarios.LeaderKill{Topic: rf.topic.Name, KillAt: killAt, RestartAfter: restart}
			if err := sc.Validate(rf.lc.Duration); err != nil {
				return err
			}
			cfg, d, err := rf.config(cmd, sc.Steps())
			if err != nil {
				return err
			}
			defer d.Close()
			defer rf.release()
			name, expect := sc.Describe(rf.profile, d)
			fmt.Fprintf(cmd.OutOrStdout(), "scenario %s: %s\n", name, expect)
			res, err := runner.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return report(cmd, res, rf.out, rf.cf.junit)
		},
	}
	rf.register(cmd)
	cmd.Flags().DurationVar(&killAt, "kill-at", 0, "when the leader is killed, after the load starts (default: a third of --duration)")
	cmd.Flags().DurationVar(&restart, "restart-after", 10*time.Second, "how long the killed node stays down")
	return cmd
}
