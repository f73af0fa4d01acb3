package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
)

// A local Queen MQ cluster: one queen-server (node 1) on one PostgreSQL 15
// (node 2, "db"), both on 127.0.0.1:
//
//	<dir>/cluster.json        ports, the Queen home, lazyfs, synchronous_commit
//	<dir>/node1/pid           queen-server's PID
//	<dir>/node1/queen.log     its output
//	<dir>/node1/data/         its file buffer (FILE_BUFFER_DIR)
//	<dir>/node2/data/         PostgreSQL's data dir (PGDATA; its PID is in postmaster.pid)
//	<dir>/node2/pg.log        PostgreSQL's log
//	<dir>/node2/sock/         PostgreSQL's Unix socket
//
// With --netns (ClusterOptions.NetNS) both run in one network namespace of
// their own, node 1's of a netns.Net named after the directory
// (cluster.NetnsPrefix, recorded in cluster.json): the Queen server
// listens on 10.213.0.1 (and the namespace's loopback), PostgreSQL on
// 10.213.0.1 and the namespace's 127.0.0.1, where the server reaches it.
// Nothing of either is reachable from the machine's own namespace: every
// call of ackcheck's (the cluster's readiness checks, the driver's load,
// read-back and admin calls) is dialled from the Net's hub, so that a
// client-side cut (partition-client node:1) cuts all of them and nothing
// between the server and its database. The ports are the same as without
// --netns (BasePort and the two after it).
//
// PostgreSQL runs as the Debian user postgres (initdb refuses root); with
// --lazyfs each data dir is its own lazyfs mount, served to other users
// (allow_other). The Queen server is the binary that shared/queen/build.sh
// writes, run from its home so that it finds ./schema. The lifecycle is
// cluster.Base's; PostgreSQL's own process handling is postgres.go's.

const queenKind = "queen"

var queenSpec = cluster.Spec{Kind: queenKind, Name: "Queen cluster", Noun: "cluster", NetNodes: []int32{ServerNode},
	Log: "queen.log", Grace: 30 * time.Second, Ready: 3 * time.Minute}

// ClusterOptions configure a local Queen cluster.
// What cluster.json records of them (the JSON names) wins over what is
// given.
type ClusterOptions struct {
	cluster.Options `json:"-"`
	// Home holds queen-server and schema/ (build.sh's output). Required at
	// the first up.
	Home string `json:"queen_home"`
	// BasePort is the Queen server's HTTP port; its UDP notification port
	// is BasePort+1 and PostgreSQL's BasePort+2. Default 26632.
	BasePort int `json:"base_port"`
	// SynchronousCommitOff starts PostgreSQL with synchronous_commit=off
	// (its default is on).
	SynchronousCommitOff bool `json:"synchronous_commit_off,omitempty"`
}

// queenFile is what <dir>/cluster.json records.
type queenFile struct {
	cluster.Record
	*ClusterOptions
}

// Cluster is a local Queen MQ cluster.
type Cluster struct {
	cluster.Base
	opts ClusterOptions
}

var _ cluster.FsyncSwitch = (*Cluster)(nil)

// OpenCluster returns the cluster in opts.Dir; one that exists keeps what it
// recorded.
func OpenCluster(opts ClusterOptions) (*Cluster, error) {
	q := &Cluster{opts: opts}
	o := &q.opts
	// A cluster.json written while it was on records no
	// synchronous_commit_off: what it records wins, absent or not.
	o.SynchronousCommitOff = false
	err := q.Open(q, &o.Options, queenSpec, &queenFile{ClusterOptions: o})
	if !q.Recorded() {
		o.SynchronousCommitOff = opts.SynchronousCommitOff
	}
	if err == nil && o.Home != "" {
		o.Home, err = filepath.Abs(o.Home)
	}
	o.BasePort = cluster.Or(o.BasePort, 26632)
	if err != nil {
		return nil, err
	}
	return q, nil
}

// ProbePort implements cluster.InNetns: the Queen server's HTTP port,
// which the partition proof connects to. 0 without --netns.
func (q *Cluster) ProbePort() int { return q.InNet(q.opts.BasePort) }

// host is where ackcheck reaches both nodes: 10.213.0.1 in the Net, else
// the machine's loopback.
func (q *Cluster) host() string { return q.Host(ServerNode) }

// Nodes implements Local: the database first, then the Queen server, in
// the order they must start (a power loss of both starts them so).
func (q *Cluster) Nodes() []int32 { return []int32{DBNode, ServerNode} }

// NodeNames names the nodes for fault targets (db) and reports.
func (q *Cluster) NodeNames() map[int32]string {
	return map[int32]string{ServerNode: "queen", DBNode: "db"}
}

