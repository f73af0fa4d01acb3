// The local Kafka cluster lives in one directory:
//
//	<dir>/cluster.json            ports, version, cluster ID
//	<dir>/log4j2.properties
//	<dir>/node<N>/server.properties
//	<dir>/node<N>/data/           the node's log dir (KRaft metadata and partitions)
//	<dir>/node<N>/kafka.log       stdout and stderr of the JVM
//	<dir>/node<N>/pid             the PID of the running JVM
//
// With --netns (ClusterOptions.NetNS), each node runs in a network
// namespace of its own (a netns.Net named after the directory,
// cluster.NetnsPrefix, recorded in cluster.json): node N listens and
// advertises on 10.213.0.N, port 9092 for clients and peers and 9093 for
// the KRaft controller quorum, and nothing of it is reachable from the
// machine's own namespace. ackcheck's clients reach it from the Net's hub
// (the driver's --netns, which ClientFlags sets).
//
// With LazyFS, each data dir is a lazyfs mount (cluster.Mount). A node's
// process counts only while its command line still names that node's
// server.properties: a stale pid file never stops somebody else's process.

package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/spf13/pflag"
)

// Version is the Apache Kafka release the local cluster runs.
const Version = "4.3.1"

// ClusterOptions configures a local Kafka cluster. Zero values take defaults.
type ClusterOptions struct {
	// Dir holds the cluster (see the package doc). Required.
	Dir string
	// Nodes is the number of combined broker+controller nodes. Default 3.
	Nodes int
	// BasePort is node 1's client port; node N listens on BasePort+N-1 for
	// clients and BasePort+100+N-1 for the controller quorum. Default 29091.
	BasePort int
	// CacheDir holds the jars fetched from Maven Central, outside any
	// repository. Default $XDG_CACHE_HOME/ackcheck or ~/.cache/ackcheck.
	CacheDir string
	// HeapMB is each JVM's heap. Default 768: three nodes and ackcheck on a
	// 2-core, 24 GiB machine leave most memory to the page cache.
	HeapMB int
	// Props are extra server.properties for every node (they override the
	// defaults written by Up).
	Props map[string]string
	// LazyFS puts each node's data dir on ackcheck lazyfs (a FUSE
	// filesystem that can lose unsynced writes), for power-loss faults.
	// Fixed when the cluster is created.
	LazyFS bool
	// LazyFSBinary is the ackcheck binary that serves the lazyfs mounts.
	// Default: the running executable.
	LazyFSBinary string
	// NetNS runs each node in a network namespace of its own (see the
	// package doc); BasePort is then unused. Fixed when the cluster is
	// created.
	NetNS bool
	// NetnsSubnet is the subnet of the network namespaces with NetNS
	// (zero: netns.DefaultSubnet). Fixed when the cluster is created.
	NetnsSubnet netip.Prefix
}

// The ports of every node inside a Net: each node has its own address,
// so all use the same ones.
const (
	netnsClientPort     = 9092
	netnsControllerPort = 9093
)

func (o *ClusterOptions) defaults() {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.BasePort == 0 {
		o.BasePort = 29091
	}
	if o.HeapMB == 0 {
		o.HeapMB = 768
	}
	if o.CacheDir == "" {
		o.CacheDir = cluster.DefaultCacheDir()
	}
}

// Cluster is a local Kafka cluster. Its methods are safe to call from one
// goroutine at a time.
type Cluster struct {
	opts ClusterOptions
	// prefix names the cluster's network namespaces; "" without --netns.
	prefix string
	// subnet is the Net\'s subnet (zero: netns.DefaultSubnet).
	subnet netip.Prefix
}

// clusterFile is what <dir>/cluster.json records.
type clusterFile struct {
	Kind      string `json:"kind"`
	Version   string `json:"version"`
	ClusterID string `json:"cluster_id"`
	Nodes     int    `json:"nodes"`
	BasePort  int    `json:"base_port"`
	HeapMB    int    `json:"heap_mb"`
	CacheDir  string `json:"cache_dir"`
	LazyFS    bool   `json:"lazyfs,omitempty"`
	LazyFSBin string `json:"lazyfs_binary,omitempty"`
	// NetNS is the prefix of the nodes' network namespaces, "" when they
	// run in the machine's own.
	NetNS string `json:"netns,omitempty"`
	// NetnsSubnet is their subnet, "" for netns.DefaultSubnet.
	NetnsSubnet string `json:"netns_subnet,omitempty"`
}

