package cluster

import (
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
	"slices"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/netns"
)

// The lifecycle every launcher shares, written once: a broker's Cluster
// embeds a Base and fills in only what differs (a Broker: its files, its
// command lines, its readiness probe, its ports), and Base runs the rest:
//
//	Up    netns preflight, Prepare (fetch, tool checks), Create (once,
//	      cluster.json last), the network namespaces, the lazyfs mounts,
//	      every node started (StartNode), WaitReady
//	Down  every node stopped in the reverse of the order they start, their
//	      lazyfs mounts, then the network namespaces
//
// and the PID, Signal, StopNode, Health, lazyfs and netns methods of Local
// and InNetns. A node's files are <dir>/node<N>/ (<dir> itself for a
// single-node launcher with Spec.Flat): its pid file "pid", its data dir
// "data" (a lazyfs mount with --lazyfs), its log Spec.Log.

// Options are the settings every local cluster has beside its broker's
// own; a broker's ClusterOptions embed them. All but Dir are fixed when
// the cluster is created: a cluster.json that exists wins.
type Options struct {
	// Dir holds the cluster. Required.
	Dir string
	// LazyFS puts each node's data dir on ackcheck lazyfs (a FUSE
	// filesystem that can lose unsynced writes), for power-loss faults.
	LazyFS bool
	// LazyFSBinary is the ackcheck binary that serves the lazyfs mounts.
	// Default: the running executable, at the first up.
	LazyFSBinary string
	// LazyFSEntries is the mounts' directory-entry mode (lazyfs.EntriesStrict
	// or lazyfs.EntriesJournal); "" is lazyfs's default, strict.
	LazyFSEntries string
	// NetNS runs each node in a network namespace of its own (a netns.Net
	// named after Dir, NetnsPrefix), reached only from the Net's hub.
	NetNS bool
	// NetnsSubnet is the subnet of the network namespaces with NetNS
	// (zero: netns.DefaultSubnet).
	NetnsSubnet netip.Prefix
}

// Record is what every cluster.json records beside its broker's own
// settings; a broker's record embeds it (its fields sit at the top level
// of the JSON).
type Record struct {
	Kind       string `json:"kind"`
	LazyFS     bool   `json:"lazyfs,omitempty"`
	LazyFSBin  string `json:"lazyfs_binary,omitempty"`
	LazyFSMode string `json:"lazyfs_entries,omitempty"`
	// NetNS is the prefix of the nodes' network namespaces, "" when they
	// run in the machine's own.
	NetNS string `json:"netns,omitempty"`
	// NetnsSubnet is their subnet, "" for netns.DefaultSubnet.
	NetnsSubnet string `json:"netns_subnet,omitempty"`
}

func (r *Record) record() *Record { return r }

// recorded is a broker's cluster.json record: a struct that embeds Record.
type recorded interface{ record() *Record }

// Spec is what a launcher says of itself once, for every cluster it opens.
type Spec struct {
	// Kind is the broker's name, as cluster.json records it.
	Kind string
	// Name is the cluster in messages ("Kafka cluster", "Pulsar
	// standalone"); Noun its last word.
	Name, Noun string
	// Unrecorded: a cluster.json that records no kind is this launcher's.
	Unrecorded bool
	// Flat: the one node's files are in Dir itself, not Dir/node1.
	Flat bool
	// NetNodes are the nodes with a network namespace of their own (nil:
	// every node).
	NetNodes []int32
	// Log is the name of a node's log file in its directory.
	Log string
	// Grace is how long a clean stop waits before SIGKILL; Ready how long
	// Up waits for every node to answer.
	Grace, Ready time.Duration
	// PortHint is the flag that moves the ports, for a port taken.
	PortHint string
}

