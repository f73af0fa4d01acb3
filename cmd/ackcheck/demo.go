package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// demoOptions are the demo's few settings; everything else is the
// built-in leader kill's.
type demoOptions struct {
	embedded bool
	dir      string
	basePort int
	out      string
	duration time.Duration
	rate     float64
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A leader kill on a local 3-node Kafka in about a minute, with the verdict and the report",
		Long: `demo shows what ackcheck does, on this machine, with nothing to set up:
a local 3-node Apache Kafka 4.3.1 (the one demo started before, or a new
one in ackcheck's cache directory; the first start fetches the jars with
Maven), then the built-in leader kill (ackcheck scenario show
kafka/leader-kill) for --duration: a paced load, SIGKILL of the broker
leading the most partitions at a third of it, a restart 10 s later, every
acked message read back. It prints the verdict, the recovery figures and
the report's path, then stops the nodes it started.

Without Java or Maven it says what to install. --embedded runs the same
pipeline on an in-process broker (franz-go's kfake): a demonstration of
the tool, not a test of a broker, and labelled so in the output and the
report.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				o.out = filepath.Join("ackcheck-demo", time.Now().Format("20060102-150405"))
			}
			if o.embedded {
				return runEmbeddedDemo(cmd, o)
			}
			return runLocalDemo(cmd, o)
		},
	}
	cmd.Flags().BoolVar(&o.embedded, "embedded", false, "run on an in-process broker (kfake) instead of a local Kafka: a demonstration of the tool, not a test of a broker")
	cmd.Flags().StringVar(&o.dir, "dir", "", "the demo cluster's directory (default: demo-kafka in ackcheck's cache directory)")
	cmd.Flags().IntVar(&o.basePort, "base-port", 29491, "first port of the demo cluster's nodes (a cluster already in --dir keeps its own)")
	cmd.Flags().StringVar(&o.out, "out", "", "run directory (default: ackcheck-demo/<date-time>)")
	cmd.Flags().DurationVar(&o.duration, "duration", load.Defaults().Duration, "how long the load runs; the kill comes at a third of it")
	cmd.Flags().Float64Var(&o.rate, "rate", load.Defaults().Rate, "messages per second")
	return cmd
}

// demoBroker is the broker the demo runs: the first of brokers whose local
// cluster can be a demo's.
func demoBroker(brokers brokerList) (drivers.Profile, cluster.Demo, error) {
	for _, p := range brokers {
		if l, ok := launcherOf(p); ok {
			if d, ok := l.(cluster.Demo); ok {
				return p, d, nil
			}
		}
	}
	return nil, nil, errors.New("no broker of this ackcheck has a local cluster for the demo")
}

func runLocalDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	p, l, err := demoBroker(profiles())
	if err != nil {
		return err
	}
	if missing, install := l.Missing(); len(missing) > 0 {
		return fmt.Errorf("a local %s needs %s: install them with `%s`, or run `ackcheck demo --embedded` (an in-process broker: a demonstration of the tool, not a test of a broker)", p.Name(), strings.Join(missing, " and "), install)
	}
	if o.dir == "" {
		o.dir = filepath.Join(cacheDir(), "demo-"+p.Name())
	}
	c, err := l.OpenDemo(o.dir, o.basePort)
	if err != nil {
		return err
	}
	started := false
	for _, st := range c.Health(cmd.Context()) {
		if st.PID == 0 {
			started = true
		}
	}
	if started {
		fmt.Fprintf(out, "starting a local %d-node %s in %s (the first time fetches what it runs: a few minutes) ...\n", len(c.Nodes()), l.Version(), o.dir)
		if err := c.Up(cmd.Context()); err != nil {
			c.Down(context.WithoutCancel(cmd.Context()))
			return fmt.Errorf("start the demo's %s: %w", p.Name(), err)
		}
		defer func() {
			fmt.Fprintf(out, "stopping the %s nodes the demo started (the cluster stays in %s for the next demo) ...\n", l.Version(), o.dir)
			if err := c.Down(context.WithoutCancel(cmd.Context())); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "could not stop the demo's %s: %v; run `ackcheck cluster %s down --dir %s`\n", p.Name(), err, l.Kind(), o.dir)
			}
		}()
	} else {
		fmt.Fprintf(out, "using the %s the demo started before in %s (left running, as it was)\n", p.Name(), o.dir)
	}
	// The demo is the built-in leader kill, run from its scenario file
	// with the demo's length: what `ackcheck leader-kill -f` does.
	sc, err := scenarioFileOf(builtinScenario{command: "leader-kill", driver: p.Name()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	file := o.out + ".scenario.yaml"
	if err := os.WriteFile(file, sc, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "running the built-in leader kill (%s) for %s at %.0f msg/s ...\n", file, drivers.HumanDuration(o.duration), o.rate)
	root := newRoot(out, cmd.ErrOrStderr())
	root.SetArgs([]string{"leader-kill", "-f", file, "--cluster-dir", o.dir, "--out", o.out,
		"--duration", o.duration.String(), "--kill-at", (o.duration / 3).String(), "--rate", fmt.Sprint(o.rate)})
	return root.ExecuteContext(cmd.Context())
}

// cacheDir is ackcheck's cache directory.
func cacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ackcheck")
	}
	return filepath.Join(os.TempDir(), "ackcheck-cache")
}

// embeddedLabel marks every output of an embedded demo.
const embeddedLabel = "EMBEDDED DEMONSTRATION: an in-process broker played the part of a real one; this shows what ackcheck does, it tests no broker"

// embeddedBroker is the broker an embedded demo runs: the first of
// brokers that can run inside this process.
func embeddedBroker(brokers brokerList) (drivers.Profile, drivers.Embedder, error) {
	for _, p := range brokers {
		if e, ok := p.(drivers.Embedder); ok {
			return p, e, nil
		}
	}
	return nil, nil, errors.New("no broker of this ackcheck can run inside it")
}

func runEmbeddedDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	if _, l, err := demoBroker(profiles()); err == nil {
		if missing, install := l.Missing(); len(missing) > 0 {
			fmt.Fprintf(out, "no local %s here (missing %s; `%s` to run one)\n", l.Kind(), strings.Join(missing, " and "), install)
		}
	}
	fmt.Fprintln(out, embeddedLabel)
	p, e, err := embeddedBroker(profiles())
	if err != nil {
		return err
	}
	emb, err := e.Embed(3)
	if err != nil {
		return err
	}
	defer emb.Close()
	fmt.Fprintf(out, "broker: %s, 3 brokers playing %s\n", emb.Where(), p.Name())
	nodes, ok := emb.(faults.Nodes)
	if !ok {
		return fmt.Errorf("the in-process %s has no nodes that faults can act on", p.Name())
	}
	// The driver as its flags make it, with the brokers' addresses.
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	df := p.NewFlags()
	df.Register(fs)
	if err := fs.Set(p.AddressFlag(), strings.Join(emb.Addrs(), ",")); err != nil {
		return err
	}
	d, settings, err := df.Open(fs, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	topic := "ackcheck"
	sc := scenarios.LeaderKill{Topic: topic, KillAt: o.duration / 3, RestartAfter: 10 * time.Second}
	if err := sc.Validate(o.duration); err != nil {
		return err
	}
	name, expect := sc.Describe(p, d)
	fmt.Fprintf(out, "scenario %s: %s\n", name, expect)
	cfg := runner.Config{
		Out: o.out, Driver: d, DriverSettings: settings,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 16, ReplicationFactor: 3},
		Load:   load.Config{Rate: o.rate, Duration: o.duration, MessageSize: load.Defaults().MessageSize, LiveRead: true},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Progress: out, ProgressEvery: 5 * time.Second, Live: isTerminal(os.Stdout),
		Faults: &runner.FaultPlan{Nodes: nodes, Steps: sc.Steps(), RecoveryTimeout: 30 * time.Second,
			Expect: faults.ExpectFrom(p, d),
			Notes:  []string{embeddedLabel + ": " + emb.Where()}},
		Abort: abortOf(cmd.Context()),
	}
	res, err := runner.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	err = report(cmd, res, o.out, "")
	fmt.Fprintln(out, embeddedLabel)
	return err
}