// OpenCluster returns the cluster in opts.Dir. If the directory already holds
// a cluster, its recorded ports and node count win over opts.
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
		var cf clusterFile
		if err := json.Unmarshal(data, &cf); err != nil {
			return nil, fmt.Errorf("%s/cluster.json is damaged: %w (remove the directory to start afresh)", dir, err)
		}
		if opts.LazyFS && !cf.LazyFS {
			return nil, fmt.Errorf("the cluster in %s was created without --lazyfs: take it down and remove the directory to create one with lazyfs", dir)
		}
		if opts.NetNS && cf.NetNS == "" {
			return nil, fmt.Errorf("the cluster in %s was created without --netns: take it down and remove the directory to create one in network namespaces", dir)
		}
		prefix = cf.NetNS
		if subnet, err = cluster.ReadNetnsSubnet(cf.NetnsSubnet); err != nil {
			return nil, fmt.Errorf("%s/%w", dir, err)
		}
		opts.NetNS = prefix != ""
		opts.Nodes, opts.BasePort, opts.HeapMB, opts.LazyFS = cf.Nodes, cf.BasePort, cf.HeapMB, cf.LazyFS
		if opts.CacheDir == "" {
			opts.CacheDir = cf.CacheDir
		}
		if opts.LazyFSBinary == "" {
			opts.LazyFSBinary = cf.LazyFSBin
		}
	}
	opts.defaults()
	return &Cluster{opts: opts, prefix: prefix, subnet: subnet}, nil
}

// Net implements cluster.InNetns: the cluster's network namespaces; nil
// when it was started without --netns. It is named from cluster.json
// and the node IDs, whether or not the namespaces exist right now.
func (k *Cluster) Net() *netns.Net {
	if k.prefix == "" {
		return nil
	}
	return &netns.Net{Prefix: k.prefix, Nodes: k.Nodes(), Subnet: k.subnet}
}

// ProbePort implements cluster.InNetns: the inter-broker listener's
// port (PLAINTEXT, which the brokers replicate over), the same on every
// node. 0 without --netns.
func (k *Cluster) ProbePort() int {
	if k.prefix == "" {
		return 0
	}
	return netnsClientPort
}

var _ cluster.InNetns = (*Cluster)(nil)

// Nodes returns the node IDs, 1..N.
func (k *Cluster) Nodes() []int32 {
	ids := make([]int32, k.opts.Nodes)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	return ids
}

// Brokers returns the client addresses of every node.
func (k *Cluster) Brokers() []string {
	var out []string
	for _, id := range k.Nodes() {
		out = append(out, k.clientAddr(id))
	}
	return out
}

func (k *Cluster) clientAddr(id int32) string {
	if n := k.Net(); n != nil {
		return net.JoinHostPort(n.NodeAddr(id).String(), strconv.Itoa(netnsClientPort))
	}
	return "127.0.0.1:" + strconv.Itoa(k.opts.BasePort+int(id)-1)
}

func (k *Cluster) controllerAddr(id int32) string {
	if n := k.Net(); n != nil {
		return net.JoinHostPort(n.NodeAddr(id).String(), strconv.Itoa(netnsControllerPort))
	}
	return "127.0.0.1:" + strconv.Itoa(k.opts.BasePort+100+int(id)-1)
}