// Broker is what a broker's Cluster supplies to the Base it embeds. Base
// calls every lifecycle step through it, so that a broker's own method
// (Queen's PID, which reads PostgreSQL's postmaster.pid) replaces Base's
// everywhere; what a broker does not define, its embedded Base answers.
type Broker interface {
	Nodeset
	// Create writes a new cluster's files, each durably, cluster.json last
	// (WriteRecord). Up calls it once, when Dir holds no cluster.json.
	Create(ctx context.Context) error
	// Marker is what node id's command line holds: its own files.
	Marker(id int32) string
	// Healthy is the readiness probe: nil once node id answers.
	Healthy(ctx context.Context, id int32) error
	// Endpoints are node id's named addresses, in display order.
	Endpoints(id int32) []Endpoint
	LogFile(id int32) string
	WaitReady(ctx context.Context, timeout time.Duration) error
}

// Preparer is a Broker that fetches or checks what it runs (jars, a
// binary, java) before Up makes anything.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Starter is a Broker that starts its nodes its own way: Up calls Start
// instead of StartNodes and WaitReady.
type Starter interface {
	Start(ctx context.Context) error
}

// Base is the generic part of a local cluster. Its methods are safe to
// call from one goroutine at a time.
type Base struct {
	self Broker
	spec Spec
	o    *Options
	// recorded: Open read a cluster.json.
	recorded bool
	// prefix names the cluster's network namespaces; "" without --netns.
	prefix string
	subnet netip.Prefix
}

