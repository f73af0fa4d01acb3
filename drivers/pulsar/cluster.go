package pulsar

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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/spf13/pflag"
)

// Version is the Apache Pulsar release the local standalone runs.
const Version = "4.2.4"

// ClusterOptions configures a local Pulsar standalone. Zero values take
// defaults.
type ClusterOptions struct {
	// Dir holds the standalone:
	//
	//	<dir>/cluster.json         kind, ports, version
	//	<dir>/standalone.conf      broker and bookie settings
	//	<dir>/log4j2.properties
	//	<dir>/data/                metadata (RocksDB) and bookie data (a
	//	                           lazyfs mount with LazyFS, over data.backing)
	//	<dir>/pulsar.log           stdout and stderr of the JVM
	//	<dir>/pid                  the PID of the running JVM
	Dir string
	// BrokerPort is the binary protocol port (default 26650); the admin
	// and web port is WebPort (default 28080); the bookie BookiePort
	// (default 23181).
	BrokerPort, WebPort, BookiePort int
	// CacheDir holds the jars fetched from Maven Central (default as for
	// Kafka).
	CacheDir string
	// HeapMB is the JVM heap (default 1024).
	HeapMB int
	// JournalSyncData is the bookie's journalSyncData: true (Pulsar's
	// default) fsyncs the journal before a write is acknowledged. Set when
	// the standalone is created; SetJournalSyncData switches it.
	JournalSyncData *bool
	// LazyFS puts the data dir on ackcheck lazyfs (power-loss), with
	// LazyFSEntries as its directory-entry mode ("" for strict).
	LazyFS        bool
	LazyFSBinary  string
	LazyFSEntries string
	// NetNS runs the standalone in a network namespace of its own (node 1
	// of a netns.Net named after Dir, cluster.NetnsPrefix, recorded in
	// cluster.json), listening on 10.213.0.1 at the same ports; only the
	// Net's hub reaches it. It advertises 127.0.0.1 at the broker port:
	// inside its namespace that is its own loopback (its internal client
	// and health check use it), and on the client side it is where the
	// driver's forwarder (netns.Forwarder, dialling from the hub) listens,
	// so the lookups' answers lead the client back through the hub. Fixed
	// when the standalone is created.
	NetNS bool
	// NetnsSubnet is the subnet of the network namespaces with NetNS
	// (zero: netns.DefaultSubnet). Fixed when the cluster is created.
	NetnsSubnet netip.Prefix
}

// Cluster is a local Apache Pulsar standalone: broker, bookie and metadata
// store in one JVM, node 1 to the fault injector.
type Cluster struct {
	opts ClusterOptions
	// prefix names the standalone's network namespaces; "" without --netns.
	prefix string
	// subnet is the Net\'s subnet (zero: netns.DefaultSubnet).
	subnet netip.Prefix
}

type pulsarFile struct {
	Kind            string `json:"kind"`
	Version         string `json:"version"`
	BrokerPort      int    `json:"broker_port"`
	WebPort         int    `json:"web_port"`
	BookiePort      int    `json:"bookie_port"`
	HeapMB          int    `json:"heap_mb"`
	CacheDir        string `json:"cache_dir"`
	JournalSyncData bool   `json:"journal_sync_data"`
	LazyFS          bool   `json:"lazyfs,omitempty"`
	LazyFSBin       string `json:"lazyfs_binary,omitempty"`
	LazyFSMode      string `json:"lazyfs_entries,omitempty"`
	// NetNS is the prefix of the standalone's network namespaces, "" when
	// it runs in the machine's own.
	NetNS string `json:"netns,omitempty"`
	// NetnsSubnet is their subnet, "" for netns.DefaultSubnet.
	NetnsSubnet string `json:"netns_subnet,omitempty"`
}

