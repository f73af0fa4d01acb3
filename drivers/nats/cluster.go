package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/spf13/pflag"
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
type ClusterOptions struct {
	Dir      string
	Nodes    int    // default 3
	BasePort int    // default 24222
	CacheDir string // where nats-server is built; default ~/.cache/ackcheck
	// SyncAlways sets jetstream { sync_interval: always }: every write is
	// fsynced before it counts. Default: the server's (fsync every 2 min).
	SyncAlways bool
	// LazyFS puts each node's store_dir on ackcheck lazyfs (power-loss).
	LazyFS       bool
	LazyFSBinary string
	// LazyFSEntries is the mounts' directory-entry mode (lazyfs.EntriesStrict
	// or lazyfs.EntriesJournal); "" is lazyfs's default, strict.
	LazyFSEntries string
	// NetNS runs each node in a network namespace of its own; BasePort
	// is then unused. Fixed when the cluster is created.
	NetNS bool
	// NetnsSubnet is the subnet of the network namespaces with NetNS
	// (zero: netns.DefaultSubnet). Fixed when the cluster is created.
	NetnsSubnet netip.Prefix
}

// The ports of every node inside a Net: each node has its own address.
const (
	netnsClientPort  = 4222
	netnsRoutePort   = 6222
	netnsMonitorPort = 8222
)

// Cluster is a local NATS JetStream cluster. Every process it stops is one it
// started, found by its pid file and its command line.
type Cluster struct {
	opts ClusterOptions
	// prefix names the cluster's network namespaces; "" without --netns.
	prefix string
	// subnet is the Net\'s subnet (zero: netns.DefaultSubnet).
	subnet netip.Prefix
}

type natsFile struct {
	Kind       string `json:"kind"`
	Version    string `json:"version"`
	Nodes      int    `json:"nodes"`
	BasePort   int    `json:"base_port"`
	CacheDir   string `json:"cache_dir"`
	SyncAlways bool   `json:"sync_always"`
	LazyFS     bool   `json:"lazyfs,omitempty"`
	LazyFSBin  string `json:"lazyfs_binary,omitempty"`
	LazyFSMode string `json:"lazyfs_entries,omitempty"`
	// NetNS is the prefix of the nodes' network namespaces, "" when they
	// run in the machine's own.
	NetNS string `json:"netns,omitempty"`
	// NetnsSubnet is their subnet, "" for netns.DefaultSubnet.
	NetnsSubnet string `json:"netns_subnet,omitempty"`
}

