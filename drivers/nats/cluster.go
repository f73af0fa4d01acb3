package nats

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
)

// Version is the nats-server a local NATS cluster runs, built from the
// Go module proxy.
const Version = "v2.15.2"

// ClusterOptions configure a local NATS JetStream cluster.
//
// Layout of Dir:
//
//	cluster.json         what `up` created (ports, sync setting, lazyfs)
//	node<N>/nats.conf    node N's configuration
//	node<N>/data/        its JetStream store_dir (a lazyfs mount with LazyFS)
//	node<N>/nats.log     its output
//	node<N>/pid          its PID
//
// Node N listens on 127.0.0.1: clients at BasePort+N-1, routes at
// BasePort+100+N-1, monitoring at BasePort+200+N-1. With NetNS, node N runs
// in a network namespace of its own (a netns.Net named after Dir,
// cluster.NetnsPrefix, recorded in cluster.json) and listens on 10.213.0.N:
// clients 4222, routes 6222, monitoring 8222; only the Net's hub reaches
// it, and the driver's --netns (set by ClientFlags) dials from there.
//
// What cluster.json records of them (the JSON names) wins over what is
// given.
type ClusterOptions struct {
	cluster.Options `json:"-"`
	Nodes           int    `json:"nodes"`     // default 3
	BasePort        int    `json:"base_port"` // default 24222
	CacheDir        string `json:"cache_dir"` // where nats-server is built; default ~/.cache/ackcheck
	// SyncAlways sets jetstream { sync_interval: always }: every write is
	// fsynced before it counts. Default: the server's (fsync every 2 min).
	SyncAlways bool `json:"sync_always"`
}

// The ports of every node inside a Net (each node has its own address),
// by their offset from BasePort outside one.
var netnsPorts = map[int]int{0: 4222, 100: 6222, 200: 8222}

const natsKind = "nats"

var natsSpec = cluster.Spec{Kind: natsKind, Name: "NATS cluster", Noun: "cluster",
	Log: "nats.log", Grace: 30 * time.Second, Ready: 2 * time.Minute, PortHint: "another --base-port"}

// natsFile is what <dir>/cluster.json records.
type natsFile struct {
	cluster.Record
	Version string `json:"version"`
	*ClusterOptions
}

// Cluster is a local NATS JetStream cluster. Every process it stops is one it
// started, found by its pid file and its command line.
type Cluster struct {
	cluster.Base
	opts ClusterOptions
}

var _ cluster.FsyncSwitch = (*Cluster)(nil)

// OpenCluster opens the cluster in opts.Dir; what cluster.json recorded wins
// over opts.
func OpenCluster(opts ClusterOptions) (*Cluster, error) {
	n := &Cluster{opts: opts}
	o := &n.opts
	if err := n.Open(n, &o.Options, natsSpec, &natsFile{ClusterOptions: o}); err != nil {
		return nil, err
	}
	o.Nodes, o.BasePort = cluster.Or(o.Nodes, 3), cluster.Or(o.BasePort, 24222)
	o.CacheDir = cluster.Or(o.CacheDir, cluster.DefaultCacheDir())
	if o.Nodes < 1 || o.Nodes > 9 {
		return nil, fmt.Errorf("--nodes %d: give 1 to 9", o.Nodes)
	}
	return n, nil
}

// ProbePort implements cluster.InNetns: the route port, over which the
// servers replicate, the same on every node. 0 without --netns.
func (n *Cluster) ProbePort() int { return n.InNet(netnsPorts[100]) }

// hostPort is node id's address for one of its ports (offset 0 clients,
// 100 routes, 200 monitoring from BasePort; the fixed ports in a Net).
func (n *Cluster) hostPort(id int32, offset int) string {
	port := n.opts.BasePort + offset + int(id) - 1
	if n.Net() != nil {
		port = netnsPorts[offset]
	}
	return net.JoinHostPort(n.Host(id), strconv.Itoa(port))
}

// SyncAlways reports whether the servers fsync every write.
func (n *Cluster) SyncAlways() bool { return n.opts.SyncAlways }

// Nodes implements cluster.Local.
func (n *Cluster) Nodes() []int32 { return cluster.NodeIDs(n.opts.Nodes) }

// Servers are the client URLs, in node order.
func (n *Cluster) Servers() []string { return n.urls("nats://", 0) }

// MonitorURLs are the monitoring endpoints, in node order.
func (n *Cluster) MonitorURLs() []string { return n.urls("http://", 200) }

func (n *Cluster) urls(scheme string, offset int) []string {
	var out []string
	for _, id := range n.Nodes() {
		out = append(out, scheme+n.hostPort(id, offset))
	}
	return out
}

func (n *Cluster) confFile(id int32) string { return filepath.Join(n.NodeDir(id), "nats.conf") }

// Marker implements cluster.Broker: node id's configuration file.
func (n *Cluster) Marker(id int32) string { return "-c\x00" + n.confFile(id) + "\x00" }

// Binary is the nats-server this cluster runs.
func (n *Cluster) Binary() string {
	return filepath.Join(n.opts.CacheDir, "nats-server-"+Version, "nats-server")
}