// Open reads the cluster in o.Dir, if there is one, into o and rec (a
// broker's record: it embeds Record, and points at its own options, so
// that what cluster.json records of them lands there), for self, which
// embeds b. What a cluster.json records wins over o; --lazyfs or --netns
// on a cluster created without is refused. o stays the Options b reads.
func (b *Base) Open(self Broker, o *Options, s Spec, rec recorded) error {
	*b = Base{self: self, spec: s, o: o, subnet: o.NetnsSubnet}
	dir, data, err := ReadClusterJSON(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	if err := CheckNetnsSubnet(o.NetNS, o.NetnsSubnet); err != nil {
		return err
	}
	if o.NetNS {
		b.prefix = NetnsPrefix(dir)
	}
	if b.recorded = data != nil; data != nil {
		if err := b.read(data, rec); err != nil {
			return err
		}
	}
	if e := o.LazyFSEntries; e != "" && e != "strict" && e != "journal" {
		return fmt.Errorf("--lazyfs-entries %q: use strict or journal", e)
	}
	return nil
}

// read takes what cluster.json recorded.
func (b *Base) read(data []byte, rec recorded) error {
	o, r, dir := b.o, rec.record(), b.o.Dir
	if err := json.Unmarshal(data, rec); err != nil {
		return fmt.Errorf("%s/cluster.json is damaged: %w (remove the directory to start afresh)", dir, err)
	}
	if r.Kind != b.spec.Kind && (r.Kind != "" || !b.spec.Unrecorded) {
		return fmt.Errorf("%s holds no %s (cluster.json: kind %q)", dir, b.spec.Name, r.Kind)
	}
	for _, c := range []struct {
		flag      string
		asked, is bool
	}{{"lazyfs", o.LazyFS, r.LazyFS}, {"netns", o.NetNS, r.NetNS != ""}} {
		if c.asked && !c.is {
			return fmt.Errorf("the %s in %s was created without --%s: take it down and remove the directory to create one with --%s", b.spec.Noun, dir, c.flag, c.flag)
		}
	}
	var err error
	if b.subnet, err = ReadNetnsSubnet(r.NetnsSubnet); err != nil {
		return fmt.Errorf("%s/%w", dir, err)
	}
	b.prefix, o.NetNS, o.NetnsSubnet = r.NetNS, r.NetNS != "", b.subnet
	o.LazyFS, o.LazyFSEntries = r.LazyFS, r.LazyFSMode
	if o.LazyFSBinary == "" {
		o.LazyFSBinary = r.LazyFSBin
	}
	return nil
}

// Recorded reports whether Open found the cluster's cluster.json.
func (b *Base) Recorded() bool { return b.recorded }

// WriteRecord fills rec's Record in from the cluster and writes rec as
// cluster.json, durably: once it is, so is everything written before it.
func (b *Base) WriteRecord(rec recorded) error {
	*rec.record() = Record{Kind: b.spec.Kind, LazyFS: b.o.LazyFS, LazyFSBin: b.o.LazyFSBinary, LazyFSMode: b.o.LazyFSEntries,
		NetNS: b.prefix, NetnsSubnet: NetnsSubnetText(b.subnet)}
	data, _ := json.MarshalIndent(rec, "", "  ")
	return WriteFileDurable(filepath.Join(b.o.Dir, "cluster.json"), data, 0o644, nil)
}

// Dir is the cluster directory.
func (b *Base) Dir() string { return b.o.Dir }

// LazyFS reports whether the nodes' data dirs are on lazyfs.
func (b *Base) LazyFS() bool { return b.o.LazyFS }

// Grace implements Local.
func (b *Base) Grace() time.Duration { return b.spec.Grace }

// NodeDir is where node id's files are.
func (b *Base) NodeDir(id int32) string {
	if b.spec.Flat {
		return b.o.Dir
	}
	return filepath.Join(b.o.Dir, fmt.Sprintf("node%d", id))
}

// DataDir is node id's data dir.
func (b *Base) DataDir(id int32) string { return filepath.Join(b.NodeDir(id), "data") }

// LogFile is node id's output.
func (b *Base) LogFile(id int32) string { return filepath.Join(b.NodeDir(id), b.spec.Log) }

// PIDFile is where node id's PID is recorded.
func (b *Base) PIDFile(id int32) string { return filepath.Join(b.NodeDir(id), "pid") }

// upCmd is the command that brings this cluster up, for messages.
func (b *Base) upCmd() string {
	cmd := "ackcheck cluster " + b.spec.Kind + " up --dir " + b.o.Dir
	if b.prefix != "" {
		cmd += " --netns"
	}
	return cmd
}

// what names node id in messages.
func (b *Base) what(id int32) string {
	if b.spec.Flat {
		return "the " + b.spec.Name
	}
	return fmt.Sprintf("node %d", id)
}

// Net implements InNetns: the cluster's network namespaces; nil without
// --netns. It is named from cluster.json and the node IDs, whether or not
// the namespaces exist right now.
func (b *Base) Net() *netns.Net {
	if b.prefix == "" {
		return nil
	}
	nodes := b.spec.NetNodes
	if nodes == nil {
		nodes = b.self.Nodes()
	}
	return &netns.Net{Prefix: b.prefix, Nodes: nodes, Subnet: b.subnet}
}

// InNet is port with --netns and 0 without: a ProbePort.
func (b *Base) InNet(port int) int {
	if b.prefix == "" {
		return 0
	}
	return port
}

// Host is node id's address: its own in the Net, or loopback.
func (b *Base) Host(id int32) string {
	if n := b.Net(); n != nil {
		return n.NodeAddr(id).String()
	}
	return "127.0.0.1"
}

// Dial connects to a node's address: from the Net's hub with --netns (the
// machine's own namespace cannot reach it), else directly.
func (b *Base) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if n := b.Net(); n != nil {
		return n.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// HTTPClient reaches the nodes' HTTP ports: through the hub with --netns.
func (b *Base) HTTPClient() *http.Client {
	if b.prefix == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: b.Dial}}
}

// Get GETs url from a node's HTTP port (through the hub with --netns)
// within timeout: a health check. It returns the answer, its body already
// read (at most 1 MiB) and closed.
func (b *Base) Get(ctx context.Context, url string, timeout time.Duration) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := b.HTTPClient().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, body, err
}

// WithNetns is a ClientFlags: flags, and with --netns the Net the driver
// dials through.
func (b *Base) WithNetns(flags ...Flag) []Flag {
	if b.prefix != "" {
		flags = append(flags, Flag{Name: "netns", Value: b.prefix})
	}
	return flags
}

// Mount is node id's lazyfs mount; nil without lazyfs.
func (b *Base) Mount(id int32) *Mount {
	if !b.o.LazyFS {
		return nil
	}
	return &Mount{ID: id, NodeDir: b.NodeDir(id), DataDir: b.DataDir(id), Binary: b.o.LazyFSBinary,
		UpCmd: b.upCmd(), Entries: b.o.LazyFSEntries}
}

