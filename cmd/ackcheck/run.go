package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/metrics"
	reportpkg "github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

type checkFlags struct {
	noDuplicates bool
	ordered      bool
	readIdle     time.Duration
	maxNoAck     time.Duration
	maxReady     time.Duration
	maxInSync    time.Duration
	junit        string
	listMax      int
}

func (c *checkFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.noDuplicates, "no-duplicates", false, "fail the verdict on any duplicate (for idempotent producers)")
	cmd.Flags().BoolVar(&c.ordered, "ordered", false, "fail the verdict on any reordering within a partition")
	cmd.Flags().DurationVar(&c.readIdle, "read-idle-timeout", 60*time.Second, "give up reading back a partition that makes no progress for this long")
	cmd.Flags().Var(deadline{&c.maxNoAck}, "max-no-ack", "deadline: fail if acks stop for longer than this (none: no deadline; at verify and report, none drops the run's)")
	cmd.Flags().Var(deadline{&c.maxReady}, "max-ready", "deadline: fail if a node taken away by a fault answers again later than this after it (none: no deadline)")
	cmd.Flags().Var(deadline{&c.maxInSync}, "max-in-sync", "deadline: fail if replicas are not all in sync this long after a fault (none: no deadline)")
	cmd.Flags().IntVar(&c.listMax, "list-max", 0, "list at most this many messages in each of lost.jsonl, duplicates.jsonl and reordered.jsonl in the run directory (0: all; a capped list says so)")
	cmd.Flags().StringVar(&c.junit, "junit", "", "also write the checks as JUnit XML to this file, for CI systems")
}

func (c *checkFlags) options() verifier.Options {
	return verifier.Options{NoDuplicates: c.noDuplicates, Ordered: c.ordered,
		MaxNoAck: c.maxNoAck, MaxReady: c.maxReady, MaxInSync: c.maxInSync, ListMax: c.listMax}
}

// rejudge is the options a re-read (command: verify, report) judges the
// run of s by: the run's own checks, except those given on this command
// line. Each change, and checks that are unknown, is printed.
func (c *checkFlags) rejudge(cmd *cobra.Command, s runner.Settings, command string) verifier.Options {
	o := verifier.Rejudge(s.Checks, c.options(), cmd.Flags().Changed, command)
	for _, ch := range o.Changes {
		fmt.Fprintf(cmd.OutOrStdout(), "note: %s\n", ch)
	}
	return o
}

// runFlags are the flags of every command that runs a load.
type runFlags struct {
	driverName    string
	kf            driverFlags
	cf            checkFlags
	topic         drivers.TopicSpec
	topicCfg      map[string]string
	lc            load.Config
	out           string
	noVerify      bool
	noLiveRead    bool
	progress      time.Duration
	clusterDir    string
	clusterFile   string
	acceptUnknown bool
	fsync         string
	recovery      time.Duration
	faultSeed     int64
	file          string
	metricsAddr   string
	metricsLinger time.Duration
	workload      string
	partial       bool
	group         load.GroupConfig

	// Set by config: the cluster faults act on (nil: none), the driver's
	// profile, and release, which closes what config opened (the
	// cluster's connections, the metrics server).
	opened  *openedNodes
	profile drivers.Profile
	release func()
}

