package pulsar

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
)

// Version is the Apache Pulsar release the local standalone runs.
const Version = "4.2.4"

// ClusterOptions configures a local Pulsar standalone. Zero values take
// defaults. Its Dir holds:
//
//	<dir>/cluster.json         kind, ports, version
//	<dir>/standalone.conf      broker and bookie settings
//	<dir>/log4j2.properties
//	<dir>/data/                metadata (RocksDB) and bookie data (a
//	                           lazyfs mount with LazyFS, over data.backing)
//	<dir>/pulsar.log           stdout and stderr of the JVM
//	<dir>/pid                  the PID of the running JVM
//
// With NetNS the standalone runs in a network namespace of its own (node 1
// of a netns.Net named after Dir, cluster.NetnsPrefix, recorded in
// cluster.json), listening on 10.213.0.1 at the same ports; only the
// Net's hub reaches it. It advertises 127.0.0.1 at the broker port: inside
// its namespace that is its own loopback (its internal client and health
// check use it), and on the client side it is where the driver's
// forwarder (netns.Forwarder, dialling from the hub) listens, so the
// lookups' answers lead the client back through the hub.
//
// What cluster.json records of the options (the JSON names) wins over
// what is given.
type ClusterOptions struct {
	cluster.Options `json:"-"`
	// BrokerPort is the binary protocol port (default 26650); the admin
	// and web port is WebPort (default 28080); the bookie BookiePort
	// (default 23181), its admin API BookieHTTPPort (default BookiePort +
	// 1000).
	BrokerPort     int `json:"broker_port"`
	WebPort        int `json:"web_port"`
	BookiePort     int `json:"bookie_port"`
	BookieHTTPPort int `json:"bookie_http_port,omitempty"`
	// HeapMB is the JVM heap (default 1024).
	HeapMB int `json:"heap_mb"`
	// CacheDir holds the jars fetched from Maven Central (default as for
	// Kafka).
	CacheDir string `json:"cache_dir"`
	// JournalSyncData is the bookie's journalSyncData: true (Pulsar's
	// default) fsyncs the journal before a write is acknowledged. Set when
	// the standalone is created; SetJournalSyncData switches it.
	JournalSyncData *bool `json:"journal_sync_data"`
}

const pulsarKind = "pulsar"

var pulsarSpec = cluster.Spec{Kind: pulsarKind, Name: "Pulsar standalone", Noun: "standalone", Flat: true,
	Log: "pulsar.log", Grace: 60 * time.Second, Ready: 3 * time.Minute, PortHint: "other ports"}

// Cluster is a local Apache Pulsar standalone: broker, bookie and metadata
// store in one JVM, node 1 to the fault injector.
type Cluster struct {
	cluster.Base
	opts ClusterOptions
}

var _ cluster.FsyncSwitch = (*Cluster)(nil)

// pulsarFile is what <dir>/cluster.json records.
type pulsarFile struct {
	cluster.Record
	Version string `json:"version"`
	*ClusterOptions
}

// OpenCluster returns the standalone in opts.Dir; a directory that already
// holds one keeps its recorded ports.
func OpenCluster(opts ClusterOptions) (*Cluster, error) {
	p := &Cluster{opts: opts}
	o := &p.opts
	if err := p.Open(p, &o.Options, pulsarSpec, &pulsarFile{ClusterOptions: o}); err != nil {
		return nil, err
	}
	o.BrokerPort, o.WebPort, o.BookiePort = cluster.Or(o.BrokerPort, 26650), cluster.Or(o.WebPort, 28080), cluster.Or(o.BookiePort, 23181)
	o.BookieHTTPPort = cluster.Or(o.BookieHTTPPort, o.BookiePort+1000)
	o.HeapMB, o.CacheDir = cluster.Or(o.HeapMB, 1024), cluster.Or(o.CacheDir, cluster.DefaultCacheDir())
	if o.JournalSyncData == nil {
		t := true
		o.JournalSyncData = &t
	}
	return p, nil
}

