package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
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
			return runKafkaDemo(cmd, o)
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

// missingTools names what a real Kafka needs and this machine lacks.
func missingTools() []string {
	var missing []string
	for _, t := range []struct{ bin, pkg string }{{"java", "default-jre-headless"}, {"mvn", "maven"}} {
		if _, err := exec.LookPath(t.bin); err != nil {
			missing = append(missing, t.bin+" (Debian/Ubuntu package "+t.pkg+")")
		}
	}
	return missing
}

func runKafkaDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	if missing := missingTools(); len(missing) > 0 {
		return fmt.Errorf("a local Kafka needs %s: install them with `sudo apt-get install -y default-jre-headless maven`, or run `ackcheck demo --embedded` (an in-process broker: a demonstration of the tool, not a test of a broker)", strings.Join(missing, " and "))
	}
	if o.dir == "" {
		o.dir = filepath.Join(cacheDir(), "demo-kafka")
	}
	k, err := cluster.OpenKafka(cluster.KafkaOptions{Dir: o.dir, BasePort: o.basePort})
	if err != nil {
		return err
	}
	started := false
	for _, st := range k.Health(cmd.Context()) {
		if st.PID == 0 {
			started = true
		}
	}
	if started {
		fmt.Fprintf(out, "starting a local 3-node Kafka 4.3.1 in %s (the first time fetches the jars with Maven: a few minutes) ...\n", o.dir)
		if err := k.Up(cmd.Context()); err != nil {
			k.Down(context.WithoutCancel(cmd.Context()))
			return fmt.Errorf("start the demo's Kafka: %w", err)
		}
		defer func() {
			fmt.Fprintf(out, "stopping the Kafka nodes the demo started (the cluster stays in %s for the next demo) ...\n", o.dir)
			if err := k.Down(context.WithoutCancel(cmd.Context())); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "could not stop the demo's Kafka: %v; run `ackcheck cluster kafka down --dir %s`\n", err, o.dir)
			}
		}()
	} else {
		fmt.Fprintf(out, "using the Kafka the demo started before in %s (left running, as it was)\n", o.dir)
	}
	// The demo is the built-in leader kill, run from its scenario file
	// with the demo's length: what `ackcheck leader-kill -f` does.
	sc, err := scenarioFileOf(builtinScenario{command: "leader-kill", driver: "kafka"})
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
const embeddedLabel = "EMBEDDED DEMONSTRATION: an in-process broker (franz-go's kfake) played Kafka; this shows what ackcheck does, it tests no broker"

func runEmbeddedDemo(cmd *cobra.Command, o demoOptions) error {
	out := cmd.OutOrStdout()
	if missing := missingTools(); len(missing) > 0 {
		fmt.Fprintf(out, "no local Kafka here (missing %s; `sudo apt-get install -y default-jre-headless maven` to run one)\n", strings.Join(missing, " and "))
	}
	fmt.Fprintln(out, embeddedLabel)
	kc, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		return fmt.Errorf("start the in-process broker: %w", err)
	}
	defer kc.Close()
	nodes := newKfakeNodes(kc)
	d, err := kafka.New(kafka.Config{Brokers: kc.ListenAddrs()})
	if err != nil {
		return err
	}
	defer d.Close()
	topic := "ackcheck"
	sc := scenarios.LeaderKill{Topic: topic, KillAt: o.duration / 3, RestartAfter: 10 * time.Second}
	if err := sc.Validate(o.duration); err != nil {
		return err
	}
	name, expect := sc.Describe(kafka.Profile{}, d)
	fmt.Fprintf(out, "scenario %s: %s\n", name, expect)
	cfg := runner.Config{
		Out: o.out, Driver: d, DriverSettings: d.Config(),
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 16, ReplicationFactor: 3},
		Load:   load.Config{Rate: o.rate, Duration: o.duration, MessageSize: load.Defaults().MessageSize, LiveRead: true},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Progress: out, ProgressEvery: 5 * time.Second, Live: isTerminal(os.Stdout),
		Faults: &runner.FaultPlan{Nodes: nodes, Steps: sc.Steps(), RecoveryTimeout: 30 * time.Second,
			Expect: faults.ExpectFrom(kafka.Profile{}, d),
			Notes:  []string{embeddedLabel}},
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

// kfakeNodes are the brokers of an in-process kfake cluster as
// faults.Nodes: a kill removes the broker from the cluster (its listener
// closes and its partitions elect other leaders), a start adds it back
// with the same ID on a new port. The data stays in the one process: a demonstration of the
// pipeline, never a test of durability.
type kfakeNodes struct {
	c     *kfake.Cluster
	mu    sync.Mutex
	ports map[int32]int
	down  map[int32]bool
}

func newKfakeNodes(c *kfake.Cluster) *kfakeNodes {
	n := &kfakeNodes{c: c, ports: map[int32]int{}, down: map[int32]bool{}}
	for i, addr := range c.ListenAddrs() {
		var port int
		fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
		n.ports[int32(i)] = port
	}
	return n
}

var _ faults.Nodes = (*kfakeNodes)(nil)

func (n *kfakeNodes) IDs() []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids := make([]int32, 0, len(n.ports))
	for id := range int32(len(n.ports)) {
		ids = append(ids, id)
	}
	return ids
}

func (n *kfakeNodes) PID(_ context.Context, id int32) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.ports[id]; !ok {
		return 0, fmt.Errorf("no node %d", id)
	}
	if n.down[id] {
		return 0, nil
	}
	return os.Getpid(), nil
}

func (n *kfakeNodes) Signal(_ context.Context, id int32, sig syscall.Signal) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return 0, errors.New("the embedded broker can only be killed and started again")
	}
	if n.down[id] {
		return 0, fmt.Errorf("node %d is not running", id)
	}
	if err := n.c.RemoveNode(id); err != nil {
		return 0, err
	}
	n.down[id] = true
	return os.Getpid(), nil
}

func (n *kfakeNodes) Stop(ctx context.Context, id int32, _ time.Duration) error {
	_, err := n.Signal(ctx, id, syscall.SIGTERM)
	return err
}

func (n *kfakeNodes) Start(_ context.Context, id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.down[id] {
		return nil
	}
	// A new port: kfake keeps serving the removed broker's open
	// connections, and a client that reconnected to the same address
	// would reach the old broker; on a new address every client drops
	// them.
	_, port, err := n.c.AddNode(id, 0)
	if err != nil {
		return err
	}
	n.ports[id] = port
	n.down[id] = false
	return nil
}

func (n *kfakeNodes) DataDirInode(context.Context, int32) (uint64, error) { return 0, nil }

func (n *kfakeNodes) Where() string { return "in-process kfake (embedded demonstration)" }