// OpenCluster opens the cluster in opts.Dir; what cluster.json recorded wins
// over opts.
func OpenCluster(opts ClusterOptions) (*Cluster, error) {
	dir, data, err := cluster.ReadClusterJSON(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if err := cluster.CheckNetnsSubnet(opts.NetNS, opts.NetnsSubnet); err != nil {
		return nil, err
	}
	prefix, subnet := "", opts.NetnsSubnet
	if opts.NetNS {
		prefix = cluster.NetnsPrefix(dir)
	}
	if data != nil {
		var nf natsFile
		if err := json.Unmarshal(data, &nf); err != nil || nf.Kind != natsKind {
			return nil, fmt.Errorf("%s holds no NATS cluster (cluster.json: kind %q, %v)", dir, nf.Kind, err)
		}
		opts.Nodes, opts.BasePort, opts.SyncAlways, opts.LazyFS = nf.Nodes, nf.BasePort, nf.SyncAlways, nf.LazyFS
		if opts.CacheDir == "" {
			opts.CacheDir = nf.CacheDir
		}
		if opts.LazyFSBinary == "" {
			opts.LazyFSBinary = nf.LazyFSBin
		}
		opts.LazyFSEntries = nf.LazyFSMode
		if opts.NetNS && nf.NetNS == "" {
			return nil, fmt.Errorf("the cluster in %s was created without --netns: take it down and remove the directory to create one in network namespaces", dir)
		}
		prefix = nf.NetNS
		if subnet, err = cluster.ReadNetnsSubnet(nf.NetnsSubnet); err != nil {
			return nil, fmt.Errorf("%s/%w", dir, err)
		}
		opts.NetNS = prefix != ""
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.BasePort == 0 {
		opts.BasePort = 24222
	}
	if opts.CacheDir == "" {
		opts.CacheDir = cluster.DefaultCacheDir()
	}
	if opts.LazyFSEntries != "" && opts.LazyFSEntries != "strict" && opts.LazyFSEntries != "journal" {
		return nil, fmt.Errorf("--lazyfs-entries %q: use strict or journal", opts.LazyFSEntries)
	}
	if opts.Nodes < 1 || opts.Nodes > 9 {
		return nil, fmt.Errorf("--nodes %d: give 1 to 9", opts.Nodes)
	}
	return &Cluster{opts: opts, prefix: prefix, subnet: subnet}, nil
}

// Net implements cluster.InNetns: the cluster's network namespaces; nil
// when it was started without --netns. Named from cluster.json and the
// node IDs, whether or not the namespaces exist right now.
func (n *Cluster) Net() *netns.Net {
	if n.prefix == "" {
		return nil
	}
	return &netns.Net{Prefix: n.prefix, Nodes: n.Nodes(), Subnet: n.subnet}
}

// ProbePort implements cluster.InNetns: the route port, over which the
// servers replicate, the same on every node. 0 without --netns.
func (n *Cluster) ProbePort() int {
	if n.prefix == "" {
		return 0
	}
	return netnsRoutePort
}

var _ cluster.InNetns = (*Cluster)(nil)

// host is node id's listening address: its own in the Net, or loopback.
func (n *Cluster) host(id int32) string {
	if nt := n.Net(); nt != nil {
		return nt.NodeAddr(id).String()
	}
	return "127.0.0.1"
}

// hostPort is node id's address for one of its ports (offset 0 clients,
// 100 routes, 200 monitoring from BasePort; the fixed ports in a Net).
func (n *Cluster) hostPort(id int32, offset int) string {
	port := n.port(id, offset)
	if n.prefix != "" {
		port = map[int]int{0: netnsClientPort, 100: netnsRoutePort, 200: netnsMonitorPort}[offset]
	}
	return net.JoinHostPort(n.host(id), strconv.Itoa(port))
}

// upCmd is the command that brings this cluster up, for error messages.
func (n *Cluster) upCmd() string {
	cmd := "ackcheck cluster nats up --dir " + n.opts.Dir
	if n.prefix != "" {
		cmd += " --netns"
	}
	return cmd
}

// httpClient reaches the monitoring ports: through the Net's hub when the
// cluster runs in namespaces.
func (n *Cluster) httpClient() *http.Client {
	nt := n.Net()
	if nt == nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: nt.Dial}}
}

// Dir is the cluster's directory.
func (n *Cluster) Dir() string { return n.opts.Dir }

// SyncAlways reports whether the servers fsync every write.
func (n *Cluster) SyncAlways() bool { return n.opts.SyncAlways }

// LazyFS reports whether the store dirs are on lazyfs.
func (n *Cluster) LazyFS() bool { return n.opts.LazyFS }

// Nodes implements faults.LocalCluster.
func (n *Cluster) Nodes() []int32 {
	ids := make([]int32, n.opts.Nodes)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	return ids
}

func (n *Cluster) port(id int32, offset int) int { return n.opts.BasePort + offset + int(id) - 1 }

// Servers are the client URLs, in node order.
func (n *Cluster) Servers() []string {
	var out []string
	for _, id := range n.Nodes() {
		out = append(out, "nats://"+n.hostPort(id, 0))
	}
	return out
}

// MonitorURLs are the monitoring endpoints, in node order.
func (n *Cluster) MonitorURLs() []string {
	var out []string
	for _, id := range n.Nodes() {
		out = append(out, "http://"+n.hostPort(id, 200))
	}
	return out
}

