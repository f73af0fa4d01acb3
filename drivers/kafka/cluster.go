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
// The lifecycle (up, down, stop, start, lazyfs, netns) is cluster.Base's;
// this file holds what is Kafka's own. A node's process counts only while
// its command line still names that node's server.properties: a stale pid
// file never stops somebody else's process.

package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
)

// Version is the Apache Kafka release the local cluster runs.
const Version = "4.3.1"

// ClusterOptions configures a local Kafka cluster. Zero values take
// defaults. With NetNS, BasePort is unused.
// What cluster.json records of them (the JSON names) wins over what is
// given.
type ClusterOptions struct {
	cluster.Options `json:"-"`
	// Nodes is the number of combined broker+controller nodes. Default 3.
	Nodes int `json:"nodes"`
	// BasePort is node 1's client port; node N listens on BasePort+N-1 for
	// clients and BasePort+100+N-1 for the controller quorum. Default 29091.
	BasePort int `json:"base_port"`
	// HeapMB is each JVM's heap. Default 768: three nodes and ackcheck on a
	// 2-core, 24 GiB machine leave most memory to the page cache.
	HeapMB int `json:"heap_mb"`
	// CacheDir holds the jars fetched from Maven Central, outside any
	// repository. Default $XDG_CACHE_HOME/ackcheck or ~/.cache/ackcheck.
	CacheDir string `json:"cache_dir"`
	// Props are extra server.properties for every node (they override the
	// defaults written by Up). Not recorded.
	Props map[string]string `json:"-"`
}

// The ports of every node inside a Net: each node has its own address,
// so all use the same ones.
const (
	netnsClientPort     = 9092
	netnsControllerPort = 9093
)

// kafkaKind is the Kafka cluster's kind in cluster.json.
const kafkaKind = "kafka"

var kafkaSpec = cluster.Spec{Kind: kafkaKind, Name: "Kafka cluster", Noun: "cluster", Unrecorded: true,
	Log: "kafka.log", Grace: 30 * time.Second, Ready: 90 * time.Second, PortHint: "another --base-port"}

// Cluster is a local Kafka cluster. Its methods are safe to call from one
// goroutine at a time.
type Cluster struct {
	cluster.Base
	opts ClusterOptions
}

var _ cluster.InNetns = (*Cluster)(nil)

// clusterFile is what <dir>/cluster.json records.
type clusterFile struct {
	cluster.Record
	Version   string `json:"version"`
	ClusterID string `json:"cluster_id"`
	*ClusterOptions
}

// OpenCluster returns the cluster in opts.Dir. If the directory already holds
// a cluster, its recorded ports and node count win over opts.
func OpenCluster(opts ClusterOptions) (*Cluster, error) {
	k := &Cluster{opts: opts}
	o := &k.opts
	if err := k.Open(k, &o.Options, kafkaSpec, &clusterFile{ClusterOptions: o}); err != nil {
		return nil, err
	}
	o.Nodes, o.BasePort, o.HeapMB = cluster.Or(o.Nodes, 3), cluster.Or(o.BasePort, 29091), cluster.Or(o.HeapMB, 768)
	o.CacheDir = cluster.Or(o.CacheDir, cluster.DefaultCacheDir())
	return k, nil
}

// ProbePort implements cluster.InNetns: the inter-broker listener's
// port (PLAINTEXT, which the brokers replicate over), the same on every
// node. 0 without --netns.
func (k *Cluster) ProbePort() int { return k.InNet(netnsClientPort) }

// Nodes returns the node IDs, 1..N.
func (k *Cluster) Nodes() []int32 { return cluster.NodeIDs(k.opts.Nodes) }

// Brokers returns the client addresses of every node.
func (k *Cluster) Brokers() []string {
	var out []string
	for _, id := range k.Nodes() {
		out = append(out, k.clientAddr(id))
	}
	return out
}

// addr is node id's address at port, or at BasePort+offset+id-1 on
// loopback without --netns.
func (k *Cluster) addr(id int32, port, offset int) string {
	if k.Net() == nil {
		port = k.opts.BasePort + offset + int(id) - 1
	}
	return net.JoinHostPort(k.Host(id), strconv.Itoa(port))
}

func (k *Cluster) clientAddr(id int32) string     { return k.addr(id, netnsClientPort, 0) }
func (k *Cluster) controllerAddr(id int32) string { return k.addr(id, netnsControllerPort, 100) }

func (k *Cluster) propsFile(id int32) string {
	return filepath.Join(k.NodeDir(id), "server.properties")
}

// Marker implements cluster.Broker: a node's server.properties.
func (k *Cluster) Marker(id int32) string { return k.propsFile(id) }

func (k *Cluster) libDir() string {
	return filepath.Join(k.opts.CacheDir, "kafka-"+Version, "libs")
}