// ProbePort implements cluster.InNetns: the broker's binary protocol
// port, which the clients' connections use. 0 without --netns.
func (p *Cluster) ProbePort() int { return p.InNet(p.opts.BrokerPort) }

// bookieHTTPPort is the bookie's admin API port (by default the bookie
// port + 1000).
func (p *Cluster) bookieHTTPPort() int { return p.opts.BookieHTTPPort }

func (p *Cluster) url(scheme string, port int) string {
	return fmt.Sprintf("%s://%s:%d", scheme, p.Host(1), port)
}

// BookieHTTPURL is the bookie's admin API, which reports the bookie's
// configuration as it runs (journalSyncData).
func (p *Cluster) BookieHTTPURL() string { return p.url("http", p.bookieHTTPPort()) }

// ServiceURL is the binary protocol address (pulsar://).
func (p *Cluster) ServiceURL() string { return p.url("pulsar", p.opts.BrokerPort) }

// AdminURL is the admin REST address (http://).
func (p *Cluster) AdminURL() string { return p.url("http", p.opts.WebPort) }

// Nodes is the standalone's one node, ID 1.
func (p *Cluster) Nodes() []int32 { return []int32{1} }

func (p *Cluster) libDir() string {
	return filepath.Join(p.opts.CacheDir, "pulsar-"+Version, "libs")
}
func (p *Cluster) confFile() string  { return filepath.Join(p.Dir(), "standalone.conf") }
func (p *Cluster) log4jFile() string { return filepath.Join(p.Dir(), "log4j2.properties") }

// Marker implements cluster.Broker: the standalone's directory, as a
// system property of the JVM.
func (p *Cluster) Marker(int32) string { return "-Dpulsar.standalone.dir=" + p.Dir() + "\x00" }

// Prepare implements cluster.Preparer: it fetches Pulsar's broker
// (standalone mode included) and its runtime dependencies from Maven
// Central with mvn, once, and checks for java.
func (p *Cluster) Prepare(ctx context.Context) error {
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
	if done, err := os.ReadFile(filepath.Join(home, "fetched.pom.xml")); err != nil || string(done) != pom {
		if err := os.RemoveAll(libs); err != nil {
			return err
		}
		if err := cluster.FetchMaven(ctx, home, pom, "Apache Pulsar "+Version); err != nil {
			return err
		}
		// The jars are durable before the record that says the cache is
		// complete.
		if err := cluster.WriteFileDurable(filepath.Join(home, "fetched.pom.xml"), []byte(pom), 0o644, nil); err != nil {
			return err
		}
	}
	return cluster.NeedJava("Apache Pulsar")
}