func (r *runFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&r.driverName, "driver", profileNames()[0], "broker driver: "+strings.Join(profileNames(), ", ")+"; unless given, the broker of --cluster-dir or --cluster-file")
	r.kf.register(f)
	r.cf.register(cmd)
	f.StringVar(&r.topic.Name, "topic", "ackcheck", "topic to write; created if missing, used as it is if it exists")
	f.IntVar(&r.topic.Partitions, "partitions", 16, "partitions of a topic ackcheck creates, 1 to the driver's limit ("+partitionLimits()+"); a topic that exists keeps its own")
	f.IntVar(&r.topic.ReplicationFactor, "replication-factor", 3, "replication factor of a topic ackcheck creates")
	f.StringToStringVar(&r.topicCfg, "topic-config", nil, "topic configs for a topic ackcheck creates, k=v[,k=v]")
	d := load.Defaults() // the load's defaults have one home
	f.Float64Var(&r.lc.Rate, "rate", d.Rate, "offered load, messages per second (open loop: a slow broker does not lower it)")
	f.DurationVar(&r.lc.Duration, "duration", d.Duration, "how long the load is scheduled")
	f.IntVar(&r.lc.MessageSize, "message-size", d.MessageSize, "bytes per message value, ID and checksum included; at most the driver's limit (kafka 999000, pulsar 5177344, nats 1044480, queen 1048576), and max-in-flight x size must fit in memory")
	f.IntVar(&r.lc.Keys, "keys", 0, "spread messages over this many keys (0: round-robin over partitions, no key)")
	f.Var(placementFlag{&r.lc.Placement}, "placement", "where unkeyed messages go: round-robin (message i on partition i mod P) or batch:N (N consecutive messages of a producer to one partition, then the next, in turn over all partitions)")
	f.IntVar(&r.lc.Producers, "producers", d.Producers, "independent producers sharing the rate")
	f.IntVar(&r.lc.MaxInFlight, "max-in-flight", d.MaxInFlight, "sends awaiting an outcome at most; a send due beyond it is shed and counted")
	f.StringVar(&r.out, "out", "", "run directory (created): ledger, run.json, result.json")
	f.BoolVar(&r.noVerify, "no-verify", false, "stop after the load; verify later with: ackcheck verify --out DIR")
	f.BoolVar(&r.noLiveRead, "no-e2e", false, "do not run the consumer that measures end-to-end latency during the load")
	f.DurationVar(&r.progress, "progress-interval", 0, "progress line interval, at least 100ms (default 1s on a terminal, 10s otherwise)")
	f.StringVar(&r.clusterDir, "cluster-dir", "", "directory of a local cluster (made by: ackcheck cluster "+strings.Join(profileNames(), "|")+" up) whose processes faults act on; its broker is the default --driver")
	f.StringVar(&r.clusterFile, "cluster-file", "", "YAML file describing the nodes faults act on, locally or over SSH (see README)")
	f.BoolVar(&r.acceptUnknown, "accept-unknown-host-keys", false, "accept SSH host keys that known_hosts lacks (never changed ones); the report states it")
	f.StringVar(&r.fsync, "fsync", "", "on or off: switch the topic's fsync-before-ack for the run (Kafka flush.messages), put back afterwards")
	f.Int64Var(&r.faultSeed, "fault-seed", 0, "seed of the file faults' choices (files, offsets, bits, cuts): the same seed and schedule change the same bytes; 0 picks one from the clock, recorded in each fault's record")
	f.DurationVar(&r.recovery, "recovery-timeout", 120*time.Second, "how long after the load ackcheck keeps measuring recovery from faults")
	f.StringVar(&r.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics during the run (sent, acked, failed, in flight, latency, seconds since the last ack, faults in force)")
	f.DurationVar(&r.metricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving this long after the verdict (ackcheck_verdict, ackcheck_lost), so that Prometheus scrapes it before ackcheck exits")
	f.StringVar(&r.workload, "workload", "", "OpenMessaging Benchmark workload YAML, read unchanged: partitionsPerTopic, messageSize, producersPerTopic, producerRate, testDurationMinutes, keyDistributor become the flags that mean the same; flags given here override it")
	f.BoolVar(&r.partial, "workload-partial", false, "run a --workload whose fields ackcheck cannot honour (several topics, a backlog, a rate search, ...) without them, naming each")
	f.StringVar(&r.group.Name, "group", "", "run a consumer group of this name beside the load: its deliveries and acknowledged commits are recorded and judged (skipped, commit lost, redelivered)")
	f.IntVar(&r.group.Members, "consumers", 1, "with --group: members of the consumer group")
	f.StringVarP(&r.file, "file", "f", "", "scenario file (YAML): settings keyed by flag name (rate: 1000); flags given here override it; see: ackcheck scenario show")
}

// checkGroup refuses --group on a driver without consumer groups, and
// a group whose settings do not hold.
func (r *runFlags) checkGroup(d drivers.Driver) error {
	if r.group.Name == "" {
		return nil
	}
	if err := r.group.Validate(); err != nil {
		return err
	}
	if _, ok := d.(drivers.GroupConsumer); !ok {
		return fmt.Errorf("--group: the %s driver has no consumer groups yet (kafka, nats and queen have)", d.Name())
	}
	return nil
}

// config validates the flags, connects the driver and returns the run.
// The caller closes the driver.
func (r *runFlags) config(cmd *cobra.Command, steps []faults.Step) (runner.Config, drivers.Driver, error) {
	if r.out == "" {
		return runner.Config{}, nil, fmt.Errorf("--out is required: the run directory for the ledger and result.json")
	}
	if err := r.refuse(cmd); err != nil {
		return runner.Config{}, nil, err
	}
	r.lc.LiveRead = !r.noLiveRead
	r.topic.Configs = r.topicCfg
	var plan *runner.FaultPlan
	var fsync *bool
	switch r.fsync {
	case "":
	case "on", "off":
		v := r.fsync == "on"
		fsync = &v
	default:
		return runner.Config{}, nil, fmt.Errorf("--fsync %q: use on or off", r.fsync)
	}
	// --consumers at its default (1) is harmless without a group: a
	// scenario file written by scenario show or demo carries every setting.
	if r.group.Name == "" && r.group.Members != 1 {
		return runner.Config{}, nil, fmt.Errorf("--consumers %d is the size of a consumer group: give --group too", r.group.Members)
	}
	src := runner.FaultSource{ClusterDir: r.clusterDir, ClusterFile: r.clusterFile}
	opened, err := openNodes(cmd.Context(), src, r.acceptUnknown)
	if err != nil {
		return runner.Config{}, nil, err
	}
	r.opened = opened
	srv, err := r.startMetrics(cmd)
	if err != nil {
		return runner.Config{}, nil, err
	}
	d, public, err := r.openDriver(cmd)
	if err != nil {
		r.release()
		return runner.Config{}, nil, err
	}
	src.Broker = r.profile.Name()
	if err := r.checkGroup(d); err != nil {
		d.Close()
		r.release()
		return runner.Config{}, nil, err
	}
	env := faults.Env{Driver: d, ConfigFsync: r.profile.ConfigFsync(), DataFiles: drivers.DataFilesOf(r.profile), GroupName: r.group.Name}
	if opened != nil {
		env.Nodes = opened.nodes
	}
	check := steps
	if fsync != nil {
		// --fsync is a topic fsync toggle applied before the load.
		check = append(slices.Clip(steps), faults.Step{Action: faults.FsyncOn, Target: faults.Target{Kind: faults.Topic, Topic: r.topic.Name}})
	}
	if err := faults.Preflight(cmd.Context(), env, check); err != nil {
		d.Close()
		r.release()
		return runner.Config{}, nil, err
	}
	if len(steps) > 0 || fsync != nil {
		p := r.profile
		plan = &runner.FaultPlan{Steps: steps, RecoveryTimeout: r.recovery, Fsync: fsync, Source: src, ConfigFsync: env.ConfigFsync,
			DataFiles: env.DataFiles, Seed: r.faultSeed,
			Expect: faults.ExpectFrom(p, d)}
		if opened != nil {
			plan.Nodes, plan.Notes = opened.nodes, opened.notes
			// A cluster file's nodes' logs are read with the broker's
			// own log oracle, when it can read fetched logs.
			if s, ok := opened.nodes.(*faults.Scripted); ok {
				if lr, ok := p.(drivers.LogReader); ok {
					s.ReadLogsWith(lr)
				}
			}
		}
	}
	live := isTerminal(os.Stdout)
	if r.progress == 0 {
		r.progress = 10 * time.Second
		if live {
			r.progress = time.Second
		}
	}
	cfg := runner.Config{
		Out: r.out, Driver: d, DriverSettings: public, Topic: r.topic, Load: r.lc,
		Verify: !r.noVerify, Check: r.cf.options(), ReadIdleTimeout: r.cf.readIdle,
		Progress: cmd.OutOrStdout(), ProgressEvery: r.progress, Live: live, Faults: plan,
		Abort: abortOf(cmd.Context()),
	}
	if r.group.Name != "" {
		g := r.group
		cfg.Group = &g
	}
	if srv != nil {
		cfg.Observer = srv
	}
	return cfg, d, nil
}

// startMetrics serves --metrics-addr, if given, and sets r.release to
// close what config opened: the cluster's connections and the server. On
// an error it has released them.
func (r *runFlags) startMetrics(cmd *cobra.Command) (*metrics.Server, error) {
	var srv *metrics.Server
	ctx := cmd.Context()
	r.release = func() {
		if r.opened != nil {
			r.opened.close()
		}
		if srv != nil {
			if r.metricsLinger > 0 && srv.Judged() {
				fmt.Fprintf(cmd.OutOrStdout(), "metrics: serving the verdict at http://%s/metrics for %s (--metrics-linger)\n", srv.Addr(), r.metricsLinger)
				select {
				case <-time.After(r.metricsLinger):
				case <-ctx.Done():
				}
			}
			srv.Close()
		}
	}
	if r.metricsAddr == "" {
		return nil, nil
	}
	var err error
	if srv, err = metrics.Listen(r.metricsAddr); err != nil {
		r.release()
		return nil, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "metrics: http://%s/metrics\n", srv.Addr())
	return srv, nil
}

// openDriver picks the run's driver (--driver, or the broker the cluster
// runs), fills the driver flags the user did not give from the cluster's
// own addresses, and connects it.
func (r *runFlags) openDriver(cmd *cobra.Command) (drivers.Driver, any, error) {
	fs := cmd.Flags()
	name := r.driverName
	if o := r.opened; o != nil && o.broker != "" {
		switch {
		case !fs.Changed("driver"):
			name = o.broker
		case !strings.EqualFold(name, o.broker):
			return nil, nil, fmt.Errorf("--driver %s, but the cluster faults act on runs %s: give --driver %s, or the other cluster", name, o.broker, o.broker)
		}
	}
	p, err := profileNamed(name)
	if err != nil {
		return nil, nil, err
	}
	r.profile = p
	if err := checkMessageSize(p, r.lc.MessageSize); err != nil {
		return nil, nil, err
	}
	if err := checkPartitions(p, r.topic.Partitions); err != nil {
		return nil, nil, err
	}
	// The user's own flags first: the cluster's addresses, set below, are
	// the right driver's by construction.
	if err := flagsBelongTo(p.Name(), fs); err != nil {
		return nil, nil, err
	}
	if r.opened != nil {
		for _, f := range r.opened.clientFlags(p.AddressFlag()) {
			if !fs.Changed(f.Name) {
				if err := fs.Set(f.Name, f.Value); err != nil {
					return nil, nil, fmt.Errorf("the cluster's --%s %s: %w", f.Name, f.Value, err)
				}
			}
		}
	}
	return r.kf.byDriver[p.Name()].Open(fs, nil)
}

// applyFiles sets, from --file and then --workload, the flags the
// command line did not give.
func (r *runFlags) applyFiles(cmd *cobra.Command) error {
	if err := applyScenarioFile(cmd, r.file); err != nil {
		return err
	}
	if r.workload != "" {
		line, err := applyWorkload(cmd.Flags(), r.workload, r.partial)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), line)
	}
	return nil
}