// ToolsJars is the directory of the jars of Kafka's tools
// (org.apache.kafka:kafka-tools with its runtime dependencies, which
// Prepare fetches beside the broker's): `java -cp ToolsJars/*
// org.apache.kafka.tools.DumpLogSegments` is bin/kafka-dump-log.sh, the
// account of a segment's batches and CRCs that the corruption truths hold
// ackcheck's against. Kept apart from the broker's classpath, which the
// tools would grow by Kafka Connect's 45 jars.
func (k *Cluster) ToolsJars() string {
	return filepath.Join(k.opts.CacheDir, "kafka-"+Version+"-tools", "libs")
}

func (k *Cluster) log4jFile() string { return filepath.Join(k.Dir(), "log4j2.properties") }

// Prepare implements cluster.Preparer: it fetches Kafka's jars and their
// runtime dependencies from Maven Central with mvn, once (later calls
// find them in the cache), and checks for java.
func (k *Cluster) Prepare(ctx context.Context) error {
	libs := k.libDir()
	m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-"+Version+".jar"))
	s, _ := filepath.Glob(filepath.Join(libs, "log4j-slf4j-impl-*.jar"))
	if len(m) != 1 || len(s) != 1 {
		// log4j-slf4j-impl routes Kafka's slf4j logging into log4j2, so
		// that each node writes a readable kafka.log.
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
		if err := cluster.FetchMaven(ctx, filepath.Dir(libs), pom, "Apache Kafka "+Version); err != nil {
			return err
		}
	}
	tools := k.ToolsJars()
	if t, _ := filepath.Glob(filepath.Join(tools, "kafka-tools-"+Version+".jar")); len(t) != 1 {
		pom := `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ackcheck</groupId><artifactId>kafka-tools-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>` + Version + `</version></dependency>
  </dependencies>
</project>
`
		if err := cluster.FetchMaven(ctx, filepath.Dir(tools), pom, "Apache Kafka "+Version+"'s tools"); err != nil {
			return err
		}
	}
	return cluster.NeedJava("Apache Kafka")
}

func (k *Cluster) java(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "java", cluster.JavaArgs(k.libDir(), k.log4jFile(), 0, args...)...)
}

// log4j quiets Kafka's state-change and request loggers.
const log4j = cluster.Log4j2 + `logger.state.name = state.change.logger
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
	rf, isr := strconv.Itoa(min(3, k.opts.Nodes)), strconv.Itoa(min(2, k.opts.Nodes))
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
		"default.replication.factor":               rf,
		"min.insync.replicas":                      isr,
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            isr,
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

// Create implements cluster.Broker: it writes the cluster's files and
// formats each node's storage.
func (k *Cluster) Create(ctx context.Context) error {
	if k.Net() == nil { // in a Net the addresses are its own: nothing else can hold them
		for _, id := range k.Nodes() {
			if err := k.PortsFree(k.clientAddr(id), k.controllerAddr(id)); err != nil {
				return err
			}
		}
	}
	if err := cluster.MkdirAllDurable(k.Dir(), 0o755); err != nil {
		return err
	}
	if err := cluster.WriteFileDurable(k.log4jFile(), []byte(log4j), 0o644, nil); err != nil {
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
	for _, id := range k.Nodes() {
		if err := cluster.MkdirAllDurable(k.DataDir(id), 0o755); err != nil {
			return err
		}
		if m := k.Mount(id); m != nil {
			if err := m.Start(ctx); err != nil {
				return err
			}
		}
		if err := cluster.WriteFileDurable(k.propsFile(id), []byte(drivers.Properties(k.serverProps(id))), 0o644, nil); err != nil {
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
	return k.WriteRecord(&clusterFile{Version: Version, ClusterID: clusterID, ClusterOptions: &k.opts})
}

// StartNode starts node id on its existing data dir, detached, and records
// its PID. It does not wait for the node to answer (see WaitReady).
func (k *Cluster) StartNode(ctx context.Context, id int32) error {
	args := cluster.JavaArgs(k.libDir(), k.log4jFile(), k.opts.HeapMB, "-XX:MaxGCPauseMillis=20", "kafka.Kafka", k.propsFile(id))
	return k.Launch(ctx, id, "", nil, append([]string{"java"}, args...)...)
}

// Healthy implements cluster.Broker: a node answers when its client port
// accepts connections (through the Net's hub with --netns).
func (k *Cluster) Healthy(ctx context.Context, id int32) error {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c, err := k.Dial(ctx, "tcp", k.clientAddr(id))
	if err != nil {
		return fmt.Errorf("client port closed (%v)", err)
	}
	return c.Close()
}

// Endpoints implements cluster.Broker.
func (k *Cluster) Endpoints(id int32) []cluster.Endpoint {
	return []cluster.Endpoint{{Name: "client", Addr: k.clientAddr(id)}, {Name: "controller", Addr: k.controllerAddr(id)}}
}

// ClientFlags implements Local: the brokers, and with --netns the Net the
// driver dials them through.
func (k *Cluster) ClientFlags() []cluster.Flag {
	return k.WithNetns(cluster.Flag{Name: "brokers", Value: strings.Join(k.Brokers(), ",")})
}