// standaloneConf is the broker's and the bookie's configuration: the
// standalone reads both from one file. Sized for 2 cores: no functions
// worker, no stream storage, small caches. In its own namespace the
// broker listens on every address it has (its loopback, which it
// advertises and its internal client uses, and its address in the Net),
// and so does the bookie's admin API, read through the hub.
func (p *Cluster) standaloneConf() string {
	bind := "127.0.0.1"
	if p.Net() != nil {
		bind = "0.0.0.0"
	}
	props := map[string]string{
		"clusterName":                       "standalone",
		"bindAddress":                       bind,
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
	if p.Net() != nil {
		props["httpServerHost"] = "0.0.0.0"
	}
	return drivers.Properties(props)
}

// Start implements cluster.Starter: the standalone started, ready, and
// what it wrote while starting made durable (ready).
func (p *Cluster) Start(ctx context.Context) error {
	if err := cluster.StartNodes(ctx, p); err != nil {
		return err
	}
	if err := p.WaitReady(ctx, pulsarSpec.Ready); err != nil {
		return err
	}
	return p.syncStarted(ctx)
}

// syncStarted makes what the standalone wrote while starting durable, as
// on a machine that has run for a while since: on lazyfs nothing becomes
// durable without an fsync, and BookKeeper writes its cookie without one,
// so a power loss right after the first start would leave a bookie that
// cannot start at all. A power loss is meant to test the run's writes.
func (p *Cluster) syncStarted(ctx context.Context) error { return p.SyncAll(ctx) }

// Create implements cluster.Broker: the standalone's files.
func (p *Cluster) Create(ctx context.Context) error {
	ports := []int{p.opts.BrokerPort, p.opts.WebPort, p.opts.BookiePort}
	if p.Net() != nil {
		// Its own address holds the rest; the client side's forwarder
		// listens on 127.0.0.1 at the broker port.
		ports = ports[:1]
	}
	for _, port := range ports {
		if err := p.PortsFree("127.0.0.1:" + strconv.Itoa(port)); err != nil {
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
	if err := cluster.WriteFileDurable(p.log4jFile(), []byte(cluster.Log4j2), 0o644, nil); err != nil {
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
	return p.WriteRecord(&pulsarFile{Version: Version, ClusterOptions: &p.opts})
}

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
	err := p.Restart(ctx, "change journalSyncData", func() error {
		p.opts.JournalSyncData = &sync
		return p.writeFiles()
	})
	if err != nil {
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
	args := cluster.JavaArgs(p.libDir(), p.log4jFile(), p.opts.HeapMB, "-XX:MaxDirectMemorySize=1g",
		strings.TrimSuffix(p.Marker(1), "\x00"), // names this standalone in its command line
		"org.apache.pulsar.PulsarStandaloneStarter",
		"--config", p.confFile(),
		"--metadata-dir", filepath.Join(p.DataDir(1), "metadata"),
		"--bookkeeper-dir", filepath.Join(p.DataDir(1), "bookkeeper"),
		"--bookkeeper-port", strconv.Itoa(p.opts.BookiePort),
		"--advertised-address", "127.0.0.1",
		"--no-functions-worker", "--no-stream-storage")
	return p.Launch(ctx, 1, p.Dir(), nil, append([]string{"java"}, args...)...)
}

// Healthy implements cluster.Broker: the broker passes its own health
// check (it writes and reads a message through the bookie) and the
// namespace ackcheck's topics live in, public/default, exists. A fresh
// standalone makes that namespace after its broker serves: a topic
// created in between fails with "Namespace not found" (CI, a standalone
// up in 12 s).
func (p *Cluster) Healthy(ctx context.Context, _ int32) error {
	resp, body, err := p.Get(ctx, p.AdminURL()+"/admin/v2/brokers/health", 5*time.Second)
	if err != nil {
		return err
	}
	if text := strings.TrimSpace(string(body)); resp.StatusCode != 200 || text != "ok" {
		return fmt.Errorf("health check: %s %s", resp.Status, text)
	}
	resp, body, err = p.Get(ctx, p.AdminURL()+"/admin/v2/namespaces/public", 5*time.Second)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"public/default"`) {
		return fmt.Errorf("namespace public/default not made yet: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Endpoints implements cluster.Broker.
func (p *Cluster) Endpoints(int32) []cluster.Endpoint {
	return []cluster.Endpoint{{Name: "service", Addr: p.ServiceURL()}, {Name: "admin", Addr: p.AdminURL()}}
}

// ClientFlags implements Local.
func (p *Cluster) ClientFlags() []cluster.Flag {
	return p.WithNetns(cluster.Flag{Name: "service-url", Value: p.ServiceURL()}, cluster.Flag{Name: "admin-url", Value: p.AdminURL()},
		cluster.Flag{Name: "bookie-http-url", Value: p.BookieHTTPURL()})
}

// pulsarFsync is the bookie's journalSyncData, --journal-sync-data of
// cluster pulsar up.
var pulsarFsync = cluster.FsyncKnob{Setting: "journalSyncData", Flag: "journal-sync-data", Off: "false", On: "true",
	How: "a clean restart"}

// FsyncKnob implements FsyncSwitch.
func (p *Cluster) FsyncKnob() cluster.FsyncKnob { return pulsarFsync }

// FsyncOn implements FsyncSwitch.
func (p *Cluster) FsyncOn() bool { return p.JournalSyncData() }

// SetFsync implements FsyncSwitch.
func (p *Cluster) SetFsync(ctx context.Context, on bool) error { return p.SetJournalSyncData(ctx, on) }