// applyScenario is the start of a built-in scenario's command: the
// files applied (applyFiles), a cluster required (cluster says which and
// how to start one), and the fault's time *at, unless the flag atFlag
// was given, a third of the way into the load.
func (r *runFlags) applyScenario(cmd *cobra.Command, cluster, atFlag string, at *time.Duration) error {
	if err := r.applyFiles(cmd); err != nil {
		return err
	}
	if r.clusterDir == "" && r.clusterFile == "" {
		return fmt.Errorf("--cluster-dir or --cluster-file is required: %s", cluster)
	}
	if !cmd.Flags().Changed(atFlag) {
		*at = r.lc.Duration / 3
	}
	return nil
}

// refuse is where a run's settings are checked, all of them before any
// broker is touched or file written (issue 24, point 7); only the message
// size's bound waits for the driver to be known (openDriver), still
// before it connects. It refuses values out of bounds (see inputs.go) and
// values the load would otherwise replace with a default or act on
// wrongly: a flag given explicitly as 0 is the user's mistake, not a
// request for the default.
func (r *runFlags) refuse(cmd *cobra.Command) error {
	fs := cmd.Flags()
	given := func(name string) bool { return fs.Changed(name) }
	switch {
	case r.topic.Name == "":
		return fmt.Errorf("--topic is empty: name the topic to write")
	case r.topic.ReplicationFactor < 1:
		return fmt.Errorf("--replication-factor %d: use at least 1", r.topic.ReplicationFactor)
	case r.lc.Keys > 0 && r.lc.Placement.Batch > 1:
		return fmt.Errorf("--placement %s with --keys %d: keys choose the partition; give one or the other", r.lc.Placement, r.lc.Keys)
	}
	// The driver's own limit waits for the driver (openDriver), as the
	// message size's does; none asks for more than the largest.
	if err := checkPartitions(nil, r.topic.Partitions); err != nil {
		return err
	}
	if err := refuseDurations(fs); err != nil {
		return err
	}
	if given("progress-interval") && r.progress < minProgressInterval {
		return fmt.Errorf("--progress-interval %s: use at least %s, or leave the flag out for 1s on a terminal, 10s otherwise", r.progress, minProgressInterval)
	}
	if err := checkOut(r.out); err != nil {
		return err
	}
	if err := checkJunit(r.cf.junit, r.out); err != nil {
		return err
	}
	// The driver's own bound waits for the driver (a cluster's broker),
	// but no driver takes more than the largest, and the memory estimate
	// of a size no driver sends would only mislead.
	if err := checkMessageSize(nil, r.lc.MessageSize); err != nil {
		return err
	}
	// The load's settings, as given (an explicit 0 is refused, not
	// defaulted); the partitions are known once the topic is.
	if err := r.lc.CheckSettings(given); err != nil {
		return err
	}
	if avail, from, ok := availableMemory(); ok {
		if err := checkMemory(r.lc, avail, from); err != nil {
			return err
		}
	}
	return nil
}