// dial connects to a node's address: through the Net's hub when the
// cluster runs in namespaces (the machine's own namespace cannot reach
// it), else directly. A connect that takes more than timeout fails.
func (k *Cluster) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if n := k.Net(); n != nil {
		return n.Dial(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (k *Cluster) nodeDir(id int32) string {
	return filepath.Join(k.opts.Dir, fmt.Sprintf("node%d", id))
}

// DataDir is node id's log dir.
func (k *Cluster) DataDir(id int32) string { return filepath.Join(k.nodeDir(id), "data") }

// LogFile is node id's JVM output.
func (k *Cluster) LogFile(id int32) string { return filepath.Join(k.nodeDir(id), "kafka.log") }

func (k *Cluster) propsFile(id int32) string {
	return filepath.Join(k.nodeDir(id), "server.properties")
}
func (k *Cluster) pidFile(id int32) string { return filepath.Join(k.nodeDir(id), "pid") }
func (k *Cluster) libDir() string {
	return filepath.Join(k.opts.CacheDir, "kafka-"+Version, "libs")
}

// Fetch downloads Kafka's jars and their runtime dependencies from Maven
// Central with mvn, once; later calls find them in the cache.
func (k *Cluster) Fetch(ctx context.Context) error {
	libs := k.libDir()
	if m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-"+Version+".jar")); len(m) == 1 {
		if s, _ := filepath.Glob(filepath.Join(libs, "log4j-slf4j-impl-*.jar")); len(s) == 1 {
			return nil
		}
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return errors.New("mvn not found: install Maven (and Java 17) to fetch Apache Kafka from Maven Central")
	}
	home := filepath.Dir(libs)
	if err := cluster.MkdirAllDurable(home, 0o755); err != nil {
		return err
	}
	// log4j-slf4j-impl routes Kafka's slf4j logging into log4j2, so that
	// each node writes a readable kafka.log.
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ackcheck</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>` + Version + `</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.25.4</version></dependency>
  </dependencies>
</project>
`
	if err := os.WriteFile(filepath.Join(home, "pom.xml"), []byte(pom), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "dependency:copy-dependencies",
		"-DoutputDirectory=libs", "-DincludeScope=runtime")
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fetch Kafka %s with mvn: %w\n%s", Version, err, cluster.Tail(out, 2000))
	}
	// mvn does not fsync the jars: a power loss could leave a cut one
	// that the check above takes for complete.
	return cluster.SyncTree(libs)
}

func (k *Cluster) java(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "java", k.javaArgs(args...)...)
}

func (k *Cluster) javaArgs(args ...string) []string {
	return append([]string{"-cp", filepath.Join(k.libDir(), "*"),
		"-Dlog4j2.configurationFile=" + filepath.Join(k.opts.Dir, "log4j2.properties")}, args...)
}

// upCmd is the command that brings this cluster up, for error messages.
func (k *Cluster) upCmd() string {
	cmd := "ackcheck cluster kafka up --dir " + k.opts.Dir
	if k.prefix != "" {
		cmd += " --netns"
	}
	return cmd
}

const log4j = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.partitionchange.name = org.apache.kafka.controller.ReplicationControlManager
logger.partitionchange.level = DEBUG
`

// serverProps are the defaults of every node: the replication settings
// ackcheck's scenarios assume (RF 3, min.insync.replicas 2), no automatic
// topic creation, and thread counts sized for 2 cores.
func (k *Cluster) serverProps(id int32) map[string]string {
	var voters []string
	for _, n := range k.Nodes() {
		voters = append(voters, fmt.Sprintf("%d@%s", n, k.controllerAddr(n)))
	}
	p := map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  strconv.Itoa(int(id)),
		"controller.quorum.voters":                 strings.Join(voters, ","),
		"listeners":                                "PLAINTEXT://" + k.clientAddr(id) + ",CONTROLLER://" + k.controllerAddr(id),
		"advertised.listeners":                     "PLAINTEXT://" + k.clientAddr(id),
		"controller.listener.names":                "CONTROLLER",
		"listener.security.protocol.map":           "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":               "PLAINTEXT",
		"log.dirs":                                 k.DataDir(id),
		"default.replication.factor":               strconv.Itoa(min(3, k.opts.Nodes)),
		"min.insync.replicas":                      strconv.Itoa(min(2, k.opts.Nodes)),
		"offsets.topic.replication.factor":         strconv.Itoa(min(3, k.opts.Nodes)),
		"transaction.state.log.replication.factor": strconv.Itoa(min(3, k.opts.Nodes)),
		"transaction.state.log.min.isr":            strconv.Itoa(min(2, k.opts.Nodes)),
		"auto.create.topics.enable":                "false",
		"unclean.leader.election.enable":           "false",
		"num.network.threads":                      "2",
		"num.io.threads":                           "4",
		"group.initial.rebalance.delay.ms":         "0",
	}
	for key, v := range k.opts.Props {
		p[key] = v
	}
	return p
}

func writeProps(path string, props map[string]string) error {
	var b bytes.Buffer
	keys := make([]string, 0, len(props))
	for key := range props {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		fmt.Fprintf(&b, "%s=%s\n", key, props[key])
	}
	return cluster.WriteFileDurable(path, b.Bytes(), 0o644, nil)
}

// Up fetches Kafka if needed, writes and formats a new cluster (once), and
// starts every node that is not running. It returns when every node
// answers on its client port, or with the log lines that say why not.
func (k *Cluster) Up(ctx context.Context) error {
	// Before anything is fetched or made: root, ip, nft, a free subnet.
	if k.prefix != "" {
		if err := cluster.NetnsUpPreflight(ctx, k.prefix, k.subnet); err != nil {
			return err
		}
	}
	if err := k.Fetch(ctx); err != nil {
		return err
	}
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found: install Java 17 to run Apache Kafka")
	}
	if err := k.create(ctx); err != nil {
		return err
	}
	if k.prefix != "" {
		// Before any node starts: each is started inside its namespace.
		if _, err := cluster.EnsureNet(ctx, k.prefix, k.subnet, k.Nodes()); err != nil {
			return err
		}
	}
	if err := cluster.StartNodes(ctx, k); err != nil {
		return err
	}
	return k.WaitReady(ctx, 90*time.Second)
}