func (n *Cluster) nodeDir(id int32) string {
	return filepath.Join(n.opts.Dir, fmt.Sprintf("node%d", id))
}
func (n *Cluster) confFile(id int32) string { return filepath.Join(n.nodeDir(id), "nats.conf") }
func (n *Cluster) pidFile(id int32) string  { return filepath.Join(n.nodeDir(id), "pid") }

// DataDir is node id's JetStream store_dir.
func (n *Cluster) DataDir(id int32) string { return filepath.Join(n.nodeDir(id), "data") }

// LogFile is node id's output.
func (n *Cluster) LogFile(id int32) string { return filepath.Join(n.nodeDir(id), "nats.log") }

// Binary is the nats-server this cluster runs.
func (n *Cluster) Binary() string {
	return filepath.Join(n.opts.CacheDir, "nats-server-"+Version, "nats-server")
}

// Fetch builds nats-server from the Go module proxy, once per version.
func (n *Cluster) Fetch(ctx context.Context) error {
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

// mount is node id's lazyfs mount; nil when the cluster has none.
func (n *Cluster) Mount(id int32) *cluster.Mount {
	if !n.opts.LazyFS {
		return nil
	}
	return &cluster.Mount{ID: id, NodeDir: n.nodeDir(id), DataDir: n.DataDir(id), Binary: n.opts.LazyFSBinary,
		UpCmd: n.upCmd(), Entries: n.opts.LazyFSEntries}
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

// Up builds nats-server if needed, writes a new cluster (once), and starts
// every node that is not running. It returns when every node's /healthz
// answers ok.
func (n *Cluster) Up(ctx context.Context) error {
	// Before anything is fetched or made: root, ip, nft, a free subnet.
	if n.prefix != "" {
		if err := cluster.NetnsUpPreflight(ctx, n.prefix, n.subnet); err != nil {
			return err
		}
	}
	if err := n.Fetch(ctx); err != nil {
		return err
	}
	if err := n.create(); err != nil {
		return err
	}
	if n.prefix != "" {
		// Before any node starts: each is started inside its namespace.
		if _, err := cluster.EnsureNet(ctx, n.prefix, n.subnet, n.Nodes()); err != nil {
			return err
		}
	}
	if err := cluster.StartNodes(ctx, n); err != nil {
		return err
	}
	return n.WaitReady(ctx, 90*time.Second)
}

// create writes the cluster's files, if the directory holds none yet.
func (n *Cluster) create() error {
	meta := filepath.Join(n.opts.Dir, "cluster.json")
	if _, err := os.Stat(meta); err == nil {
		return nil
	}
	for _, id := range n.Nodes() {
		if n.prefix != "" {
			break // the addresses are the Net's own: nothing else can hold them
		}
		for _, off := range []int{0, 100, 200} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", n.port(id, off)))
			if err != nil {
				return fmt.Errorf("port %d is taken: stop what uses it or pass another --base-port", n.port(id, off))
			}
			l.Close()
		}
	}
	if n.opts.LazyFS && n.opts.LazyFSBinary == "" {
		var err error
		if n.opts.LazyFSBinary, err = cluster.LazyBinary(); err != nil {
			return err
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
	return n.writeClusterJSON()
}

// writeClusterJSON records the cluster's options.
func (n *Cluster) writeClusterJSON() error {
	nf := natsFile{Kind: natsKind, Version: Version, Nodes: n.opts.Nodes, BasePort: n.opts.BasePort, CacheDir: n.opts.CacheDir,
		SyncAlways: n.opts.SyncAlways, LazyFS: n.opts.LazyFS, LazyFSBin: n.opts.LazyFSBinary, LazyFSMode: n.opts.LazyFSEntries,
		NetNS: n.prefix, NetnsSubnet: cluster.NetnsSubnetText(n.subnet)}
	data, _ := json.MarshalIndent(nf, "", "  ")
	return cluster.WriteFileDurable(filepath.Join(n.opts.Dir, "cluster.json"), data, 0o644, nil)
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
	err := cluster.RestartClean(ctx, n, 30*time.Second, "change sync_interval", func() error {
		n.opts.SyncAlways = always
		return n.writeFiles()
	})
	if err != nil {
		return err
	}
	return n.WaitReady(ctx, 2*time.Minute)
}

// marker is what node id's command line holds: its configuration file.
func (n *Cluster) marker(id int32) string { return "-c\x00" + n.confFile(id) + "\x00" }

// StartNode starts node id on its existing store, detached, and records
// its PID. It does not wait for the node to be ready.
func (n *Cluster) StartNode(ctx context.Context, id int32) error {
	if id < 1 || int(id) > n.opts.Nodes {
		return fmt.Errorf("node %d: the cluster has nodes 1..%d", id, n.opts.Nodes)
	}
	if pid, _ := n.PID(id); pid != 0 {
		return fmt.Errorf("node %d already runs as PID %d", id, pid)
	}
	if m := n.Mount(id); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	cmd := exec.Command(n.Binary(), "-c", n.confFile(id))
	if nt := n.Net(); nt != nil {
		if err := cluster.NeedNet(ctx, n.prefix, n.upCmd()); err != nil {
			return err
		}
		// ip netns exec execs nats-server in place: the PID is the server's.
		cmd = nt.Command(context.WithoutCancel(ctx), id, n.Binary(), "-c", n.confFile(id))
		cmd.Dir = n.nodeDir(id)
		return cluster.StartDetachedIn(cmd, n.LogFile(id), n.pidFile(id), fmt.Sprintf("node %d", id), "nats-server")
	}
	cmd.Dir = n.nodeDir(id)
	return cluster.StartDetached(cmd, n.LogFile(id), n.pidFile(id), fmt.Sprintf("node %d", id))
}

// PID is node id's running nats-server, 0 if it does not run.
func (n *Cluster) PID(id int32) (int, error) { return cluster.PIDFrom(n.pidFile(id), n.marker(id)) }

// Signal sends sig to node id. It fails if the node does not run.
func (n *Cluster) Signal(id int32, sig syscall.Signal) (int, error) {
	return cluster.SignalPIDFile(n.pidFile(id), n.marker(id), fmt.Sprintf("node %d", id), sig)
}

// StopNode stops node id with SIGTERM, SIGKILL after grace, and waits for
// it to be gone.
func (n *Cluster) StopNode(ctx context.Context, id int32, grace time.Duration) error {
	return cluster.StopPIDFile(ctx, n.pidFile(id), n.marker(id), grace)
}

// Down stops every node, then unmounts their lazyfs store dirs, if any,
// then deletes the cluster's network namespaces, if any. The namespaces
// stay while a node may still run in one, so that a second down finds
// them again.
func (n *Cluster) Down(ctx context.Context) error {
	if err := cluster.StopNodes(ctx, n, 30*time.Second); err != nil {
		return err
	}
	if nt := n.Net(); nt != nil {
		if err := nt.Delete(ctx); err != nil {
			return fmt.Errorf("delete the cluster's network namespaces %s-*: %w (remove them with `ip netns delete`)", n.prefix, err)
		}
	}
	return nil
}

// Healthy asks node id's /healthz whether the server accepts clients and
// its JetStream meta layer has a leader and is current with it
// (js-meta-only): only then can a stream be created. Streams are left out:
// one that an earlier run's power loss broke must not keep the cluster
// from being ready, or from being switched to another sync_interval.
// (js-server-only would not do: it answers OK before the meta layer has
// elected a leader, and a stream created then times out.)
func (n *Cluster) Healthy(ctx context.Context, id int32) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.hostPort(id, 200)+"/healthz?js-meta-only=true", nil)
	resp, err := n.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %s %s", resp.Status, strings.TrimSpace(body.String()))
	}
	return nil
}