// PID returns node id's process, or 0 if it does not run. A pid file
// whose process is gone, or is another program, counts as not running.
func (b *Base) PID(id int32) (int, error) { return PIDFrom(b.PIDFile(id), b.self.Marker(id)) }

// Signal sends sig to node id. It fails if the node does not run.
func (b *Base) Signal(id int32, sig syscall.Signal) (int, error) {
	return SignalPIDFile(b.PIDFile(id), b.self.Marker(id), b.what(id), sig)
}

// StopNode stops node id with SIGTERM (a clean shutdown), and SIGKILL if
// it has not exited after grace. It waits for the process to be gone.
func (b *Base) StopNode(ctx context.Context, id int32, grace time.Duration) error {
	return StopPIDFile(ctx, b.PIDFile(id), b.self.Marker(id), grace)
}

// Launch starts node id as argv, in dir with env added to ackcheck's own,
// detached, and records its PID: with --netns inside the node's
// namespace (ip netns exec execs the program in place, so the PID is the
// program's). It refuses a node that runs, or whose lazyfs does not
// answer. It does not wait for the node to answer.
func (b *Base) Launch(ctx context.Context, id int32, dir string, env []string, argv ...string) error {
	if pid, _ := b.self.PID(id); pid != 0 {
		return fmt.Errorf("%s already runs as PID %d", b.what(id), pid)
	}
	if m := b.self.Mount(id); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	n := b.Net()
	if n != nil {
		if err := b.NeedNet(ctx); err != nil {
			return err
		}
		cmd = n.Command(context.WithoutCancel(ctx), id, argv[0], argv[1:]...)
	}
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if n != nil {
		return StartDetachedIn(cmd, b.self.LogFile(id), b.PIDFile(id), b.what(id), filepath.Base(argv[0]))
	}
	return StartDetached(cmd, b.self.LogFile(id), b.PIDFile(id), b.what(id))
}

// NeedNet fails, saying to run up, when the cluster runs in network
// namespaces that do not exist.
func (b *Base) NeedNet(ctx context.Context) error { return NeedNet(ctx, b.prefix, b.upCmd()) }

// EnsureNet makes the cluster's network namespaces, or finds them again;
// nothing without --netns.
func (b *Base) EnsureNet(ctx context.Context) error {
	if b.prefix == "" {
		return nil
	}
	_, err := EnsureNet(ctx, b.prefix, b.subnet, b.Net().Nodes)
	return err
}

// Up implements Local: before anything is fetched or made, what --netns
// needs (root, ip, nft, a free subnet); then Prepare, Create at the first
// call, the network namespaces (before any node starts: each is started
// inside its own), and every node that does not run, on its lazyfs mount.
// It returns once WaitReady does.
func (b *Base) Up(ctx context.Context) error {
	if b.prefix != "" {
		if err := NetnsUpPreflight(ctx, b.prefix, b.subnet); err != nil {
			return err
		}
	}
	if p, ok := b.self.(Preparer); ok {
		if err := p.Prepare(ctx); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(b.o.Dir, "cluster.json")); errors.Is(err, os.ErrNotExist) {
		if b.o.LazyFS && b.o.LazyFSBinary == "" {
			if b.o.LazyFSBinary, err = LazyBinary(); err != nil {
				return err
			}
		}
		if err := b.self.Create(ctx); err != nil {
			return err
		}
	}
	if err := b.EnsureNet(ctx); err != nil {
		return err
	}
	if s, ok := b.self.(Starter); ok {
		return s.Start(ctx)
	}
	if err := StartNodes(ctx, b.self); err != nil {
		return err
	}
	return b.self.WaitReady(ctx, b.spec.Ready)
}