// URL is the Queen server's HTTP address.
func (q *Cluster) URL() string {
	return "http://" + net.JoinHostPort(q.host(), strconv.Itoa(q.opts.BasePort))
}

// PostgresURL reaches the database the queues live in.
func (q *Cluster) PostgresURL() string {
	return fmt.Sprintf("postgres://postgres@%s/queen?sslmode=disable", net.JoinHostPort(q.host(), strconv.Itoa(q.pgPort())))
}

func (q *Cluster) pgPort() int         { return q.opts.BasePort + 2 }
func (q *Cluster) pgLog() string       { return filepath.Join(q.NodeDir(DBNode), "pg.log") }
func (q *Cluster) pgSocketDir() string { return filepath.Join(q.NodeDir(DBNode), "sock") }
func (q *Cluster) pgConf() string      { return filepath.Join(q.DataDir(DBNode), "ackcheck.conf") }
func (q *Cluster) queenBinary() string { return filepath.Join(q.opts.Home, "queen-server") }

// Marker implements cluster.Broker: the server's binary, PostgreSQL's -D
// and data dir.
func (q *Cluster) Marker(id int32) string {
	if id == DBNode {
		return "-D\x00" + q.DataDir(DBNode) + "\x00"
	}
	return q.queenBinary() + "\x00"
}

// LogFile is the node's own log.
func (q *Cluster) LogFile(id int32) string {
	if id == DBNode {
		return q.pgLog()
	}
	return q.Base.LogFile(id)
}

// Start implements cluster.Starter: the database first (the Queen server
// creates its schema in it as it starts), then the server, and returns
// once both answer.
func (q *Cluster) Start(ctx context.Context) error {
	if err := cluster.StartNodes(ctx, q); err != nil {
		return err
	}
	if pid, _ := q.PID(ServerNode); pid != 0 {
		// A server started while its database could not answer runs on
		// without serving (Queen 0.15 does not retry its connections at
		// start): restart it on the database that answers now.
		if err := q.waitServer(ctx, 20*time.Second); err != nil {
			if err := q.StopNode(ctx, ServerNode, q.Grace()); err != nil {
				return err
			}
			if err := q.StartNode(ctx, ServerNode); err != nil {
				return err
			}
		}
	}
	return q.WaitReady(ctx, queenSpec.Ready)
}

// checkHome fails, saying how to build one, unless the Queen home holds
// the server and its schema.
func (q *Cluster) checkHome() error {
	h := q.opts.Home
	if h == "" {
		return fmt.Errorf("--queen-home is required at the first up: the directory shared/queen/build.sh wrote (queen-server and schema/)")
	}
	if _, err := os.Stat(q.queenBinary()); err != nil {
		return fmt.Errorf("--queen-home %s has no queen-server: build it with shared/queen/build.sh %s (%v)", h, h, err)
	}
	if _, err := os.Stat(filepath.Join(h, "schema", "schema.sql")); err != nil {
		return fmt.Errorf("--queen-home %s has no schema/schema.sql: build it with shared/queen/build.sh %s", h, h)
	}
	return nil
}

// Create implements cluster.Broker: the directories, cluster.json, and a
// PostgreSQL cluster (initdb, ackcheck's settings, the database queen),
// left running.
func (q *Cluster) Create(ctx context.Context) error {
	if err := q.checkHome(); err != nil {
		return err
	}
	bin, err := pgBin()
	if err != nil {
		return err
	}
	// Before any node starts (PostgreSQL does, here): each is started
	// inside the namespace.
	if err := q.EnsureNet(ctx); err != nil {
		return err
	}
	if err := q.makeDirs(ctx); err != nil {
		return err
	}
	if err := q.record(); err != nil {
		return err
	}
	if m := q.Mount(DBNode); m != nil {
		if err := m.Start(ctx); err != nil {
			return err
		}
	}
	if err := q.initDB(ctx, bin); err != nil {
		return err
	}
	if err := q.StartNode(ctx, DBNode); err != nil {
		return err
	}
	if err := q.waitDB(ctx, time.Minute, "postgres"); err != nil {
		return err
	}
	return q.createDB(ctx)
}

func (q *Cluster) record() error {
	return q.WriteRecord(&queenFile{ClusterOptions: &q.opts})
}

