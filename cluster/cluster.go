// Package cluster is what every broker's local test cluster is built
// from: the interfaces a launcher implements (Launcher, Local, FsyncSwitch,
// Demo) and that `ackcheck cluster <broker>` and the faults drive, and the
// generic machinery under them. Each broker's launcher lives in its own
// directory (drivers/<broker>/cluster.go); this package names no broker.
//
// A cluster lives in one directory, with a cluster.json that records its
// kind (Kind) and settings.
//
// Nodes run detached (their own session, StartDetached), so they outlive
// the ackcheck command that started them. Stop and Down only ever signal a
// PID read from a node's pid file, and only after checking that the
// process's command line still holds a marker that names that node's own
// files (PIDFrom): a stale pid file never stops somebody else's process.
//
// With LazyFS, each data dir is a lazyfs mount (Mount), for power losses.
//
// Every file and directory a launcher writes for a broker is durable
// (fsynced with its directory) before the cluster counts as up, and so is
// each rewrite of a setting: a power loss takes only what the broker did
// not fsync (WriteFileDurable, MkdirAllDurable, SyncTree).
package cluster

import (
	"context"
	"encoding/json"
	"io"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// Local is a test cluster ackcheck started on this machine: what `ackcheck
// cluster <kind> up|down|status|start|stop` drives, what faults act on
// (faults.Local wraps it), and what a run reaches it through.
type Local interface {
	Dir() string
	// Nodes lists the node IDs as the broker numbers them.
	Nodes() []int32
	// Up starts every node that does not run (creating the cluster at the
	// first call) and returns once every node answers.
	Up(ctx context.Context) error
	// Down stops exactly the processes Up started.
	Down(ctx context.Context) error
	StartNode(ctx context.Context, id int32) error
	StopNode(ctx context.Context, id int32, grace time.Duration) error
	// Grace is how long a clean stop waits before SIGKILL.
	Grace() time.Duration
	PID(id int32) (int, error)
	Signal(id int32, sig syscall.Signal) (int, error)
	DataDirInode(id int32) (uint64, error)
	LoseUnsynced(ctx context.Context, id int32) (string, error)
	CanLoseUnsynced(id int32) error
	// Health reports each node: its process, its addresses, and whether
	// it answers.
	Health(ctx context.Context) []NodeStatus
	// ClientFlags are the driver flags that reach this cluster, in the
	// order a person would type them (--brokers 127.0.0.1:29091,...).
	ClientFlags() []Flag
}

// Flag is a command-line flag and its value.
type Flag struct{ Name, Value string }

// NodeStatus is one node as Health sees it.
type NodeStatus struct {
	ID  int32 `json:"id"`
	PID int   `json:"pid"`
	// Endpoints are the node's addresses, named (client, controller,
	// monitor, admin), in display order.
	Endpoints []Endpoint `json:"endpoints"`
	Healthy   bool       `json:"healthy"`
	// Health says why the node is not healthy.
	Health string `json:"health,omitempty"`
	// LazyFS is set when the node's data dir is meant to be on lazyfs;
	// LazyFSPID is its mount process, 0 when not mounted.
	LazyFS    bool `json:"lazyfs,omitempty"`
	LazyFSPID int  `json:"lazyfs_pid,omitempty"`
}

// Endpoint is one named address of a node.
type Endpoint struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// FsyncSwitch is implemented by a local cluster whose servers have a
// server-wide fsync-before-ack setting that a running server does not
// change on reload: it is switched by a clean restart of every node.
type FsyncSwitch interface {
	// FsyncKnob names the setting, its values and the `cluster <kind>
	// up` flag that sets it: the same for every cluster of the kind.
	FsyncKnob() FsyncKnob
	FsyncOn() bool
	SetFsync(ctx context.Context, on bool) error
}

// FsyncKnob is a server-wide fsync setting (FsyncSwitch) as people see
// it: in progress lines, and in the command that sets it by hand.
type FsyncKnob struct {
	// Setting names it as the broker does (jetstream sync_interval).
	Setting string
	// Flag is the `cluster <kind> up` flag that sets it (sync); Off and
	// On are that flag's values for fsync off and on (default, always),
	// which Value says.
	Flag    string
	Off, On string
	// How is what switching it takes (a clean restart of every node).
	How string
}

// Value is the knob's value for fsync on or off.
func (k FsyncKnob) Value(on bool) string {
	if on {
		return k.On
	}
	return k.Off
}

// Flags are the `cluster <kind> up` flags that set the knob to on or off.
func (k FsyncKnob) Flags(on bool) string { return "--" + k.Flag + "=" + k.Value(on) }

// Launcher is one broker's kind of local cluster.
type Launcher interface {
	// Kind is the broker's name, as cluster.json records it and --driver
	// takes it.
	Kind() string
	// Doc is the cluster command's help: one line, and the rest.
	Doc() (short, long string)
	// NewFlags returns a fresh, unregistered set of the cluster command's
	// own flags (ports, heap, lazyfs, fsync settings).
	NewFlags() LaunchFlags
}

// LaunchFlags are a launcher's flags bound to one command.
type LaunchFlags interface {
	Register(fs *pflag.FlagSet)
	// Open returns the cluster in dir (which may not exist yet) with the
	// flags' options; one that exists keeps what it recorded.
	Open(dir string) (Local, error)
	// AfterUp applies the settings given on fs that an existing cluster
	// changes by a restart (nats up --sync always).
	AfterUp(ctx context.Context, fs *pflag.FlagSet, c Local, progress io.Writer) error
}

// Demo is implemented by a launcher whose cluster `ackcheck demo` can
// start on this machine.
type Demo interface {
	Launcher
	// Missing names the tools this machine lacks to run the cluster, each
	// with the package that provides it; empty when none is missing.
	// Install is the command that installs them.
	Missing() (missing []string, install string)
	// OpenDemo returns the demo's cluster in dir (which may not exist yet),
	// its first node on basePort; one that exists keeps its own ports.
	OpenDemo(dir string, basePort int) (Local, error)
	// Version names what the cluster runs ("Apache Kafka 4.3.1").
	Version() string
}

// Provider is implemented by a broker's profile (drivers.Profile) when the
// broker has a local test cluster.
type Provider interface {
	Launcher() Launcher
}

// Unrecorded is implemented by the one launcher whose clusters were made
// before cluster.json recorded a kind: a cluster.json without one is that
// launcher's (Kind returns KindUnrecorded for it).
type Unrecorded interface {
	Launcher
	OpensUnrecorded()
}

// KindUnrecorded is Kind's answer for a cluster.json that records no kind.
const KindUnrecorded = "(unrecorded)"

// Kind reads which kind of local cluster a directory holds, "" when it
// holds none, KindUnrecorded when its cluster.json does not say.
func Kind(dir string) string {
	_, data, err := ReadClusterJSON(dir)
	if err != nil || data == nil {
		return ""
	}
	var k struct {
		Kind string `json:"kind"`
	}
	json.Unmarshal(data, &k)
	if k.Kind == "" {
		return KindUnrecorded
	}
	return k.Kind
}

// Opens reports whether l is the launcher of a cluster of kind (as Kind
// read it).
func Opens(l Launcher, kind string) bool {
	if kind == KindUnrecorded {
		_, ok := l.(Unrecorded)
		return ok
	}
	return l.Kind() == kind
}
