package nats

import (
	"context"
	"io"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/pflag"
)

// launcher is the local cluster's kind.
var launcher = cluster.Kit{Name: natsKind, Flags: func() cluster.LaunchFlags { return &natsFlags{} },
	Short: "A local NATS JetStream cluster (nats-server " + Version + ", 3 nodes by default)",
	Long: `up builds nats-server ` + Version + ` from the Go module proxy with go install (once,
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
it through the namespaces' hub, given --cluster-dir.`}

type natsFlags struct{ opts ClusterOptions }

func (f *natsFlags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.Nodes, "nodes", 0, "nodes (default 3; fixed at the first up)")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its routes base+100+N-1, its monitoring base+200+N-1 (default 24222)")
	fs.Var(cluster.Choice{To: &f.opts.SyncAlways, Off: natsFsync.Off, On: natsFsync.On}, natsFsync.Flag, "jetstream sync_interval: default (the server's, 2m) or always; on an existing cluster, switched by a clean restart")
	f.opts.Register(fs, cluster.FlagHelp{LazyFS: "each node's store dir", Netns: "each node in a network namespace of its own at 10.213.0.N", Entries: true})
}

func (f *natsFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	return OpenCluster(o)
}

// AfterUp switches sync_interval on an existing cluster when --sync asks
// for another value than it runs with.
func (f *natsFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	return cluster.SwitchFsync(ctx, fs, c, f.opts.SyncAlways, progress)
}