// create writes the cluster's files and formats each node's storage, if
// the directory does not hold a cluster yet.
func (k *Cluster) create(ctx context.Context) error {
	meta := filepath.Join(k.opts.Dir, "cluster.json")
	if _, err := os.Stat(meta); err == nil {
		return nil
	}
	for _, id := range k.Nodes() {
		if k.prefix != "" {
			break // the addresses are the Net's own: nothing else can hold them
		}
		for _, port := range []string{k.clientAddr(id), k.controllerAddr(id)} {
			if l, err := net.Listen("tcp", port); err != nil {
				return fmt.Errorf("port %s is taken: stop what uses it or pass another --base-port", port)
			} else {
				l.Close()
			}
		}
	}
	if err := cluster.MkdirAllDurable(k.opts.Dir, 0o755); err != nil {
		return err
	}
	if err := cluster.WriteFileDurable(filepath.Join(k.opts.Dir, "log4j2.properties"), []byte(log4j), 0o644, nil); err != nil {
		return err
	}
	out, err := k.java(ctx, "kafka.tools.StorageTool", "random-uuid").Output()
	if err != nil {
		return fmt.Errorf("make a cluster ID: %w", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return errors.New("make a cluster ID: StorageTool printed nothing")
	}
	clusterID := lines[len(lines)-1]
	if k.opts.LazyFS && k.opts.LazyFSBinary == "" {
		if k.opts.LazyFSBinary, err = cluster.LazyBinary(); err != nil {
			return err
		}
	}
	for _, id := range k.Nodes() {
		if err := cluster.MkdirAllDurable(k.DataDir(id), 0o755); err != nil {
			return err
		}
		if m := k.Mount(id); m != nil {
			if err := m.Start(ctx); err != nil {
				return err
			}
		}
		if err := writeProps(k.propsFile(id), k.serverProps(id)); err != nil {
			return err
		}
		cmd := k.java(ctx, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", k.propsFile(id))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("format node %d storage: %w\n%s", id, err, cluster.Tail(out, 2000))
		}
	}
	// The formatted storage is where every node starts: durable, file by
	// file (StorageTool does not fsync what it writes).
	for _, id := range k.Nodes() {
		if err := cluster.SyncTree(k.DataDir(id)); err != nil {
			return err
		}
	}
	// cluster.json last: once it is durable, so is everything above.
	cf := clusterFile{Kind: kafkaKind, Version: Version, ClusterID: clusterID, Nodes: k.opts.Nodes,
		BasePort: k.opts.BasePort, HeapMB: k.opts.HeapMB, CacheDir: k.opts.CacheDir,
		LazyFS: k.opts.LazyFS, LazyFSBin: k.opts.LazyFSBinary, NetNS: k.prefix, NetnsSubnet: cluster.NetnsSubnetText(k.subnet)}
	data, _ := json.MarshalIndent(cf, "", "  ")
	return cluster.WriteFileDurable(meta, data, 0o644, nil)
}

// StartNode starts node id on its existing data dir, detached, and records
// its PID. It does not wait for the node to answer (see WaitNode).
func (k *Cluster) StartNode(ctx context.Context, id int32) error {
	if pid, _ := k.PID(id); pid != 0 {
		return fmt.Errorf("node %d already runs as PID %d", id, pid)
	}
	if m := k.Mount(id); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	heap := fmt.Sprintf("%dm", k.opts.HeapMB)
	args := k.javaArgs("-Xms"+heap, "-Xmx"+heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
		"-Djava.awt.headless=true", "kafka.Kafka", k.propsFile(id))
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "java", args...)
	if n := k.Net(); n != nil {
		if err := cluster.NeedNet(ctx, k.prefix, k.upCmd()); err != nil {
			return err
		}
		// ip netns exec execs java in place: the PID recorded is the JVM's.
		cmd = n.Command(context.WithoutCancel(ctx), id, "java", args...)
		return cluster.StartDetachedIn(cmd, k.LogFile(id), k.pidFile(id), fmt.Sprintf("node %d", id), "java")
	}
	return cluster.StartDetached(cmd, k.LogFile(id), k.pidFile(id), fmt.Sprintf("node %d", id))
}