// OpenCluster returns the standalone in opts.Dir; a directory that already
// holds one keeps its recorded ports.
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
		var pf pulsarFile
		if err := json.Unmarshal(data, &pf); err != nil || pf.Kind != pulsarKind {
			return nil, fmt.Errorf("%s holds no Pulsar standalone (cluster.json: kind %q, %v)", dir, pf.Kind, err)
		}
		opts.BrokerPort, opts.WebPort, opts.BookiePort, opts.HeapMB = pf.BrokerPort, pf.WebPort, pf.BookiePort, pf.HeapMB
		opts.JournalSyncData = &pf.JournalSyncData
		opts.LazyFS, opts.LazyFSEntries = pf.LazyFS, pf.LazyFSMode
		if opts.LazyFSBinary == "" {
			opts.LazyFSBinary = pf.LazyFSBin
		}
		if opts.CacheDir == "" {
			opts.CacheDir = pf.CacheDir
		}
		if opts.NetNS && pf.NetNS == "" {
			return nil, fmt.Errorf("the standalone in %s was created without --netns: take it down and remove the directory to create one in a network namespace", dir)
		}
		prefix = pf.NetNS
		if subnet, err = cluster.ReadNetnsSubnet(pf.NetnsSubnet); err != nil {
			return nil, fmt.Errorf("%s/%w", dir, err)
		}
		opts.NetNS = prefix != ""
	}
	if opts.BrokerPort == 0 {
		opts.BrokerPort = 26650
	}
	if opts.WebPort == 0 {
		opts.WebPort = 28080
	}
	if opts.BookiePort == 0 {
		opts.BookiePort = 23181
	}
	if opts.HeapMB == 0 {
		opts.HeapMB = 1024
	}
	if opts.JournalSyncData == nil {
		t := true
		opts.JournalSyncData = &t
	}
	if opts.CacheDir == "" {
		opts.CacheDir = cluster.DefaultCacheDir()
	}
	return &Cluster{opts: opts, prefix: prefix, subnet: subnet}, nil
}

// Net implements cluster.InNetns: the standalone's network namespaces
// (node 1 and the hub); nil when it was started without --netns.
func (p *Cluster) Net() *netns.Net {
	if p.prefix == "" {
		return nil
	}
	return &netns.Net{Prefix: p.prefix, Nodes: p.Nodes(), Subnet: p.subnet}
}

// ProbePort implements cluster.InNetns: the broker's binary protocol
// port, which the clients' connections use. 0 without --netns.
func (p *Cluster) ProbePort() int {
	if p.prefix == "" {
		return 0
	}
	return p.opts.BrokerPort
}

var _ cluster.InNetns = (*Cluster)(nil)

// host is where the standalone listens as the client side reaches it: its
// address in the Net, or loopback.
func (p *Cluster) host() string {
	if nt := p.Net(); nt != nil {
		return nt.NodeAddr(1).String()
	}
	return "127.0.0.1"
}

// httpClient reaches the admin and bookie ports: through the Net's hub
// when the standalone runs in a namespace.
func (p *Cluster) httpClient() *http.Client {
	nt := p.Net()
	if nt == nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: nt.Dial}}
}

// upCmd is the command that brings this standalone up, for messages.
func (p *Cluster) upCmd() string {
	cmd := "ackcheck cluster pulsar up --dir " + p.opts.Dir
	if p.prefix != "" {
		cmd += " --netns"
	}
	return cmd
}

// bookieHTTPPort is the bookie's admin API port: the bookie port + 1000.
func (p *Cluster) bookieHTTPPort() int { return p.opts.BookiePort + 1000 }

// BookieHTTPURL is the bookie's admin API, which reports the bookie's
// configuration as it runs (journalSyncData).
func (p *Cluster) BookieHTTPURL() string {
	return fmt.Sprintf("http://%s:%d", p.host(), p.bookieHTTPPort())
}

// ServiceURL is the binary protocol address (pulsar://).
func (p *Cluster) ServiceURL() string {
	return fmt.Sprintf("pulsar://%s:%d", p.host(), p.opts.BrokerPort)
}

// AdminURL is the admin REST address (http://).
func (p *Cluster) AdminURL() string { return fmt.Sprintf("http://%s:%d", p.host(), p.opts.WebPort) }

// Dir is the standalone's directory.
func (p *Cluster) Dir() string { return p.opts.Dir }

// Nodes is the standalone's one node, ID 1.
func (p *Cluster) Nodes() []int32 { return []int32{1} }

func (p *Cluster) libDir() string {
	return filepath.Join(p.opts.CacheDir, "pulsar-"+Version, "libs")
}
func (p *Cluster) pidFile() string  { return filepath.Join(p.opts.Dir, "pid") }
func (p *Cluster) confFile() string { return filepath.Join(p.opts.Dir, "standalone.conf") }

// LogFile is the JVM's output.
func (p *Cluster) LogFile() string { return filepath.Join(p.opts.Dir, "pulsar.log") }

