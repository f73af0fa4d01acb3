package kafka

import (
	"context"
	"io"
	"os/exec"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/pflag"
)

// LocalLauncher is the local Kafka cluster's kind; the demo's too.
type LocalLauncher struct{ cluster.Kit }

// launcher is the local KRaft cluster's.
var launcher = LocalLauncher{cluster.Kit{Name: kafkaKind, Flags: func() cluster.LaunchFlags { return &kafkaFlags{} },
	Short: "A local Apache Kafka " + Version + " cluster in KRaft mode (3 combined nodes by default)",
	Long: `up fetches Apache Kafka ` + Version + ` from Maven Central with mvn (once, into a cache
outside any repository), formats KRaft storage, and starts the nodes on
127.0.0.1 with their own ports, data dirs, logs and PID files under --dir.
Replication factor 3 and min.insync.replicas=2 by default. With --lazyfs,
each node's data dir is served by ackcheck lazyfs (FUSE), which the
power-loss fault uses to drop what the node had not fsynced. With --netns,
each node runs in a network namespace of its own at 10.213.0.N (ports 9092
and 9093), for network faults; ackcheck reaches it through the namespaces'
hub, given --cluster-dir (or the --netns the ready line prints).`}}

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
	return OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir}, BasePort: basePort})
}

// Version implements cluster.Demo.
func (LocalLauncher) Version() string { return "Apache Kafka " + Version }

type kafkaFlags struct{ opts ClusterOptions }

func (f *kafkaFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.Nodes, "nodes", 0, "combined broker+controller nodes (default 3; fixed at the first up)")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its controller base+100+N-1 (default 29091)")
	fs.IntVar(&f.opts.HeapMB, "heap-mb", 0, "JVM heap per node in MiB (default 768)")
	fs.StringToStringVar(&f.opts.Props, "prop", nil, "extra server.properties for every node, k=v (at the first up)")
	f.opts.Register(fs, cluster.FlagHelp{LazyFS: "each node's data dir", Netns: "each node in a network namespace of its own at 10.213.0.N"})
}

func (f *kafkaFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	return OpenCluster(o)
}

func (f *kafkaFlags) AfterUp(context.Context, *pflag.FlagSet, cluster.Local, io.Writer) error {
	return nil
}