// PID returns node id's running JVM, or 0 if it does not run. A pid file
// whose process is gone, or is another program, counts as not running.
func (k *Cluster) PID(id int32) (int, error) { return cluster.PIDFrom(k.pidFile(id), k.propsFile(id)) }

// Signal sends sig to node id's JVM. It fails if the node does not run.
func (k *Cluster) Signal(id int32, sig syscall.Signal) (int, error) {
	return cluster.SignalPIDFile(k.pidFile(id), k.propsFile(id), fmt.Sprintf("node %d", id), sig)
}

// StopNode stops node id with SIGTERM (a clean shutdown), and SIGKILL if
// it has not exited after grace. It waits for the process to be gone.
func (k *Cluster) StopNode(ctx context.Context, id int32, grace time.Duration) error {
	return cluster.StopPIDFile(ctx, k.pidFile(id), k.propsFile(id), grace)
}

// Down stops every node (SIGTERM, then SIGKILL after 30s), then the
// lazyfs mounts under them, if any, then deletes the cluster's network
// namespaces, if any (with them every link, rule and qdisc a fault left).
// The namespaces stay while a node may still run in one, so that a
// second down finds them again.
func (k *Cluster) Down(ctx context.Context) error {
	if err := cluster.StopNodes(ctx, k, 30*time.Second); err != nil {
		return err
	}
	if n := k.Net(); n != nil {
		if err := n.Delete(ctx); err != nil {
			return fmt.Errorf("delete the cluster's network namespaces %s-*: %w (remove them with `ip netns delete`)", k.prefix, err)
		}
	}
	return nil
}

// ClusterNodeStatus is one node as Status sees it.
type ClusterNodeStatus struct {
	ID             int32  `json:"id"`
	PID            int    `json:"pid"`
	ClientAddr     string `json:"client_addr"`
	ControllerAddr string `json:"controller_addr"`
	Answers        bool   `json:"answers"`
	LazyFSPID      int    `json:"lazyfs_pid,omitempty"`
}