func newRunCmd() *cobra.Command {
	var (
		rf       runFlags
		sf       shardFlags
		schedule string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Send a paced load, record every ack, read everything back and judge",
		Example: `  ackcheck run --driver kafka --brokers 127.0.0.1:9092 --topic ackcheck --partitions 16 \
    --replication-factor 3 --rate 5000 --duration 60s --message-size 1024 --acks all --out runs/first

  # with faults on a local cluster:
  ackcheck run --cluster-dir /tmp/kafka --rate 1000 --duration 90s --out runs/kill \
    --fault "at=30s kill most-leaders:ackcheck; at=40s restart"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rf.file != "" {
				if builtin, err := dispatchFile(cmd, rf.file); builtin {
					return err
				}
			}
			if err := rf.applyFiles(cmd); err != nil {
				return err
			}
			steps, err := profiles().readSchedule(schedule, rf.lc.Duration)
			if err != nil {
				return err
			}
			shard, err := sf.config(rf.topic.Name)
			if err != nil {
				return err
			}
			cfg, d, err := rf.config(cmd, steps)
			if err != nil {
				return err
			}
			defer d.Close()
			defer rf.release()
			cfg.Shard = shard
			pendingJUnit(rf.cf.junit, "run")
			res, err := runner.Run(cmd.Context(), cfg)
			if err != nil {
				return noVerdictJUnit(rf.cf.junit, "run", err)
			}
			return report(cmd, res, rf.out, rf.cf.junit)
		},
	}
	rf.register(cmd)
	sf.register(cmd)
	cmd.Flags().StringVar(&schedule, "fault", "", profiles().faultUsage())
	return cmd
}

func newVerifyCmd() *cobra.Command {
	var (
		kf       driverFlags
		cf       checkFlags
		out      string
		shards   []string
		timeline string
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Read an earlier run's topic back and judge it again",
		Long: `verify repeats the read-back and the verdict of an existing run directory:
after ackcheck itself died, after --no-verify, or when the brokers are back.
Connection settings come from the run's run.json; flags given here override
them (the SASL password is never stored: pass it again).

The verdict is judged by the run's own checks (--ordered, --no-duplicates,
--max-no-ack, --max-ready, --max-in-sync, saved in run.json). A check flag
given here replaces the run's; the change is printed and recorded in
result.json (check_changes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required: the directory of the run to verify")
			}
			if timeline != "" && len(shards) == 0 {
				return fmt.Errorf("--fault-timeline is for the merged verdict of a sharded load: give --shard-dir too")
			}
			return judgeWithJUnit(cmd, out, cf.junit, "verify", func() (*verifier.Result, error) {
				if len(shards) > 0 {
					return verifyShards(cmd, out, shardDirs(shards), timeline, &kf, &cf)
				}
				s, err := runner.ReadSettings(out)
				if err != nil {
					return nil, err
				}
				d, _, err := newDriver(s.Driver, cmd.Flags(), &kf, s.DriverSettings)
				if err != nil {
					return nil, err
				}
				defer d.Close()
				return runner.Verify(cmd.Context(), out, d, cf.rejudge(cmd, s, "verify"), cf.readIdle, cmd.OutOrStdout())
			})
		},
	}
	kf.register(cmd.Flags())
	cf.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "run directory of an earlier run; with --shard-dir, the directory of the merged verdict")
	cmd.Flags().StringArrayVar(&shards, "shard-dir", nil, "the run directory (or a glob of them) of each shard of a load run with --shard; repeat it. The topic is read back once and one verdict judges every shard")
	cmd.Flags().StringVar(&timeline, "fault-timeline", "", "with --shard-dir: the directory holding the load's fault timeline ("+runner.TimelineFileName+"), when it is not the --start-dir the shards recorded (a copy of the shared volume, say)")
	return cmd
}

