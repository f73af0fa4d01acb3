package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

type checkFlags struct {
	noDuplicates bool
	ordered      bool
	readIdle     time.Duration
}

func (c *checkFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.noDuplicates, "no-duplicates", false, "fail the verdict on any duplicate (for idempotent producers)")
	cmd.Flags().BoolVar(&c.ordered, "ordered", false, "fail the verdict on any reordering within a partition")
	cmd.Flags().DurationVar(&c.readIdle, "read-idle-timeout", 60*time.Second, "give up reading back a partition that makes no progress for this long")
}

func (c *checkFlags) options() verifier.Options {
	return verifier.Options{NoDuplicates: c.noDuplicates, Ordered: c.ordered}
}

func newRunCmd() *cobra.Command {
	var (
		driverName string
		kf         kafkaFlags
		cf         checkFlags
		topic      drivers.TopicSpec
		topicCfg   map[string]string
		lc         load.Config
		out        string
		noVerify   bool
		noLiveRead bool
		progress   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Send a paced load, record every ack, read everything back and judge",
		Example: `  ackcheck run --driver kafka --brokers 127.0.0.1:9092 --topic ackcheck --partitions 16 \
    --replication-factor 3 --rate 5000 --duration 60s --message-size 1024 --acks all --out runs/first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required: the run directory for the ledger and result.json")
			}
			lc.LiveRead = !noLiveRead
			probe := lc
			probe.Partitions = []int32{0} // known once the topic is; check the rest now
			if err := probe.Validate(); err != nil {
				return err
			}
			if topic.Partitions < 1 || topic.ReplicationFactor < 1 {
				return fmt.Errorf("--partitions and --replication-factor must be at least 1")
			}
			topic.Configs = topicCfg
			d, public, err := newDriver(driverName, cmd.Flags(), &kf, nil)
			if err != nil {
				return err
			}
			defer d.Close()
			if progress == 0 {
				progress = 10 * time.Second
				if isTerminal(os.Stdout) {
					progress = time.Second
				}
			}
			res, err := runner.Run(cmd.Context(), runner.Config{
				Out: out, Driver: d, DriverSettings: public, Topic: topic, Load: lc,
				Verify: !noVerify, Check: cf.options(), ReadIdleTimeout: cf.readIdle,
				Progress: cmd.OutOrStdout(), ProgressEvery: progress,
			})
			if err != nil {
				return err
			}
			return report(cmd, res, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&driverName, "driver", "kafka", "broker driver: kafka")
	kf.register(f)
	cf.register(cmd)
	f.StringVar(&topic.Name, "topic", "ackcheck", "topic to write; created if missing, used as it is if it exists")
	f.IntVar(&topic.Partitions, "partitions", 16, "partitions of a topic ackcheck creates")
	f.IntVar(&topic.ReplicationFactor, "replication-factor", 3, "replication factor of a topic ackcheck creates")
	f.StringToStringVar(&topicCfg, "topic-config", nil, "topic configs for a topic ackcheck creates, k=v[,k=v]")
	f.Float64Var(&lc.Rate, "rate", 1000, "offered load, messages per second (open loop: a slow broker does not lower it)")
	f.DurationVar(&lc.Duration, "duration", 60*time.Second, "how long the load is scheduled")
	f.IntVar(&lc.MessageSize, "message-size", 1024, "bytes per message value, ID and checksum included")
	f.IntVar(&lc.Keys, "keys", 0, "spread messages over this many keys (0: round-robin over partitions, no key)")
	f.IntVar(&lc.Producers, "producers", 4, "independent producers sharing the rate")
	f.IntVar(&lc.MaxInFlight, "max-in-flight", 100000, "sends awaiting an outcome at most; a send due beyond it is shed and counted")
	f.StringVar(&out, "out", "", "run directory (created): ledger, run.json, result.json")
	f.BoolVar(&noVerify, "no-verify", false, "stop after the load; verify later with `ackcheck verify`")
	f.BoolVar(&noLiveRead, "no-e2e", false, "do not run the consumer that measures end-to-end latency during the load")
	f.DurationVar(&progress, "progress-interval", 0, "progress line interval (default 1s on a terminal, 10s otherwise)")
	return cmd
}

func newVerifyCmd() *cobra.Command {
	var (
		kf  kafkaFlags
		cf  checkFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Read an earlier run's topic back and judge it again",
		Long: `verify repeats the read-back and the verdict of an existing run directory:
after ackcheck itself died, after --no-verify, or when the brokers are back.
Connection settings come from the run's run.json; flags given here override
them (the SASL password is never stored: pass it again).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required: the directory of the run to verify")
			}
			s, err := runner.ReadSettings(out)
			if err != nil {
				return err
			}
			d, _, err := newDriver(s.Driver, cmd.Flags(), &kf, s.DriverSettings)
			if err != nil {
				return err
			}
			defer d.Close()
			res, err := runner.Verify(cmd.Context(), out, d, cf.options(), cf.readIdle, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			return report(cmd, res, out)
		},
	}
	kf.register(cmd.Flags())
	cf.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "run directory of an earlier run")
	return cmd
}

func report(cmd *cobra.Command, res *verifier.Result, out string) error {
	if res == nil {
		return nil
	}
	res.WriteSummary(cmd.OutOrStdout())
	fmt.Fprintf(cmd.OutOrStdout(), "result: %s/result.json\n", out)
	if res.Verdict != verifier.Pass {
		return errVerdictFailed
	}
	return nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