// Status reports each node's PID, ports and whether its client port
// accepts connections (through the Net's hub with --netns).
func (k *Cluster) Status(ctx context.Context) []ClusterNodeStatus {
	var out []ClusterNodeStatus
	for _, id := range k.Nodes() {
		pid, _ := k.PID(id)
		s := ClusterNodeStatus{ID: id, PID: pid, ClientAddr: k.clientAddr(id), ControllerAddr: k.controllerAddr(id)}
		if m := k.Mount(id); m != nil {
			s.LazyFSPID = m.PID()
		}
		if c, err := k.dial(ctx, s.ClientAddr, 500*time.Millisecond); err == nil {
			c.Close()
			s.Answers = true
		}
		out = append(out, s)
	}
	return out
}

// WaitReady waits until every node runs and answers on its client port.
func (k *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := true
		for _, s := range k.Status(ctx) {
			if s.PID == 0 {
				return fmt.Errorf("node %d exited during start; the end of %s says:\n%s", s.ID, k.LogFile(s.ID), k.logTail(s.ID))
			}
			ready = ready && s.Answers
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster did not answer within %s; see the node logs in %s", timeout, k.opts.Dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (k *Cluster) logTail(id int32) string {
	data, _ := os.ReadFile(k.LogFile(id))
	return cluster.Tail(data, 1500)
}

// DataDirInode returns the inode of node id's data dir: the kill proof
// shows it unchanged across a restart (same volume, same data).
func (k *Cluster) DataDirInode(id int32) (uint64, error) {
	return cluster.DataDirInode(k.Mount(id), k.DataDir(id))
}

// Dir is the cluster directory.
func (k *Cluster) Dir() string { return k.opts.Dir }

// kafkaKind is the Kafka cluster's kind in cluster.json.
const kafkaKind = "kafka"

// Grace implements Local: a node has 30 s to stop cleanly.
func (k *Cluster) Grace() time.Duration { return 30 * time.Second }

// ClientFlags implements Local: the brokers, and with --netns the Net the
// driver dials them through.
func (k *Cluster) ClientFlags() []cluster.Flag {
	flags := []cluster.Flag{{Name: "brokers", Value: strings.Join(k.Brokers(), ",")}}
	if k.prefix != "" {
		flags = append(flags, cluster.Flag{Name: "netns", Value: k.prefix})
	}
	return flags
}

// Health implements Local: a node is healthy when its client port accepts
// connections.
func (k *Cluster) Health(ctx context.Context) []cluster.NodeStatus {
	var out []cluster.NodeStatus
	for _, s := range k.Status(ctx) {
		ns := cluster.NodeStatus{ID: s.ID, PID: s.PID, Healthy: s.Answers, LazyFS: k.LazyFS(), LazyFSPID: s.LazyFSPID,
			Endpoints: []cluster.Endpoint{{Name: "client", Addr: s.ClientAddr}, {Name: "controller", Addr: s.ControllerAddr}}}
		if !s.Answers {
			ns.Health = "client port closed"
		}
		out = append(out, ns)
	}
	return out
}

// LocalLauncher is the local Kafka cluster's kind.
type LocalLauncher struct{}

// Kind implements Launcher.
func (LocalLauncher) Kind() string { return kafkaKind }

// OpensUnrecorded implements cluster.Unrecorded: a cluster.json written
// before clusters recorded a kind is Kafka's, the first local cluster.
func (LocalLauncher) OpensUnrecorded() {}

var (
	_ cluster.Unrecorded = LocalLauncher{}
	_ cluster.Demo       = LocalLauncher{}
)

// Missing implements cluster.Demo: Java runs the brokers, Maven fetches
// their jars.
func (LocalLauncher) Missing() ([]string, string) {
	var missing []string
	for _, t := range []struct{ bin, pkg string }{{"java", "default-jre-headless"}, {"mvn", "maven"}} {
		if _, err := exec.LookPath(t.bin); err != nil {
			missing = append(missing, t.bin+" (Debian/Ubuntu package "+t.pkg+")")
		}
	}
	return missing, "sudo apt-get install -y default-jre-headless maven"
}

// OpenDemo implements cluster.Demo: 3 nodes, client ports from basePort.
func (LocalLauncher) OpenDemo(dir string, basePort int) (cluster.Local, error) {
	return OpenCluster(ClusterOptions{Dir: dir, BasePort: basePort})
}

// Version implements cluster.Demo.
func (LocalLauncher) Version() string { return "Apache Kafka " + Version }

// Doc implements Launcher.
func (LocalLauncher) Doc() (string, string) {
	return "A local Apache Kafka " + Version + " cluster in KRaft mode (3 combined nodes by default)",
		`up fetches Apache Kafka ` + Version + ` from Maven Central with mvn (once, into a cache
outside any repository), formats KRaft storage, and starts the nodes on
127.0.0.1 with their own ports, data dirs, logs and PID files under --dir.
Replication factor 3 and min.insync.replicas=2 by default. With --lazyfs,
each node's data dir is served by ackcheck lazyfs (FUSE), which the
power-loss fault uses to drop what the node had not fsynced. With --netns,
each node runs in a network namespace of its own at 10.213.0.N (ports 9092
and 9093), for network faults; ackcheck reaches it through the namespaces'
hub, given --cluster-dir (or the --netns the ready line prints).`
}

// NewFlags implements Launcher.
func (LocalLauncher) NewFlags() cluster.LaunchFlags { return &kafkaFlags{} }

type kafkaFlags struct{ opts ClusterOptions }

func (f *kafkaFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.Nodes, "nodes", 0, "combined broker+controller nodes (default 3; fixed at the first up)")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its controller base+100+N-1 (default 29091)")
	fs.IntVar(&f.opts.HeapMB, "heap-mb", 0, "JVM heap per node in MiB (default 768)")
	fs.StringToStringVar(&f.opts.Props, "prop", nil, "extra server.properties for every node, k=v (at the first up)")
	fs.BoolVar(&f.opts.LazyFS, "lazyfs", false, "put each node's data dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	fs.BoolVar(&f.opts.NetNS, "netns", false, "run each node in a network namespace of its own at 10.213.0.N, for network faults (at the first up; needs root, ip and nft)")
	cluster.RegisterNetnsSubnet(fs, &f.opts.NetnsSubnet)
}

func (f *kafkaFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	return OpenCluster(o)
}

func (f *kafkaFlags) AfterUp(context.Context, *pflag.FlagSet, cluster.Local, io.Writer) error {
	return nil
}

// LazyFS reports whether the nodes' data dirs are on lazyfs.
func (k *Cluster) LazyFS() bool { return k.opts.LazyFS }

// mount is node id's lazyfs mount; nil when the cluster has none.
func (k *Cluster) Mount(id int32) *cluster.Mount {
	if !k.opts.LazyFS {
		return nil
	}
	return &cluster.Mount{ID: id, NodeDir: k.nodeDir(id), DataDir: k.DataDir(id), Binary: k.opts.LazyFSBinary,
		UpCmd: k.upCmd()}
}

// ControlSocket is node id's lazyfs control socket.
func (k *Cluster) ControlSocket(id int32) string {
	return cluster.Mount{NodeDir: k.nodeDir(id)}.Socket()
}

// CanLoseUnsynced reports whether node id's data dir is on lazyfs.
func (k *Cluster) CanLoseUnsynced(id int32) error {
	return cluster.CanLoseOnMount(k.Mount(id), k.opts.Dir, "kafka")
}

// LoseUnsynced makes node id's data dir lose every write not fsynced. The
// node's broker must be dead. It returns when the loss is complete, with
// what was lost.
func (k *Cluster) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := k.PID(id)
	if err != nil {
		return "", err
	}
	return cluster.LoseOnMount(ctx, k.Mount(id), k.opts.Dir, pid)
}

// SyncAll makes everything on every node's lazyfs durable, as a clean
// shutdown of the machines would. A no-op without lazyfs.
func (k *Cluster) SyncAll(ctx context.Context) error {
	var errs []error
	for _, id := range k.Nodes() {
		if m := k.Mount(id); m != nil {
			errs = append(errs, m.Sync(ctx))
		}
	}
	return errors.Join(errs...)
}