// report prints the verdict, names the files written, writes the JUnit
// file if asked, and turns a failed verdict into exit status 1.
func report(cmd *cobra.Command, res *verifier.Result, out, junit string) error {
	if res == nil {
		return nil
	}
	res.WriteSummary(cmd.OutOrStdout())
	fmt.Fprintf(cmd.OutOrStdout(), "result: %s/result.json, report: %s/report.html (and report.md, publish.hlog, e2e.hlog)\n", out, out)
	if junit != "" {
		data, err := reportpkg.JUnit(res)
		if err != nil {
			return err
		}
		if err := os.WriteFile(junit, data, 0o644); err != nil {
			return fmt.Errorf("write --junit %s: %w", junit, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "junit: %s\n", junit)
	}
	switch res.Verdict {
	case verifier.Pass:
		return nil
	case verifier.Incomplete:
		// No verdict yet: an error (exit 2), not a failure of the broker.
		why := "the read-back did not finish"
		for _, f := range res.Failures {
			if f.Check == verifier.CheckReadBack {
				why = f.Message
			}
		}
		return fmt.Errorf("no verdict (result.json: incomplete): %s", why)
	case verifier.Unproven:
		return fmt.Errorf("no verdict (result.json: unproven): the run's ledger cannot be proven whole: %s", res.Ledger.Reason)
	case verifier.Aborted:
		return fmt.Errorf("no verdict (result.json: aborted): %s", res.Experiment.Why(res.Sent))
	}
	return errVerdictFailed
}

// judgeWithJUnit runs judge (a verify or a report) and reports its
// verdict. --junit is marked pending first, so that a command killed
// before its verdict leaves that, never an earlier verdict's file; one
// that ends without a verdict writes why (noVerdictJUnit).
func judgeWithJUnit(cmd *cobra.Command, out, junit, command string, judge func() (*verifier.Result, error)) error {
	pendingJUnit(junit, command)
	res, err := judge()
	if err != nil {
		return noVerdictJUnit(junit, command, err)
	}
	return report(cmd, res, out, junit)
}

// pendingJUnit writes, when --junit names a file, the errored case of a
// command that has not finished, which its verdict replaces.
func pendingJUnit(path, command string) {
	if path != "" {
		noVerdictJUnit(path, command, fmt.Errorf("the %s has not finished: it was interrupted, or is still running", command))
	}
}

// noVerdictJUnit writes, when --junit names a file, a JUnit suite of one
// errored case saying why command gave no verdict (err), and returns
// err: a JUnit file an earlier verdict left there must not stand for
// this command's.
func noVerdictJUnit(path, command string, err error) error {
	if path == "" || err == nil {
		return err
	}
	data, jerr := reportpkg.Suite("ackcheck "+command, "ackcheck."+command,
		[]reportpkg.Check{{Name: "a verdict was given", Status: reportpkg.Errored, Message: "no verdict: " + err.Error()}})
	if jerr == nil {
		jerr = os.WriteFile(path, data, 0o644)
	}
	if jerr != nil {
		return fmt.Errorf("%w (and --junit %s could not be written: %v)", err, path, jerr)
	}
	return err
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
