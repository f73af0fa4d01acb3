package faults

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/remote"
)

// Nodes controls the broker processes of a cluster: the seam between a
// fault and wherever the brokers run. A local cluster implements it
// (Local); an SSH runner will, for brokers on other machines.
type Nodes interface {
	// IDs lists the nodes, as the broker numbers them.
	IDs() []int32
	// PID is the node's broker process now, 0 when it does not run.
	PID(ctx context.Context, id int32) (int, error)
	// Signal sends sig to the node's broker process and returns its PID.
	Signal(ctx context.Context, id int32, sig syscall.Signal) (int, error)
	// Stop shuts the node down cleanly (SIGTERM), killing it after grace.
	Stop(ctx context.Context, id int32, grace time.Duration) error
	// Start starts the node again on its data dir. It does not wait for
	// the broker to answer.
	Start(ctx context.Context, id int32) error
	// DataDirInode is the inode of the node's data dir (kill proof).
	DataDirInode(ctx context.Context, id int32) (uint64, error)
	// Where says where the nodes run, for reports.
	Where() string
}

// TimedSignaler is implemented by Nodes whose signals travel to another
// machine (SSH). SignalTimed is Signal that also says when the signal is
// known to have gone out: by sent, the local time its command came back,
// and no more than within before that. A local signal is a syscall of a
// few microseconds, so local Nodes do not implement it.
type TimedSignaler interface {
	SignalTimed(ctx context.Context, id int32, sig syscall.Signal) (pid int, sent time.Time, within time.Duration, err error)
}

// PowerLosser is implemented by Nodes whose data dirs can lose what was
// not fsynced (ackcheck lazyfs). LoseUnsynced must be called only while the
// node's broker is dead; it returns when the loss is complete, with a
// one-line summary of what was lost.
type PowerLosser interface {
	LoseUnsynced(ctx context.Context, id int32) (string, error)
	// CanLoseUnsynced says up front, without touching the node, whether
	// its data can lose unsynced writes (a lazyfs mount, a lose_command),
	// and if not, what to do.
	CanLoseUnsynced(id int32) error
}

// LocalCluster is a cluster ackcheck started on this machine (`ackcheck
// cluster <broker> up`): every cluster.Local, whose launchers live in
// each broker's directory (drivers/<broker>/cluster.go).
type LocalCluster interface {
	Nodes() []int32
	PID(id int32) (int, error)
	Signal(id int32, sig syscall.Signal) (int, error)
	StopNode(ctx context.Context, id int32, grace time.Duration) error
	StartNode(ctx context.Context, id int32) error
	DataDirInode(id int32) (uint64, error)
	Dir() string
	LoseUnsynced(ctx context.Context, id int32) (string, error)
	CanLoseUnsynced(id int32) error
}

// Local is a local cluster started by `ackcheck cluster ... up`.
type Local struct{ Cluster LocalCluster }

var (
	_ Nodes     = Local{}
	_ FileNodes = Local{}
)

// IDs implements Nodes.
func (l Local) IDs() []int32 { return l.Cluster.Nodes() }

// PID implements Nodes.
func (l Local) PID(_ context.Context, id int32) (int, error) { return l.Cluster.PID(id) }

// Signal implements Nodes.
func (l Local) Signal(_ context.Context, id int32, sig syscall.Signal) (int, error) {
	return l.Cluster.Signal(id, sig)
}

// Stop implements Nodes.
func (l Local) Stop(ctx context.Context, id int32, grace time.Duration) error {
	return l.Cluster.StopNode(ctx, id, grace)
}

// Start implements Nodes.
func (l Local) Start(ctx context.Context, id int32) error { return l.Cluster.StartNode(ctx, id) }

// DataDirInode implements Nodes.
func (l Local) DataDirInode(_ context.Context, id int32) (uint64, error) {
	return l.Cluster.DataDirInode(id)
}

// Where implements Nodes.
func (l Local) Where() string { return "local cluster in " + l.Cluster.Dir() }

// CanLoseUnsynced implements PowerLosser.
func (l Local) CanLoseUnsynced(id int32) error { return l.Cluster.CanLoseUnsynced(id) }

// LoseUnsynced implements PowerLosser for a cluster started with --lazyfs.
func (l Local) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	return l.Cluster.LoseUnsynced(ctx, id)
}

// NodeNames implements NodeNamer for a local cluster whose nodes have
// names (Queen's db); nil otherwise.
func (l Local) NodeNames() map[int32]string {
	if nn, ok := l.Cluster.(NodeNamer); ok {
		return nn.NodeNames()
	}
	return nil
}

// dataDirNamer is a local cluster whose launcher names each node's data
// dir (Kafka's and NATS's).
type dataDirNamer interface {
	DataDir(id int32) string
}

// DataDirOn implements FileNodes for a local cluster whose launcher names
// its nodes' data dirs; commands run on this machine.
func (l Local) DataDirOn(id int32) (string, remote.Runner, error) {
	dn, ok := l.Cluster.(dataDirNamer)
	if !ok {
		return "", nil, fmt.Errorf("the local cluster in %s does not name its nodes' data dirs: file faults cannot reach them", l.Cluster.Dir())
	}
	if !slices.Contains(l.Cluster.Nodes(), id) {
		return "", nil, fmt.Errorf("node %d is not one of the cluster's nodes %v", id, l.Cluster.Nodes())
	}
	return dn.DataDir(id), remote.Local{}, nil
}