// Down implements Local: every node stopped (SIGTERM, SIGKILL after
// Grace), then the lazyfs mounts under them, then the network namespaces
// (with them every link, rule and qdisc a fault left). The namespaces stay
// while a node may still run in one, so that a second down finds them.
func (b *Base) Down(ctx context.Context) error {
	if err := StopNodes(ctx, b.self, b.spec.Grace); err != nil {
		return err
	}
	if n := b.Net(); n != nil {
		if err := n.Delete(ctx); err != nil {
			return fmt.Errorf("delete the %s's network namespaces %s-*: %w (remove them with `ip netns delete`)", b.spec.Noun, b.prefix, err)
		}
	}
	return nil
}

// WaitReady waits until every node runs and its probe (Healthy) passes,
// or says what the log of a node that died or stayed unready says.
func (b *Base) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, id := range b.self.Nodes() {
		for {
			if pid, _ := b.self.PID(id); pid == 0 {
				data, _ := os.ReadFile(b.self.LogFile(id))
				return fmt.Errorf("%s does not run; the end of %s says:\n%s", b.what(id), b.self.LogFile(id), Tail(data, 2000))
			}
			err := b.self.Healthy(ctx, id)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready within %s (%v); see %s", b.what(id), timeout, err, b.self.LogFile(id))
			}
			if err := Sleep(ctx, 250*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Health implements Local: each node's process, addresses and probe.
func (b *Base) Health(ctx context.Context) []NodeStatus {
	var out []NodeStatus
	for _, id := range b.self.Nodes() {
		pid, _ := b.self.PID(id)
		s := NodeStatus{ID: id, PID: pid, Endpoints: b.self.Endpoints(id), LazyFS: b.o.LazyFS}
		if m := b.self.Mount(id); m != nil {
			s.LazyFSPID = m.PID()
		}
		if pid == 0 {
			s.Health = "not running"
		} else if err := b.self.Healthy(ctx, id); err != nil {
			s.Health = err.Error()
		} else {
			s.Healthy = true
		}
		out = append(out, s)
	}
	return out
}

// DataDirInode implements Local: the kill proof shows it unchanged across
// a restart (same volume, same data).
func (b *Base) DataDirInode(id int32) (uint64, error) {
	return DataDirInode(b.self.Mount(id), b.DataDir(id))
}

// CanLoseUnsynced implements Local: node id's data dir is on lazyfs.
func (b *Base) CanLoseUnsynced(id int32) error {
	return CanLoseOnMount(b.self.Mount(id), b.o.Dir, b.spec.Kind)
}

// LoseUnsynced implements Local: node id's data dir loses every write not
// fsynced. The node must be dead. It returns when the loss is complete,
// with what was lost.
func (b *Base) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := b.self.PID(id)
	if err != nil {
		return "", err
	}
	return LoseOnMount(ctx, b.self.Mount(id), b.o.Dir, pid)
}

// SyncAll makes everything on every node's lazyfs durable, as a clean
// shutdown of the machines would. A no-op without lazyfs.
func (b *Base) SyncAll(ctx context.Context) error {
	var errs []error
	for _, id := range b.self.Nodes() {
		if m := b.self.Mount(id); m != nil {
			errs = append(errs, m.Sync(ctx))
		}
	}
	return errors.Join(errs...)
}

// Restart stops every node cleanly, runs change while none runs (it
// rewrites their configuration), starts them again and waits until they
// are ready (RestartClean). why names the change in errors.
func (b *Base) Restart(ctx context.Context, why string, change func() error) error {
	if err := RestartClean(ctx, b.self, b.spec.Grace, why, change); err != nil {
		return err
	}
	return b.self.WaitReady(ctx, b.spec.Ready)
}

// PortsFree fails, naming the first taken one and the launcher's flag
// that moves them, unless every host:port of addrs can be listened on.
func (b *Base) PortsFree(addrs ...string) error {
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("port %s is taken: stop what uses it or pass %s", a, b.spec.PortHint)
		}
		l.Close()
	}
	return nil
}

// NodeIDs is 1..n.
func NodeIDs(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	return ids
}

// reversed is ids from last to first.
func reversed(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// Or is v, or def when v is the zero value: an option's default.
func Or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