// WaitReady returns once every node is healthy, or with what the log of a
// node that died or stayed unhealthy says.
func (n *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, id := range n.Nodes() {
		for {
			if pid, _ := n.PID(id); pid == 0 {
				data, _ := os.ReadFile(n.LogFile(id))
				return fmt.Errorf("node %d does not run; the end of %s says:\n%s", id, n.LogFile(id), cluster.Tail(data, 2000))
			}
			err := n.Healthy(ctx, id)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d not healthy within %s (%v); see %s", id, timeout, err, n.LogFile(id))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// DataDirInode implements faults.LocalCluster.
func (n *Cluster) DataDirInode(id int32) (uint64, error) {
	return cluster.DataDirInode(n.Mount(id), n.DataDir(id))
}

// CanLoseUnsynced reports whether node id's store is on lazyfs.
func (n *Cluster) CanLoseUnsynced(id int32) error {
	return cluster.CanLoseOnMount(n.Mount(id), n.opts.Dir, "nats")
}

// LoseUnsynced makes node id's store lose every write not fsynced. The
// node must be dead.
func (n *Cluster) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := n.PID(id)
	if err != nil {
		return "", err
	}
	return cluster.LoseOnMount(ctx, n.Mount(id), n.opts.Dir, pid)
}

// ClusterNodeStatus is one node as Status sees it.
type ClusterNodeStatus struct {
	ID        int32  `json:"id"`
	PID       int    `json:"pid"`
	Server    string `json:"server"`
	Monitor   string `json:"monitor"`
	Healthy   bool   `json:"healthy"`
	Health    string `json:"health,omitempty"`
	LazyFSPID int    `json:"lazyfs_pid,omitempty"`
}

// Status reports each node's PID, addresses and health.
func (n *Cluster) Status(ctx context.Context) []ClusterNodeStatus {
	var out []ClusterNodeStatus
	servers, mons := n.Servers(), n.MonitorURLs()
	for i, id := range n.Nodes() {
		pid, _ := n.PID(id)
		s := ClusterNodeStatus{ID: id, PID: pid, Server: servers[i], Monitor: mons[i]}
		if pid != 0 {
			if err := n.Healthy(ctx, id); err != nil {
				s.Health = err.Error()
			} else {
				s.Healthy = true
			}
		}
		if m := n.Mount(id); m != nil {
			s.LazyFSPID = m.PID()
		}
		out = append(out, s)
	}
	return out
}

const natsKind = "nats"

// Grace implements Local: a node has 30 s to stop cleanly.
func (n *Cluster) Grace() time.Duration { return 30 * time.Second }

// ClientFlags implements Local.
func (n *Cluster) ClientFlags() []cluster.Flag {
	flags := []cluster.Flag{{Name: "servers", Value: strings.Join(n.Servers(), ",")}, {Name: "monitor-urls", Value: strings.Join(n.MonitorURLs(), ",")}}
	if n.prefix != "" {
		flags = append(flags, cluster.Flag{Name: "netns", Value: n.prefix})
	}
	return flags
}

// Health implements Local: a node is healthy when its /healthz answers ok
// (which needs every stream replica on it to be current).
func (n *Cluster) Health(ctx context.Context) []cluster.NodeStatus {
	var out []cluster.NodeStatus
	for _, s := range n.Status(ctx) {
		health := s.Health
		if s.PID == 0 {
			health = "not running"
		}
		out = append(out, cluster.NodeStatus{ID: s.ID, PID: s.PID, Healthy: s.Healthy, Health: health, LazyFS: n.LazyFS(), LazyFSPID: s.LazyFSPID,
			Endpoints: []cluster.Endpoint{{Name: "server", Addr: s.Server}, {Name: "monitor", Addr: s.Monitor}}})
	}
	return out
}

var _ cluster.FsyncSwitch = (*Cluster)(nil)

// FsyncSetting implements FsyncSwitch.
func (n *Cluster) FsyncSetting() string { return "jetstream sync_interval" }

// FsyncOn implements FsyncSwitch: sync_interval is always.
func (n *Cluster) FsyncOn() bool { return n.SyncAlways() }

// SetFsync implements FsyncSwitch.
func (n *Cluster) SetFsync(ctx context.Context, on bool) error { return n.SetSyncAlways(ctx, on) }

// FsyncValue implements FsyncSwitch.
func (n *Cluster) FsyncValue(on bool) string { return natsSyncValue(on) }

// FsyncFlags implements FsyncSwitch.
func (n *Cluster) FsyncFlags(on bool) string { return "--sync " + natsSyncValue(on) }

func natsSyncValue(always bool) string {
	if always {
		return "always"
	}
	return "default"
}

// LocalLauncher is the local NATS JetStream cluster's kind.
type LocalLauncher struct{}

// Kind implements Launcher.
func (LocalLauncher) Kind() string { return natsKind }

// Doc implements Launcher.
func (LocalLauncher) Doc() (string, string) {
	return "A local NATS JetStream cluster (nats-server " + Version + ", 3 nodes by default)",
		`up builds nats-server ` + Version + ` from the Go module proxy with go install (once,
into a cache outside any repository), writes each node's nats.conf, and
starts the nodes on 127.0.0.1 with their own ports, store dirs, logs and PID
files under --dir. It returns once every node's /healthz answers ok.
--sync always sets jetstream { sync_interval: always } (every write fsynced
before it counts); the default is the server's own (fsync every 2 minutes).
A running server does not change it on reload: up --sync on an existing
cluster switches it with a clean restart of every node.
With --lazyfs, each store dir is served by ackcheck lazyfs (FUSE), which the
power-loss fault uses to drop what the node had not fsynced.
With --netns, each node runs in a network namespace of its own at
10.213.0.N (ports 4222, 6222, 8222), for network faults; ackcheck reaches
it through the namespaces' hub, given --cluster-dir.`
}

// NewFlags implements Launcher.
func (LocalLauncher) NewFlags() cluster.LaunchFlags { return &natsFlags{} }

type natsFlags struct {
	opts ClusterOptions
	sync string
}

func (f *natsFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.Nodes, "nodes", 0, "nodes (default 3; fixed at the first up)")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its routes base+100+N-1, its monitoring base+200+N-1 (default 24222)")
	fs.StringVar(&f.sync, "sync", "default", "jetstream sync_interval: default (the server's, 2m) or always; on an existing cluster, switched by a clean restart")
	fs.BoolVar(&f.opts.LazyFS, "lazyfs", false, "put each node's store dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	fs.BoolVar(&f.opts.NetNS, "netns", false, "run each node in a network namespace of its own at 10.213.0.N, for network faults (at the first up; needs root, ip and nft)")
	cluster.RegisterNetnsSubnet(fs, &f.opts.NetnsSubnet)
	fs.StringVar(&f.opts.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (a directory change is durable only once its directory is fsynced; lazyfs's default) or journal (any fsync commits every change, as ext4 and XFS do)")
}

func (f *natsFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	switch f.sync {
	case "default", "":
	case "always":
		o.SyncAlways = true
	default:
		return nil, fmt.Errorf("--sync %q: use default or always", f.sync)
	}
	return OpenCluster(o)
}

// AfterUp switches sync_interval on an existing cluster when --sync asks
// for another value than it runs with.
func (f *natsFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	n := c.(*Cluster)
	want := f.sync == "always"
	if !fs.Changed("sync") || n.SyncAlways() == want {
		return nil
	}
	fmt.Fprintf(progress, "switching sync_interval to %s (a clean restart of every node) ...\n", f.sync)
	return n.SetSyncAlways(ctx, want)
}
