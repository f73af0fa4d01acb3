package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/brokers"
)

// toy is a fifth broker, as small as a broker can be: a profile with one
// flag, and a local cluster of one node that runs nothing. It is written
// here, in a test file, and registered only by adding it to a list:
// nothing else of ackcheck knows it.
type toy struct{}

func (toy) Name() string            { return "toy" }
func (toy) AddressFlag() string     { return "toy-servers" }
func (toy) NewFlags() drivers.Flags { return &toyFlags{} }
func (toy) Expect(drivers.Scenario, drivers.Driver) (string, string) {
	return "", "the toy forgets nothing"
}
func (toy) Durability() (drivers.Durability, bool) { return drivers.Durability{}, false }
func (toy) ConfigFsync() *drivers.ConfigEdit       { return nil }
func (toy) MaxMessageSize() int                    { return 1 << 10 }
func (toy) Launcher() cluster.Launcher             { return toyLauncher{} }

type toyFlags struct{ servers string }

func (f *toyFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.servers, "toy-servers", "", "toy servers")
}
func (f *toyFlags) Open(*pflag.FlagSet, json.RawMessage) (drivers.Driver, any, error) {
	return nil, nil, errors.New("the toy has no driver")
}

type toyLauncher struct{}

func (toyLauncher) Kind() string                              { return "toy" }
func (toyLauncher) Doc() (string, string)                     { return "A toy cluster", "It runs nothing." }
func (toyLauncher) NewFlags() cluster.LaunchFlags             { return toyLaunchFlags{} }
func (toyLaunchFlags) Register(*pflag.FlagSet)                {}
func (toyLaunchFlags) Open(dir string) (cluster.Local, error) { return &toyCluster{dir: dir}, nil }
func (toyLaunchFlags) AfterUp(context.Context, *pflag.FlagSet, cluster.Local, io.Writer) error {
	return nil
}

type toyLaunchFlags struct{}

// toyCluster is one node that is up once cluster.json says so.
type toyCluster struct{ dir string }

func (c *toyCluster) Dir() string          { return c.dir }
func (c *toyCluster) Nodes() []int32       { return []int32{1} }
func (c *toyCluster) Grace() time.Duration { return time.Second }
func (c *toyCluster) Up(context.Context) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	return cluster.WriteFileDurable(filepath.Join(c.dir, "cluster.json"), []byte(`{"kind":"toy"}`), 0o644, nil)
}
func (c *toyCluster) Down(context.Context) error                           { return nil }
func (c *toyCluster) StartNode(context.Context, int32) error               { return nil }
func (c *toyCluster) StopNode(context.Context, int32, time.Duration) error { return nil }
func (c *toyCluster) PID(int32) (int, error)                               { return 0, nil }
func (c *toyCluster) Signal(int32, syscall.Signal) (int, error)            { return 0, errors.New("nothing runs") }
func (c *toyCluster) DataDirInode(int32) (uint64, error)                   { return 0, nil }
func (c *toyCluster) LoseUnsynced(context.Context, int32) (string, error) {
	return "", errors.New("no lazyfs")
}
func (c *toyCluster) CanLoseUnsynced(int32) error { return errors.New("no lazyfs") }
func (c *toyCluster) Health(context.Context) []cluster.NodeStatus {
	return []cluster.NodeStatus{{ID: 1, Healthy: true, Endpoints: []cluster.Endpoint{{Name: "client", Addr: "toy://1"}}}}
}
func (c *toyCluster) ClientFlags() []cluster.Flag {
	return []cluster.Flag{{Name: "toy-servers", Value: "toy://1"}}
}

// A fifth broker is its directory plus one line in brokers.All: given a
// list that holds the toy, the command line lists it as a driver, gives it
// a cluster command whose up, status and down work, finds its profile by
// name and its local cluster by the kind in cluster.json, and knows its
// flag. The command line's own list is brokers.All, and without the toy
// none of this knows it.
func TestFifthBrokerIsOneLineInTheList(t *testing.T) {
	withToy := append(brokerList(brokers.All()), toy{})

	if got := withToy.names(); !slices.Contains(got, "toy") {
		t.Errorf("drivers %v: no toy", got)
	}
	if p, err := withToy.named("TOY"); err != nil || p.Name() != "toy" {
		t.Errorf("profile lookup: %v, %v", p, err)
	}
	if o := withToy.flagOwners()["toy-servers"]; o != "toy" {
		t.Errorf("--toy-servers belongs to %q", o)
	}

	// The cluster commands: up, status, down, and the run flags up prints.
	dir := filepath.Join(t.TempDir(), "toy")
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		root := &cobra.Command{Use: "ackcheck", SilenceUsage: true, SilenceErrors: true}
		root.SetOut(&out)
		root.SetErr(&out)
		root.AddCommand(newClusterCmdOf(withToy))
		root.SetArgs(args)
		if err := root.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if out := run("cluster", "--help"); !strings.Contains(out, "toy") {
		t.Errorf("cluster --help lists no toy:\n%s", out)
	}
	if out := run("cluster", "toy", "up", "--dir", dir); !strings.Contains(out, "ready: --driver toy --toy-servers toy://1") {
		t.Errorf("cluster toy up:\n%s", out)
	}
	if out := run("cluster", "toy", "status", "--dir", dir); !strings.Contains(out, "toy://1") {
		t.Errorf("cluster toy status:\n%s", out)
	}
	run("cluster", "toy", "down", "--dir", dir)

	// --cluster-dir finds the toy's cluster and its driver by the kind.
	if c, name, err := withToy.openLocal(dir); err != nil || name != "toy" || c.Dir() != dir {
		t.Errorf("openLocal: %v %q %v", c, name, err)
	}

	// Quiet: the command line's own list is brokers.All, which holds no toy.
	if got, want := profiles().names(), brokerList(brokers.All()).names(); !slices.Equal(got, want) {
		t.Errorf("the command line's drivers %v, brokers.All %v", got, want)
	}
	if slices.Contains(profileNames(), "toy") {
		t.Error("the command line knows the toy without being given it")
	}
	if _, err := profileNamed("toy"); err == nil {
		t.Error("--driver toy found without the toy in the list")
	}
	if _, _, err := openLocal(dir); err == nil || !strings.Contains(err.Error(), `holds a "toy" cluster, which this ackcheck does not know`) {
		t.Errorf("openLocal without the toy: %v", err)
	}
	if c := newClusterCmd(); slices.ContainsFunc(c.Commands(), func(c *cobra.Command) bool { return c.Name() == "toy" }) {
		t.Error("ackcheck cluster has a toy command without the toy in the list")
	}
}
