package queen

import (
	"context"
	"io"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/pflag"
)

// launcher is the local cluster's kind.
var launcher = cluster.Kit{Name: queenKind, Flags: func() cluster.LaunchFlags { return &queenFlags{} },
	Short: "A local Queen MQ server on PostgreSQL 15 (node 1: the Queen server, node 2: db)",
	Long: `up initializes a PostgreSQL cluster with Debian's initdb (as the user
postgres, trust authentication, 127.0.0.1 only), creates the database
queen, and starts the Queen server of --queen-home (queen-server and
schema/, as shared/queen/build.sh writes them) on 127.0.0.1, with PIDs,
logs and data under --dir. It returns once /health answers healthy.
--synchronous-commit off starts PostgreSQL with synchronous_commit=off; on
an existing cluster, it is switched by a clean restart of PostgreSQL.
With --lazyfs, PostgreSQL's data dir and Queen's file-buffer dir are each
served by ackcheck lazyfs (FUSE, allow_other), which the power-loss fault
uses to drop what was not fsynced.
With --netns, the server and PostgreSQL run in a network namespace of
their own (node 1's, at 10.213.0.1, made with ip and joined to a hub
namespace by a veth pair), for network faults: partition-client node:1
cuts every call of ackcheck's to both, and nothing between them. The
driver reaches them from the hub, given --cluster-dir (or the --netns the
ready line prints). down deletes the namespaces.`}

type queenFlags struct{ opts ClusterOptions }

func (f *queenFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.opts.Home, "queen-home", "", "directory with queen-server and schema/ (what shared/queen/build.sh writes); required at the first up")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "the Queen server's HTTP port; its UDP notifications use base+1, PostgreSQL base+2 (default 26632)")
	// The choice sets SynchronousCommitOff: its On is the knob's off.
	fs.Var(cluster.Choice{To: &f.opts.SynchronousCommitOff, Off: queenFsync.On, On: queenFsync.Off}, queenFsync.Flag, "PostgreSQL synchronous_commit: on (its default) or off; on an existing cluster, switched by a clean restart of PostgreSQL")
	f.opts.Register(fs, cluster.FlagHelp{LazyFS: "PostgreSQL's data dir and Queen's file-buffer dir each",
		Netns: "the server and PostgreSQL in a network namespace of their own at 10.213.0.1", Entries: true})
}

func (f *queenFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	return OpenCluster(o)
}

// AfterUp switches synchronous_commit on an existing cluster when
// --synchronous-commit asks for another value than it runs with.
func (f *queenFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	return cluster.SwitchFsync(ctx, fs, c, !f.opts.SynchronousCommitOff, progress)
}