// StartNode implements Local: PostgreSQL through pg_ctl, the Queen server
// once a database that runs answers. A node that runs is left as it is.
// It does not wait for the node to answer.
func (q *Cluster) StartNode(ctx context.Context, id int32) error {
	if pid, _ := q.PID(id); pid != 0 {
		return nil
	}
	switch id {
	case DBNode:
		return q.startDB(ctx)
	case ServerNode:
		// The server connects to its database once, at start: wait for a
		// database that runs to answer (one recovering from a crash takes
		// a while). One that does not run is the fault's to report.
		if pid, _ := q.PID(DBNode); pid != 0 {
			if err := q.waitDB(ctx, 3*time.Minute, "queen"); err != nil {
				return fmt.Errorf("start the Queen server: %w", err)
			}
		}
		host := "127.0.0.1"
		if q.Net() != nil {
			host = "0.0.0.0" // every address of the namespace: its loopback and 10.213.0.1
		}
		env := []string{fmt.Sprintf("PORT=%d", q.opts.BasePort), "HOST=" + host,
			fmt.Sprintf("QUEEN_UDP_NOTIFY_PORT=%d", q.opts.BasePort+1),
			"PG_HOST=127.0.0.1", fmt.Sprintf("PG_PORT=%d", q.pgPort()), "PG_USER=postgres", "PG_PASSWORD=postgres", "PG_DB=queen",
			"NUM_WORKERS=2", "DB_POOL_SIZE=40", "SIDECAR_POOL_SIZE=16", "LOG_LEVEL=info",
			"FILE_BUFFER_DIR=" + q.DataDir(ServerNode)}
		// It loads ./schema from its working directory.
		return q.Launch(ctx, ServerNode, q.opts.Home, env, q.queenBinary())
	}
	return fmt.Errorf("no node %d: the Queen cluster has 1 (the server) and 2 (db)", id)
}

// PID implements Local: the Queen server's process, or PostgreSQL's
// postmaster.
func (q *Cluster) PID(id int32) (int, error) {
	switch id {
	case ServerNode:
		return q.Base.PID(id)
	case DBNode:
		return q.postmasterPID()
	}
	return 0, fmt.Errorf("no node %d", id)
}

// LoseUnsynced implements Local.
func (q *Cluster) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	if pid, err := q.PID(id); err == nil && pid == 0 && id == DBNode {
		// The postmaster is gone; its backends may not be yet.
		if err := q.waitBackendsGone(ctx); err != nil {
			return "", err
		}
	}
	return q.Base.LoseUnsynced(ctx, id)
}

// Healthy implements cluster.Broker: the Queen server's /health says
// healthy, or PostgreSQL runs a query.
func (q *Cluster) Healthy(ctx context.Context, id int32) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if id == DBNode {
		return q.pingDB(ctx, "queen")
	}
	_, body, err := q.Get(ctx, q.URL()+"/health", 3*time.Second)
	if err != nil {
		return err
	}
	var h struct {
		Status   string `json:"status"`
		Database string `json:"database"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("/health: %s", cluster.Tail(body, 200))
	}
	if h.Status != "healthy" {
		return fmt.Errorf("/health: status %q, database %q", h.Status, h.Database)
	}
	return nil
}

// WaitReady waits until both nodes answer.
func (q *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	if err := q.waitDB(ctx, timeout, "queen"); err != nil {
		return err
	}
	return q.waitServer(ctx, timeout)
}

// waitServer waits until the Queen server says it is healthy.
func (q *Cluster) waitServer(ctx context.Context, timeout time.Duration) error {
	return q.waitFor(ctx, timeout, ServerNode, "the Queen server is not healthy", func() error { return q.Healthy(ctx, ServerNode) })
}

// waitFor polls ok until it passes, or fails saying what (with what the
// log of node says) once node does not run or timeout has passed.
func (q *Cluster) waitFor(ctx context.Context, timeout time.Duration, node int32, what string, ok func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ok()
		if err == nil {
			return nil
		}
		if pid, _ := q.PID(node); pid == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(q.LogFile(node))
			return fmt.Errorf("%s (%v); %s says:\n%s", what, err, q.LogFile(node), cluster.Tail(data, 1500))
		}
		if err := cluster.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// Endpoints implements cluster.Broker.
func (q *Cluster) Endpoints(id int32) []cluster.Endpoint {
	if id == ServerNode {
		return []cluster.Endpoint{{Name: "name", Addr: "queen"}, {Name: "address", Addr: q.URL()}}
	}
	return []cluster.Endpoint{{Name: "name", Addr: "db"}, {Name: "address", Addr: "postgres://" + net.JoinHostPort(q.host(), strconv.Itoa(q.pgPort())) + "/queen"}}
}

// DriverConfig is the driver's configuration for this cluster, as its
// ClientFlags give it: the server, the database and the file buffer dir.
func (q *Cluster) DriverConfig() Config {
	return Config{URL: q.URL(), PostgresURL: q.PostgresURL(), BufferDir: q.DataDir(ServerNode)}
}

// ClientFlags implements Local.
func (q *Cluster) ClientFlags() []cluster.Flag {
	return q.WithNetns(cluster.Flag{Name: "queen-url", Value: q.URL()}, cluster.Flag{Name: "postgres-url", Value: q.PostgresURL()},
		cluster.Flag{Name: "queen-buffer-dir", Value: q.DataDir(ServerNode)})
}