// DataDir holds the metadata store and the bookie's journal and ledgers:
// the one node's (a standalone has one), named for file faults.
func (p *Cluster) DataDir(int32) string { return filepath.Join(p.opts.Dir, "data") }

// Fetch downloads Pulsar's broker (standalone mode included) and its
// runtime dependencies from Maven Central with mvn, once.
func (p *Cluster) Fetch(ctx context.Context) error {
	libs := p.libDir()
	home := filepath.Dir(libs)
	// pulsar-broker's dependencies, as Maven mediates them, mix
	// OpenTelemetry 1.56 and 1.62 (the broker then fails with
	// NoSuchMethodError) and log4j 2.18 with a 2.25 slf4j bridge: the
	// BOMs and explicit versions keep each family in step.
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ackcheck</groupId><artifactId>pulsar-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency><groupId>io.opentelemetry</groupId><artifactId>opentelemetry-bom</artifactId><version>1.62.0</version><type>pom</type><scope>import</scope></dependency>
      <dependency><groupId>io.opentelemetry</groupId><artifactId>opentelemetry-bom-alpha</artifactId><version>1.62.0-alpha</version><type>pom</type><scope>import</scope></dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar-broker</artifactId><version>` + Version + `</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>2.25.4</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.25.4</version></dependency>
    <dependency><groupId>org.apache.bookkeeper.http</groupId><artifactId>vertx-http-server</artifactId><version>4.17.3</version></dependency>
  </dependencies>
</project>
`
	// The cache is complete when the pom that filled it is recorded beside
	// it; any other pom (an older ackcheck's) means fetch again.
	if done, err := os.ReadFile(filepath.Join(home, "fetched.pom.xml")); err == nil && string(done) == pom {
		return nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return errors.New("mvn not found: install Maven (and Java 17) to fetch Apache Pulsar from Maven Central")
	}
	if err := cluster.MkdirAllDurable(home, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(libs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, "pom.xml"), []byte(pom), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "dependency:copy-dependencies",
		"-DoutputDirectory=libs", "-DincludeScope=runtime")
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fetch Pulsar %s with mvn: %w\n%s", Version, err, cluster.Tail(out, 2000))
	}
	// mvn does not fsync the jars: they are durable before the record
	// that says the cache is complete.
	if err := cluster.SyncTree(libs); err != nil {
		return err
	}
	return cluster.WriteFileDurable(filepath.Join(home, "fetched.pom.xml"), []byte(pom), 0o644, nil)
}

// standaloneConf is the broker's and the bookie's configuration: the
// standalone reads both from one file. Sized for 2 cores: no functions
// worker, no stream storage, small caches.
func (p *Cluster) standaloneConf() string {
	props := map[string]string{
		"clusterName":                       "standalone",
		"bindAddress":                       p.bindAddress(),
		"advertisedAddress":                 "127.0.0.1",
		"brokerServicePort":                 strconv.Itoa(p.opts.BrokerPort),
		"webServicePort":                    strconv.Itoa(p.opts.WebPort),
		"managedLedgerDefaultEnsembleSize":  "1",
		"managedLedgerDefaultWriteQuorum":   "1",
		"managedLedgerDefaultAckQuorum":     "1",
		"managedLedgerCacheSizeMB":          "64",
		"allowAutoTopicCreation":            "false",
		"brokerDeleteInactiveTopicsEnabled": "false",
		"numIOThreads":                      "2",
		"numHttpServerThreads":              "4",
		"journalSyncData":                   strconv.FormatBool(*p.opts.JournalSyncData),
		"httpServerEnabled":                 "true", // the bookie's admin API: its configuration as it runs
		"httpServerClass":                   "org.apache.bookkeeper.http.vertx.VertxHttpServer",
		"httpServerPort":                    strconv.Itoa(p.bookieHTTPPort()),
		"dbStorage_writeCacheMaxSizeMb":     "64",
		"dbStorage_readAheadCacheMaxSizeMb": "32",
		"functionsWorkerEnabled":            "false",
		"systemTopicEnabled":                "false",
		"topicLevelPoliciesEnabled":         "false",
	}
	if p.prefix != "" {
		// The bookie's too: its admin API is read through the hub.
		props["httpServerHost"] = "0.0.0.0"
	}
	var b bytes.Buffer
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}

// bindAddress is where the broker listens: loopback, or in its own
// namespace every address it has (its loopback, which it advertises and
// its internal client uses, and its address in the Net).
func (p *Cluster) bindAddress() string {
	if p.prefix != "" {
		return "0.0.0.0"
	}
	return "127.0.0.1"
}

// Up fetches Pulsar if needed, writes the standalone's files (once) and
// starts it unless it runs. It returns when the broker passes its health
// check, or with the log lines that say why not.
func (p *Cluster) Up(ctx context.Context) error {
	// Before anything is fetched or made: root, ip, nft, a free subnet.
	if p.prefix != "" {
		if err := cluster.NetnsUpPreflight(ctx, p.prefix, p.subnet); err != nil {
			return err
		}
	}
	if err := p.Fetch(ctx); err != nil {
		return err
	}
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found: install Java 17 to run Apache Pulsar")
	}
	if err := p.create(ctx); err != nil {
		return err
	}
	if p.prefix != "" {
		// Before the standalone starts: it is started inside its namespace.
		if _, err := cluster.EnsureNet(ctx, p.prefix, p.subnet, p.Nodes()); err != nil {
			return err
		}
	}
	if err := cluster.StartNodes(ctx, p); err != nil {
		return err
	}
	if err := p.WaitReady(ctx, 3*time.Minute); err != nil {
		return err
	}
	return p.syncStarted(ctx)
}

// syncStarted makes what the standalone wrote while starting durable, as
// on a machine that has run for a while since: on lazyfs nothing becomes
// durable without an fsync, and BookKeeper writes its cookie without one,
// so a power loss right after the first start would leave a bookie that
// cannot start at all. A power loss is meant to test the run's writes.
func (p *Cluster) syncStarted(ctx context.Context) error {
	if m := p.Mount(1); m != nil {
		return m.Sync(ctx)
	}
	return nil
}

func (p *Cluster) create(ctx context.Context) error {
	meta := filepath.Join(p.opts.Dir, "cluster.json")
	if _, err := os.Stat(meta); err == nil {
		return nil
	}
	ports := []int{p.opts.BrokerPort, p.opts.WebPort, p.opts.BookiePort}
	if p.prefix != "" {
		// Its own address holds the rest; the client side's forwarder
		// listens on 127.0.0.1 at the broker port.
		ports = ports[:1]
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return fmt.Errorf("port %d is taken: stop what uses it or pass other ports", port)
		}
		l.Close()
	}
	if p.opts.LazyFS && p.opts.LazyFSBinary == "" {
		var err error
		if p.opts.LazyFSBinary, err = cluster.LazyBinary(); err != nil {
			return err
		}
	}
	if m := p.Mount(1); m != nil {
		if err := m.Start(ctx); err != nil {
			return err
		}
	}
	if err := cluster.MkdirAllDurable(p.DataDir(1), 0o755); err != nil {
		return err
	}
	if err := cluster.WriteFileDurable(filepath.Join(p.opts.Dir, "log4j2.properties"), []byte(log4j), 0o644, nil); err != nil {
		return err
	}
	return p.writeFiles()
}

// writeFiles writes standalone.conf and then cluster.json, each durably:
// once cluster.json is, so is everything it describes.
func (p *Cluster) writeFiles() error {
	if err := cluster.WriteFileDurable(p.confFile(), []byte(p.standaloneConf()), 0o644, nil); err != nil {
		return err
	}
	return p.writeClusterJSON()
}

// writeClusterJSON records the standalone's options.
func (p *Cluster) writeClusterJSON() error {
	pf := pulsarFile{Kind: pulsarKind, Version: Version, BrokerPort: p.opts.BrokerPort, WebPort: p.opts.WebPort,
		BookiePort: p.opts.BookiePort, HeapMB: p.opts.HeapMB, CacheDir: p.opts.CacheDir, JournalSyncData: *p.opts.JournalSyncData,
		LazyFS: p.opts.LazyFS, LazyFSBin: p.opts.LazyFSBinary, LazyFSMode: p.opts.LazyFSEntries, NetNS: p.prefix, NetnsSubnet: cluster.NetnsSubnetText(p.subnet)}
	data, _ := json.MarshalIndent(pf, "", "  ")
	return cluster.WriteFileDurable(filepath.Join(p.opts.Dir, "cluster.json"), data, 0o644, nil)
}

// mount is the data dir's lazyfs mount; nil when the standalone has none.
func (p *Cluster) Mount(int32) *cluster.Mount {
	if !p.opts.LazyFS {
		return nil
	}
	return &cluster.Mount{ID: 1, NodeDir: p.opts.Dir, DataDir: p.DataDir(1), Binary: p.opts.LazyFSBinary,
		UpCmd: p.upCmd(), Entries: p.opts.LazyFSEntries}
}

// LazyFS reports whether the data dir is on lazyfs.
func (p *Cluster) LazyFS() bool { return p.opts.LazyFS }

// JournalSyncData reports the bookie's journalSyncData.
func (p *Cluster) JournalSyncData() bool { return *p.opts.JournalSyncData }

// SetJournalSyncData switches the bookie's journalSyncData: the standalone
// stops cleanly, its lazyfs mount, if any, is synced (a clean shutdown
// keeps everything), standalone.conf is rewritten, and it starts again.
// It returns once the broker passes its health check. A no-op when the
// setting is already in force.
func (p *Cluster) SetJournalSyncData(ctx context.Context, sync bool) error {
	if *p.opts.JournalSyncData == sync {
		return nil
	}
	err := cluster.RestartClean(ctx, p, 60*time.Second, "change journalSyncData", func() error {
		p.opts.JournalSyncData = &sync
		return p.writeFiles()
	})
	if err != nil {
		return err
	}
	if err := p.WaitReady(ctx, 3*time.Minute); err != nil {
		return err
	}
	return p.syncStarted(ctx)
}

// StartNode starts the standalone on its existing data, detached, and
// records its PID. It does not wait for it to serve.
func (p *Cluster) StartNode(ctx context.Context, id int32) error {
	if id != 1 {
		return fmt.Errorf("the standalone has one node, 1 (not %d)", id)
	}
	if pid, _ := p.PID(1); pid != 0 {
		return fmt.Errorf("the standalone already runs as PID %d", pid)
	}
	if m := p.Mount(1); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	heap := fmt.Sprintf("%dm", p.opts.HeapMB)
	args := []string{"-cp", filepath.Join(p.libDir(), "*"), "-Xms" + heap, "-Xmx" + heap, "-XX:+UseG1GC",
		"-XX:MaxDirectMemorySize=1g", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(p.opts.Dir, "log4j2.properties"),
		strings.TrimSuffix(p.marker(), "\x00"), // names this standalone in its command line
		"org.apache.pulsar.PulsarStandaloneStarter",
		"--config", p.confFile(),
		"--metadata-dir", filepath.Join(p.DataDir(1), "metadata"),
		"--bookkeeper-dir", filepath.Join(p.DataDir(1), "bookkeeper"),
		"--bookkeeper-port", strconv.Itoa(p.opts.BookiePort),
		"--advertised-address", "127.0.0.1",
		"--no-functions-worker", "--no-stream-storage",
	}
	if nt := p.Net(); nt != nil {
		if err := cluster.NeedNet(ctx, p.prefix, p.upCmd()); err != nil {
			return err
		}
		// ip netns exec execs java in place: the PID is the JVM's.
		cmd := nt.Command(context.WithoutCancel(ctx), 1, "java", args...)
		cmd.Dir = p.opts.Dir
		return cluster.StartDetachedIn(cmd, p.LogFile(), p.pidFile(), "the Pulsar standalone", "java")
	}
	cmd := exec.Command("java", args...)
	cmd.Dir = p.opts.Dir
	return cluster.StartDetached(cmd, p.LogFile(), p.pidFile(), "the Pulsar standalone")
}

// PID returns the standalone's JVM, or 0 if it does not run. Only a
// process whose command line names this directory counts.
func (p *Cluster) PID(int32) (int, error) { return cluster.PIDFrom(p.pidFile(), p.marker()) }

func (p *Cluster) marker() string { return "-Dpulsar.standalone.dir=" + p.opts.Dir + "\x00" }

// Signal sends sig to the standalone's JVM.
func (p *Cluster) Signal(id int32, sig syscall.Signal) (int, error) {
	return cluster.SignalPIDFile(p.pidFile(), p.marker(), "the Pulsar standalone", sig)
}

// StopNode stops the standalone with SIGTERM, SIGKILL after grace, and
// waits for it to be gone.
func (p *Cluster) StopNode(ctx context.Context, id int32, grace time.Duration) error {
	return cluster.StopPIDFile(ctx, p.pidFile(), p.marker(), grace)
}

// Down stops the standalone, then deletes its network namespaces, if
// any. They stay while it may still run in one, so that a second down
// finds them again.
func (p *Cluster) Down(ctx context.Context) error {
	if err := cluster.StopNodes(ctx, p, 60*time.Second); err != nil {
		return err
	}
	if nt := p.Net(); nt != nil {
		if err := nt.Delete(ctx); err != nil {
			return fmt.Errorf("delete the standalone's network namespaces %s-*: %w (remove them with `ip netns delete`)", p.prefix, err)
		}
	}
	return nil
}

// Healthy reports whether the broker passes its own health check (it
// writes and reads a message through the bookie).
func (p *Cluster) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.AdminURL()+"/admin/v2/brokers/health", nil)
	resp, err := p.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != 200 || strings.TrimSpace(body.String()) != "ok" {
		return fmt.Errorf("health check: %s %s", resp.Status, strings.TrimSpace(body.String()))
	}
	return nil
}

// WaitReady waits until the standalone runs and passes its health check.
func (p *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if pid, _ := p.PID(1); pid == 0 {
			data, _ := os.ReadFile(p.LogFile())
			return fmt.Errorf("the Pulsar standalone exited during start; the end of %s says:\n%s", p.LogFile(), cluster.Tail(data, 2500))
		}
		if last = p.Healthy(ctx); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Pulsar standalone did not pass its health check within %s (%v); see %s", timeout, last, p.LogFile())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// DataDirInode is the inode of the data dir (kill proof).
func (p *Cluster) DataDirInode(int32) (uint64, error) {
	return cluster.DataDirInode(p.Mount(1), p.DataDir(1))
}

// CanLoseUnsynced reports whether the standalone's data dir is on lazyfs.
func (p *Cluster) CanLoseUnsynced(id int32) error {
	return cluster.CanLoseOnMount(p.Mount(1), p.opts.Dir, "pulsar")
}

// LoseUnsynced makes the data dir lose every write not fsynced (a
// standalone created with LazyFS). The standalone must be dead.
func (p *Cluster) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := p.PID(id)
	if err != nil {
		return "", err
	}
	return cluster.LoseOnMount(ctx, p.Mount(1), p.opts.Dir, pid)
}

// ClusterStatus is the standalone as Status sees it.
type ClusterStatus struct {
	PID        int    `json:"pid"`
	ServiceURL string `json:"service_url"`
	AdminURL   string `json:"admin_url"`
	Healthy    bool   `json:"healthy"`
	Health     string `json:"health,omitempty"`
	LazyFSPID  int    `json:"lazyfs_pid,omitempty"`
}

// Status reports the PID, addresses and health.
func (p *Cluster) Status(ctx context.Context) ClusterStatus {
	pid, _ := p.PID(1)
	s := ClusterStatus{PID: pid, ServiceURL: p.ServiceURL(), AdminURL: p.AdminURL()}
	if m := p.Mount(1); m != nil {
		s.LazyFSPID = m.PID()
	}
	if pid != 0 {
		if err := p.Healthy(ctx); err != nil {
			s.Health = err.Error()
		} else {
			s.Healthy = true
		}
	}
	return s
}

const pulsarKind = "pulsar"

// Grace implements Local: the standalone has 60 s to stop cleanly.
func (p *Cluster) Grace() time.Duration { return 60 * time.Second }

// ClientFlags implements Local.
func (p *Cluster) ClientFlags() []cluster.Flag {
	flags := []cluster.Flag{{Name: "service-url", Value: p.ServiceURL()}, {Name: "admin-url", Value: p.AdminURL()}, {Name: "bookie-http-url", Value: p.BookieHTTPURL()}}
	if p.prefix != "" {
		flags = append(flags, cluster.Flag{Name: "netns", Value: p.prefix})
	}
	return flags
}

// Health implements Local: the standalone is healthy when the broker's
// health check (a write and a read through the bookie) passes.
func (p *Cluster) Health(ctx context.Context) []cluster.NodeStatus {
	s := p.Status(ctx)
	health := s.Health
	if s.PID == 0 {
		health = "not running"
	}
	return []cluster.NodeStatus{{ID: 1, PID: s.PID, Healthy: s.Healthy, Health: health, LazyFS: p.LazyFS(), LazyFSPID: s.LazyFSPID,
		Endpoints: []cluster.Endpoint{{Name: "service", Addr: s.ServiceURL}, {Name: "admin", Addr: s.AdminURL}}}}
}

var _ cluster.FsyncSwitch = (*Cluster)(nil)

// FsyncSetting implements FsyncSwitch.
func (p *Cluster) FsyncSetting() string { return "journalSyncData" }

// FsyncOn implements FsyncSwitch.
func (p *Cluster) FsyncOn() bool { return p.JournalSyncData() }

// SetFsync implements FsyncSwitch.
func (p *Cluster) SetFsync(ctx context.Context, on bool) error { return p.SetJournalSyncData(ctx, on) }

// FsyncValue implements FsyncSwitch.
func (p *Cluster) FsyncValue(on bool) string { return strconv.FormatBool(on) }

// FsyncFlags implements FsyncSwitch.
func (p *Cluster) FsyncFlags(on bool) string { return fmt.Sprintf("--journal-sync-data=%v", on) }

// LocalLauncher is the local Pulsar standalone's kind.
type LocalLauncher struct{}

// Kind implements Launcher.
func (LocalLauncher) Kind() string { return pulsarKind }

// Doc implements Launcher.
func (LocalLauncher) Doc() (string, string) {
	return "A local Apache Pulsar " + Version + " standalone (broker, bookie and metadata store in one JVM)",
		`up fetches Apache Pulsar ` + Version + ` (pulsar-broker, which holds standalone mode, and
its dependencies) from Maven Central with mvn, once, into a cache outside
any repository, writes standalone.conf, and starts the standalone on
127.0.0.1 with its PID file, log and data under --dir. It returns once the
broker passes its health check (a write and a read through the bookie).
The standalone is node 1.
With --netns, it runs in a network namespace of its own at 10.213.0.1
(same ports), for network faults (partition-client node:1: a client-side
cut); ackcheck reaches it through the namespaces' hub, given --cluster-dir,
its binary protocol through a forwarder the driver opens on 127.0.0.1 at
the broker port (the address the broker advertises), which must be free.`
}

// NewFlags implements Launcher.
func (LocalLauncher) NewFlags() cluster.LaunchFlags { return &pulsarFlags{} }

type pulsarFlags struct {
	opts        ClusterOptions
	journalSync bool
}

func (f *pulsarFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.BrokerPort, "broker-port", 0, "binary protocol port (default 26650; fixed at the first up)")
	fs.IntVar(&f.opts.WebPort, "web-port", 0, "admin and web port (default 28080)")
	fs.IntVar(&f.opts.BookiePort, "bookie-port", 0, "bookie port (default 23181)")
	fs.IntVar(&f.opts.HeapMB, "heap-mb", 0, "JVM heap in MiB (default 1024)")
	fs.BoolVar(&f.journalSync, "journal-sync-data", true, "bookie journalSyncData: fsync the journal before acking; on an existing standalone, switched by a clean restart")
	fs.BoolVar(&f.opts.LazyFS, "lazyfs", false, "put the data dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	fs.StringVar(&f.opts.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (lazyfs's default) or journal (any fsync commits every directory change, as ext4 and XFS do)")
	fs.BoolVar(&f.opts.NetNS, "netns", false, "run the standalone in a network namespace of its own at 10.213.0.1, for network faults (at the first up; needs root, ip and nft)")
	cluster.RegisterNetnsSubnet(fs, &f.opts.NetnsSubnet)
}

func (f *pulsarFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	if o.LazyFSEntries != "" && o.LazyFSEntries != "strict" && o.LazyFSEntries != "journal" {
		return nil, fmt.Errorf("--lazyfs-entries %q: use strict or journal", o.LazyFSEntries)
	}
	if !f.journalSync {
		v := false
		o.JournalSyncData = &v
	}
	return OpenCluster(o)
}

// AfterUp switches journalSyncData on an existing standalone when
// --journal-sync-data asks for another value than it runs with.
func (f *pulsarFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	p := c.(*Cluster)
	if !fs.Changed("journal-sync-data") || p.JournalSyncData() == f.journalSync {
		return nil
	}
	fmt.Fprintf(progress, "switching journalSyncData to %v (a clean restart) ...\n", f.journalSync)
	return p.SetJournalSyncData(ctx, f.journalSync)
}

// log4j is the standalone's log4j2.properties: the same console format as
// the Kafka launcher's, which the log oracles read.
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
`