// Prepare implements cluster.Preparer: it builds nats-server from the Go
// module proxy, once per version.
func (n *Cluster) Prepare(ctx context.Context) error {
	bin := n.Binary()
	if out, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil &&
		strings.Contains(string(out), strings.TrimPrefix(Version, "v")) {
		return nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("go not found: ackcheck builds nats-server from the Go module proxy with `go install`; install Go")
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/nats-server/v2@"+Version)
	cmd.Dir = filepath.Dir(bin) // outside any module: only the version named counts
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build nats-server %s with go install: %w\n%s", Version, err, cluster.Tail(out, 2000))
	}
	return cluster.SyncTree(filepath.Dir(bin)) // go install does not fsync the binary
}

// conf is node id's configuration.
func (n *Cluster) conf(id int32) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "server_name: %q\nlisten: %q\nhttp: %q\n", fmt.Sprintf("n%d", id), n.hostPort(id, 0), n.hostPort(id, 200))
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 268435456\n  max_file_store: 8589934592\n", n.DataDir(id))
	if n.opts.SyncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	if n.opts.Nodes > 1 {
		var routes []string
		for _, r := range n.Nodes() {
			routes = append(routes, fmt.Sprintf("%q", "nats-route://"+n.hostPort(r, 100)))
		}
		fmt.Fprintf(&b, "cluster {\n  name: \"ackcheck\"\n  listen: %q\n  routes: [%s]\n}\n", n.hostPort(id, 100), strings.Join(routes, ", "))
	}
	return b.String()
}

// Create implements cluster.Broker: it writes the cluster's files.
func (n *Cluster) Create(ctx context.Context) error {
	for _, id := range n.Nodes() {
		if n.Net() == nil { // in a Net the addresses are its own: nothing else can hold them
			if err := n.PortsFree(n.hostPort(id, 0), n.hostPort(id, 100), n.hostPort(id, 200)); err != nil {
				return err
			}
		}
	}
	for _, id := range n.Nodes() {
		if err := cluster.MkdirAllDurable(n.DataDir(id), 0o755); err != nil {
			return err
		}
	}
	return n.writeFiles()
}

// writeFiles writes every node's nats.conf and then cluster.json, each
// durably: once cluster.json is, so is everything it describes.
func (n *Cluster) writeFiles() error {
	for _, id := range n.Nodes() {
		if err := cluster.WriteFileDurable(n.confFile(id), []byte(n.conf(id)), 0o644, nil); err != nil {
			return err
		}
	}
	return n.WriteRecord(&natsFile{Version: Version, ClusterOptions: &n.opts})
}

// SetSyncAlways switches every node's jetstream sync_interval between the
// server's default and always. A running server does not take it on
// reload, so the nodes stop cleanly (SIGTERM), their lazyfs mounts, if
// any, are synced (a clean shutdown keeps everything), the configuration
// is rewritten, and the nodes start again. It returns once all are
// healthy. A no-op when the setting is already in force.
func (n *Cluster) SetSyncAlways(ctx context.Context, always bool) error {
	if n.opts.SyncAlways == always {
		return nil
	}
	return n.Restart(ctx, "change sync_interval", func() error {
		n.opts.SyncAlways = always
		return n.writeFiles()
	})
}

// StartNode starts node id on its existing store, detached, and records
// its PID. It does not wait for the node to be ready.
func (n *Cluster) StartNode(ctx context.Context, id int32) error {
	if id < 1 || int(id) > n.opts.Nodes {
		return fmt.Errorf("node %d: the cluster has nodes 1..%d", id, n.opts.Nodes)
	}
	return n.Launch(ctx, id, n.NodeDir(id), nil, n.Binary(), "-c", n.confFile(id))
}

// Healthy asks node id's /healthz whether the server accepts clients and
// its JetStream meta layer has a leader and is current with it
// (js-meta-only): only then can a stream be created. Streams are left out:
// one that an earlier run's power loss broke must not keep the cluster
// from being ready, or from being switched to another sync_interval.
// (js-server-only would not do: it answers OK before the meta layer has
// elected a leader, and a stream created then times out.)
func (n *Cluster) Healthy(ctx context.Context, id int32) error {
	resp, body, err := n.Get(ctx, "http://"+n.hostPort(id, 200)+"/healthz?js-meta-only=true", 3*time.Second)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Endpoints implements cluster.Broker.
func (n *Cluster) Endpoints(id int32) []cluster.Endpoint {
	return []cluster.Endpoint{{Name: "server", Addr: "nats://" + n.hostPort(id, 0)}, {Name: "monitor", Addr: "http://" + n.hostPort(id, 200)}}
}

// ClientFlags implements Local.
func (n *Cluster) ClientFlags() []cluster.Flag {
	return n.WithNetns(cluster.Flag{Name: "servers", Value: strings.Join(n.Servers(), ",")},
		cluster.Flag{Name: "monitor-urls", Value: strings.Join(n.MonitorURLs(), ",")})
}

// natsFsync is the servers' sync_interval, --sync of cluster nats up.
var natsFsync = cluster.FsyncKnob{Setting: "jetstream sync_interval", Flag: "sync", Off: "default", On: "always",
	How: "a clean restart of every node"}

// FsyncKnob implements FsyncSwitch.
func (n *Cluster) FsyncKnob() cluster.FsyncKnob { return natsFsync }

// FsyncOn implements FsyncSwitch: sync_interval is always.
func (n *Cluster) FsyncOn() bool { return n.SyncAlways() }

// SetFsync implements FsyncSwitch.
func (n *Cluster) SetFsync(ctx context.Context, on bool) error { return n.SetSyncAlways(ctx, on) }
