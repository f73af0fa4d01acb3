package pulsar

import (
	"context"
	"io"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/pflag"
)

// launcher is the local cluster's kind.
var launcher = cluster.Kit{Name: pulsarKind, Flags: func() cluster.LaunchFlags { return &pulsarFlags{} },
	Short: "A local Apache Pulsar " + Version + " standalone (broker, bookie and metadata store in one JVM)",
	Long: `up fetches Apache Pulsar ` + Version + ` (pulsar-broker, which holds standalone mode, and
its dependencies) from Maven Central with mvn, once, into a cache outside
any repository, writes standalone.conf, and starts the standalone on
127.0.0.1 with its PID file, log and data under --dir. It returns once the
broker passes its health check (a write and a read through the bookie).
The standalone is node 1.
With --netns, it runs in a network namespace of its own at 10.213.0.1
(same ports), for network faults (partition-client node:1: a client-side
cut); ackcheck reaches it through the namespaces' hub, given --cluster-dir,
its binary protocol through a forwarder the driver opens on 127.0.0.1 at
the broker port (the address the broker advertises), which must be free.`}

type pulsarFlags struct {
	opts        ClusterOptions
	journalSync bool
}

func (f *pulsarFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.BrokerPort, "broker-port", 0, "binary protocol port (default 26650; fixed at the first up)")
	fs.IntVar(&f.opts.WebPort, "web-port", 0, "admin and web port (default 28080)")
	fs.IntVar(&f.opts.BookiePort, "bookie-port", 0, "bookie port (default 23181)")
	fs.IntVar(&f.opts.BookieHTTPPort, "bookie-http-port", 0, "bookie admin API port (default the bookie port + 1000)")
	fs.IntVar(&f.opts.HeapMB, "heap-mb", 0, "JVM heap in MiB (default 1024)")
	fs.BoolVar(&f.journalSync, pulsarFsync.Flag, true, "bookie journalSyncData: fsync the journal before acking; on an existing standalone, switched by a clean restart")
	f.opts.Register(fs, cluster.FlagHelp{LazyFS: "the data dir", Netns: "the standalone in a network namespace of its own at 10.213.0.1", Entries: true})
}

func (f *pulsarFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	if !f.journalSync {
		v := false
		o.JournalSyncData = &v
	}
	return OpenCluster(o)
}

// AfterUp switches journalSyncData on an existing standalone when
// --journal-sync-data asks for another value than it runs with.
func (f *pulsarFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	return cluster.SwitchFsync(ctx, fs, c, f.journalSync, progress)
}
