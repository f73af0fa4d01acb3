package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Embed implements drivers.Embedder: an in-process kfake cluster of n
// brokers, for `ackcheck demo --embedded`. Its data stays in this one
// process: a demonstration of the pipeline, never a test of durability.
func (Profile) Embed(n int) (drivers.Embedded, error) { return StartEmbedded(n) }

// StartEmbedded starts an in-process kfake cluster of n brokers.
func StartEmbedded(n int) (*Embedded, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		return nil, fmt.Errorf("start the in-process broker (kfake): %w", err)
	}
	return newEmbedded(c), nil
}

// Embedded is an in-process kfake cluster whose brokers are nodes that
// faults act on (it implements faults.Nodes): a kill removes the broker
// from the cluster (its listener closes and its partitions elect other
// leaders), a start adds it back with the same ID on a new port.
type Embedded struct {
	c     *kfake.Cluster
	mu    sync.Mutex
	ports map[int32]int
	down  map[int32]bool
}

func newEmbedded(c *kfake.Cluster) *Embedded {
	n := &Embedded{c: c, ports: map[int32]int{}, down: map[int32]bool{}}
	for i, addr := range c.ListenAddrs() {
		var port int
		fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
		n.ports[int32(i)] = port
	}
	return n
}

// Addrs implements drivers.Embedded: the brokers' addresses when it
// started (a client learns later ones from the metadata).
func (n *Embedded) Addrs() []string { return n.c.ListenAddrs() }

// Close implements drivers.Embedded.
func (n *Embedded) Close() { n.c.Close() }

// IDs lists the brokers.
func (n *Embedded) IDs() []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids := make([]int32, 0, len(n.ports))
	for id := range int32(len(n.ports)) {
		ids = append(ids, id)
	}
	return ids
}

// PID is this process's while broker id runs, 0 while it is down.
func (n *Embedded) PID(_ context.Context, id int32) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.ports[id]; !ok {
		return 0, fmt.Errorf("no node %d", id)
	}
	if n.down[id] {
		return 0, nil
	}
	return os.Getpid(), nil
}

// Signal removes broker id from the cluster on SIGKILL or SIGTERM; other
// signals are refused.
func (n *Embedded) Signal(_ context.Context, id int32, sig syscall.Signal) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return 0, errors.New("the embedded broker can only be killed and started again")
	}
	if n.down[id] {
		return 0, fmt.Errorf("node %d is not running", id)
	}
	if err := n.c.RemoveNode(id); err != nil {
		return 0, err
	}
	n.down[id] = true
	return os.Getpid(), nil
}

// Stop removes broker id, as a kill does.
func (n *Embedded) Stop(ctx context.Context, id int32, _ time.Duration) error {
	_, err := n.Signal(ctx, id, syscall.SIGTERM)
	return err
}

// Start adds broker id back, on a new port: kfake keeps serving the
// removed broker's open connections, and a client that reconnected to the
// same address would reach the old broker; on a new address every client
// drops them.
func (n *Embedded) Start(_ context.Context, id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.down[id] {
		return nil
	}
	_, port, err := n.c.AddNode(id, 0)
	if err != nil {
		return err
	}
	n.ports[id] = port
	n.down[id] = false
	return nil
}

// DataDirInode is 0: the data is in this process's memory.
func (n *Embedded) DataDirInode(context.Context, int32) (uint64, error) { return 0, nil }

// Where implements drivers.Embedded.
func (n *Embedded) Where() string { return "in-process kfake (embedded demonstration)" }
