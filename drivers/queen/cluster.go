package queen

import (
	"bufio"
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
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
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
// writes, run from its home so that it finds ./schema.

const queenKind = "queen"

// ClusterOptions configure a local Queen cluster.
type ClusterOptions struct {
	Dir string
	// Home holds queen-server and schema/ (build.sh's output). Required at
	// the first up.
	Home string
	// BasePort is the Queen server's HTTP port; its UDP notification port
	// is BasePort+1 and PostgreSQL's BasePort+2. Default 26632.
	BasePort int
	// SynchronousCommitOff starts PostgreSQL with synchronous_commit=off
	// (its default is on).
	SynchronousCommitOff bool
	// LazyFS puts each data dir on ackcheck lazyfs; LazyFSEntries is its
	// --entries mode.
	LazyFS        bool
	LazyFSEntries string
	LazyFSBinary  string
	// NetNS runs the server and its database in a network namespace of
	// their own (see the package's cluster comment). At the first up only.
	NetNS bool
	// NetnsSubnet is the subnet of the network namespaces with NetNS
	// (zero: netns.DefaultSubnet). Fixed when the cluster is created.
	NetnsSubnet netip.Prefix
}

type queenFile struct {
	Kind                 string `json:"kind"`
	Home                 string `json:"queen_home"`
	BasePort             int    `json:"base_port"`
	SynchronousCommitOff bool   `json:"synchronous_commit_off,omitempty"`
	LazyFS               bool   `json:"lazyfs,omitempty"`
	LazyFSBin            string `json:"lazyfs_binary,omitempty"`
	LazyFSMode           string `json:"lazyfs_entries,omitempty"`
	// NetNS is the prefix of the cluster's network namespaces, "" when
	// it runs in the machine's own.
	NetNS string `json:"netns,omitempty"`
	// NetnsSubnet is their subnet, "" for netns.DefaultSubnet.
	NetnsSubnet string `json:"netns_subnet,omitempty"`
}

// Cluster is a local Queen MQ cluster.
type Cluster struct {
	opts ClusterOptions
	// prefix names the cluster's network namespaces; "" without --netns.
	prefix string
	// subnet is the Net\'s subnet (zero: netns.DefaultSubnet).
	subnet netip.Prefix
}

var (
	_ cluster.Local       = (*Cluster)(nil)
	_ cluster.FsyncSwitch = (*Cluster)(nil)
	_ cluster.InNetns     = (*Cluster)(nil)
)

// OpenCluster returns the cluster in opts.Dir; one that exists keeps what it
// recorded.
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
		var qf queenFile
		if err := json.Unmarshal(data, &qf); err != nil || qf.Kind != queenKind {
			return nil, fmt.Errorf("%s holds no Queen cluster (cluster.json: kind %q, %v)", dir, qf.Kind, err)
		}
		if opts.LazyFS && !qf.LazyFS {
			return nil, fmt.Errorf("the cluster in %s was created without --lazyfs: take it down and remove the directory to create one with lazyfs", dir)
		}
		if opts.NetNS && qf.NetNS == "" {
			return nil, fmt.Errorf("the cluster in %s was created without --netns: take it down and remove the directory to create one in a network namespace", dir)
		}
		prefix = qf.NetNS
		if subnet, err = cluster.ReadNetnsSubnet(qf.NetnsSubnet); err != nil {
			return nil, fmt.Errorf("%s/%w", dir, err)
		}
		opts.NetNS = prefix != ""
		if opts.Home == "" {
			opts.Home = qf.Home
		}
		opts.BasePort, opts.SynchronousCommitOff, opts.LazyFS, opts.LazyFSEntries = qf.BasePort, qf.SynchronousCommitOff, qf.LazyFS, qf.LazyFSMode
		if opts.LazyFSBinary == "" {
			opts.LazyFSBinary = qf.LazyFSBin
		}
	}
	if opts.BasePort == 0 {
		opts.BasePort = 26632
	}
	if opts.LazyFSEntries != "" && opts.LazyFSEntries != "strict" && opts.LazyFSEntries != "journal" {
		return nil, fmt.Errorf("--lazyfs-entries %q: use strict or journal", opts.LazyFSEntries)
	}
	if opts.Home != "" {
		if opts.Home, err = filepath.Abs(opts.Home); err != nil {
			return nil, err
		}
	}
	return &Cluster{opts: opts, prefix: prefix, subnet: subnet}, nil
}

// Net implements cluster.InNetns: the cluster's network namespaces, one
// node's (the server's, node 1, where its database runs too); nil without
// --netns. Named from cluster.json, whether or not they exist right now.
func (q *Cluster) Net() *netns.Net {
	if q.prefix == "" {
		return nil
	}
	return &netns.Net{Prefix: q.prefix, Nodes: []int32{ServerNode}, Subnet: q.subnet}
}

// ProbePort implements cluster.InNetns: the Queen server's HTTP port,
// which the partition proof connects to. 0 without --netns.
func (q *Cluster) ProbePort() int {
	if q.prefix == "" {
		return 0
	}
	return q.opts.BasePort
}

// host is where ackcheck reaches both nodes: 10.213.0.1 in the Net, else
// the machine's loopback.
func (q *Cluster) host() string {
	if n := q.Net(); n != nil {
		return n.NodeAddr(ServerNode).String()
	}
	return "127.0.0.1"
}

// dial connects to a node's address: from the Net's hub with --netns
// (the machine's own namespace cannot reach it), else directly.
func (q *Cluster) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if n := q.Net(); n != nil {
		return n.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// httpClient is the client of the cluster's own calls to the server
// (readiness): through the hub with --netns.
func (q *Cluster) httpClient() *http.Client {
	if q.prefix == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DialContext: q.dial, DisableKeepAlives: true}}
}

// pgConnect connects to database db, through the hub with --netns.
func (q *Cluster) pgConnect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=3", net.JoinHostPort(q.host(), strconv.Itoa(q.pgPort())), db))
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = q.dial
	return pgx.ConnectConfig(ctx, cfg)
}

// upCmd is the command that brings this cluster up, for error messages.
func (q *Cluster) upCmd() string {
	cmd := "ackcheck cluster queen up --dir " + q.opts.Dir
	if q.prefix != "" {
		cmd += " --netns"
	}
	return cmd
}

// Dir implements Local.
func (q *Cluster) Dir() string { return q.opts.Dir }

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

func (q *Cluster) pgPort() int { return q.opts.BasePort + 2 }
func (q *Cluster) nodeDir(id int32) string {
	return filepath.Join(q.opts.Dir, fmt.Sprintf("node%d", id))
}
func (q *Cluster) dataDir(id int32) string { return filepath.Join(q.nodeDir(id), "data") }
func (q *Cluster) queenPIDFile() string    { return filepath.Join(q.nodeDir(ServerNode), "pid") }
func (q *Cluster) queenLog() string        { return filepath.Join(q.nodeDir(ServerNode), "queen.log") }
func (q *Cluster) pgLog() string           { return filepath.Join(q.nodeDir(DBNode), "pg.log") }
func (q *Cluster) pgSocketDir() string     { return filepath.Join(q.nodeDir(DBNode), "sock") }
func (q *Cluster) pgConf() string          { return filepath.Join(q.dataDir(DBNode), "ackcheck.conf") }
func (q *Cluster) queenBinary() string     { return filepath.Join(q.opts.Home, "queen-server") }
func (q *Cluster) queenMarker() string     { return q.queenBinary() + "\x00" }
func (q *Cluster) pgMarker() string        { return "-D\x00" + q.dataDir(DBNode) + "\x00" }
func (q *Cluster) LogFile(id int32) string { // the node's own log
	if id == DBNode {
		return q.pgLog()
	}
	return q.queenLog()
}

// LazyFS reports whether the data dirs are on lazyfs.
func (q *Cluster) LazyFS() bool { return q.opts.LazyFS }

func (q *Cluster) Mount(id int32) *cluster.Mount {
	if !q.opts.LazyFS {
		return nil
	}
	return &cluster.Mount{ID: id, NodeDir: q.nodeDir(id), DataDir: q.dataDir(id), Binary: q.opts.LazyFSBinary,
		UpCmd: q.upCmd(), Entries: q.opts.LazyFSEntries}
}

// pgBin is the newest PostgreSQL installed by Debian.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	if len(dirs) == 0 {
		return "", fmt.Errorf("no PostgreSQL under /usr/lib/postgresql: install Debian's postgresql (apt-get install postgresql)")
	}
	return dirs[len(dirs)-1], nil
}

// asPostgres runs a PostgreSQL program as the user postgres when ackcheck
// runs as root (initdb and the server refuse root).
func asPostgres(ctx context.Context, prog string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	}
	return exec.CommandContext(ctx, prog, args...)
}

// postgresIDs are the user and group IDs of the user postgres; ok is
// false when ackcheck does not run as root (and nothing needs giving).
func postgresIDs() (uid, gid int, ok bool, err error) {
	if os.Geteuid() != 0 {
		return 0, 0, false, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, false, fmt.Errorf("no user postgres (install Debian's postgresql): %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, true, nil
}

// chownPostgres gives paths to the user postgres, when ackcheck runs as
// root, durably: PostgreSQL refuses a data dir that is not its own, so a
// power loss must not take the change back.
func chownPostgres(paths ...string) error {
	uid, gid, ok, err := postgresIDs()
	if !ok {
		return err
	}
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
		if err := cluster.SyncPath(p); err != nil {
			return err
		}
	}
	return nil
}

// ownedByPostgres gives a file being written to the user postgres (see
// cluster.WriteFileDurable), when ackcheck runs as root.
func ownedByPostgres(f *os.File) error {
	uid, gid, ok, err := postgresIDs()
	if !ok {
		return err
	}
	return f.Chown(uid, gid)
}

// reachableByPostgres fails, naming the directory to open, when the user
// postgres cannot reach dir (a parent made by mktemp -d is mode 0700).
func reachableByPostgres(ctx context.Context, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if asPostgres(ctx, "test", "-x", dir).Run() == nil {
		return nil
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if asPostgres(ctx, "test", "-x", filepath.Dir(d)).Run() == nil {
			return fmt.Errorf("PostgreSQL runs as the user postgres, which cannot enter %s: chmod o+x %s, or choose a --dir under a directory others can enter", d, d)
		}
	}
	return fmt.Errorf("PostgreSQL runs as the user postgres, which cannot reach %s: choose a --dir that others can enter", dir)
}

// Up implements Local: it creates the cluster at the first call (initdb,
// the database), mounts the lazyfs data dirs, starts PostgreSQL and then
// the Queen server, and returns once /health answers healthy.
func (q *Cluster) Up(ctx context.Context) error {
	if q.prefix != "" {
		if err := cluster.NetnsUpPreflight(ctx, q.prefix, q.subnet); err != nil {
			return err
		}
		// Before any node starts (create starts PostgreSQL): each is
		// started inside the namespace.
		if _, err := cluster.EnsureNet(ctx, q.prefix, q.subnet, q.Net().Nodes); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(q.opts.Dir, "cluster.json")); errors.Is(err, os.ErrNotExist) {
		if err := q.create(ctx); err != nil {
			return err
		}
	}
	for _, id := range q.Nodes() {
		if m := q.Mount(id); m != nil {
			if err := m.Start(ctx); err != nil {
				return err
			}
		}
	}
	// The database first: the Queen server creates its schema in it as
	// it starts.
	if err := q.StartNode(ctx, DBNode); err != nil {
		return err
	}
	if err := q.waitDB(ctx, 3*time.Minute, "queen"); err != nil {
		return err
	}
	if err := q.StartNode(ctx, ServerNode); err != nil {
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
	return q.WaitReady(ctx, 3*time.Minute)
}

func (q *Cluster) create(ctx context.Context) error {
	if q.opts.Home == "" {
		return fmt.Errorf("--queen-home is required at the first up: the directory shared/queen/build.sh wrote (queen-server and schema/)")
	}
	if _, err := os.Stat(q.queenBinary()); err != nil {
		return fmt.Errorf("--queen-home %s has no queen-server: build it with shared/queen/build.sh %s (%v)", q.opts.Home, q.opts.Home, err)
	}
	if _, err := os.Stat(filepath.Join(q.opts.Home, "schema", "schema.sql")); err != nil {
		return fmt.Errorf("--queen-home %s has no schema/schema.sql: build it with shared/queen/build.sh %s", q.opts.Home, q.opts.Home)
	}
	bin, err := pgBin()
	if err != nil {
		return err
	}
	if q.opts.LazyFS && q.opts.LazyFSBinary == "" {
		if q.opts.LazyFSBinary, err = cluster.LazyBinary(); err != nil {
			return err
		}
	}
	for _, d := range []string{q.nodeDir(ServerNode), q.nodeDir(DBNode), q.pgSocketDir(), q.dataDir(ServerNode), q.dataDir(DBNode)} {
		if err := cluster.MkdirAllDurable(d, 0o755); err != nil {
			return err
		}
	}
	if err := reachableByPostgres(ctx, q.nodeDir(DBNode)); err != nil {
		return err
	}
	pgDirs := []string{q.nodeDir(DBNode), q.pgSocketDir(), q.dataDir(DBNode)}
	if m := q.Mount(DBNode); m != nil {
		// The mount's root is its backing directory: it must be
		// postgres's, mode 0700, as PostgreSQL demands of its data dir.
		if err := cluster.MkdirAllDurable(m.Backing(), 0o700); err != nil {
			return err
		}
		pgDirs = append(pgDirs, m.Backing())
		if err := os.Chmod(m.Backing(), 0o700); err != nil {
			return err
		}
	}
	if err := chownPostgres(pgDirs...); err != nil {
		return err
	}
	if err := q.writeClusterJSON(); err != nil {
		return err
	}
	if m := q.Mount(DBNode); m != nil {
		if err := m.Start(ctx); err != nil {
			return err
		}
	}
	if err := os.Chmod(q.dataDir(DBNode), 0o700); err != nil {
		return err
	}
	out, err := asPostgres(ctx, filepath.Join(bin, "initdb"), "-D", q.dataDir(DBNode), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %v\n%s", q.dataDir(DBNode), err, cluster.Tail(out, 1500))
	}
	// initdb fsynced what it wrote; what ackcheck adds to the data dir
	// must be as durable, or a power loss brings PostgreSQL back on its
	// default port and socket dir, where the Queen server never finds it.
	// ackcheck.conf first: postgresql.conf includes it if it exists.
	if err := q.writePGConf(); err != nil {
		return err
	}
	mainConf := filepath.Join(q.dataDir(DBNode), "postgresql.conf")
	conf, err := os.ReadFile(mainConf)
	if err != nil {
		return err
	}
	conf = append(conf, "\ninclude_if_exists = 'ackcheck.conf'\n"...)
	if err := cluster.WriteFileDurable(mainConf, conf, 0o600, ownedByPostgres); err != nil {
		return err
	}
	if n := q.Net(); n != nil {
		// initdb trusts 127.0.0.1 (where the server connects from);
		// ackcheck's calls come from the hub, and from nowhere else.
		hba := filepath.Join(q.dataDir(DBNode), "pg_hba.conf")
		rules, err := os.ReadFile(hba)
		if err != nil {
			return err
		}
		rules = append(rules, fmt.Sprintf("\n# ackcheck's calls, from the hub of the cluster's network namespaces\nhost all postgres %s/32 trust\n", n.HubAddr())...)
		if err := cluster.WriteFileDurable(hba, rules, 0o600, ownedByPostgres); err != nil {
			return err
		}
	}
	if err := q.StartNode(ctx, DBNode); err != nil {
		return err
	}
	if err := q.waitDB(ctx, time.Minute, "postgres"); err != nil {
		return err
	}
	conn, err := q.pgConnect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE queen"); err != nil {
		return fmt.Errorf("create the database queen: %w", err)
	}
	// With synchronous_commit off the database's commit may still be in
	// memory: a checkpoint makes it durable before the cluster counts as
	// created.
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint after creating the database queen: %w", err)
	}
	return nil
}

// writePGConf writes the settings ackcheck owns in PostgreSQL's
// configuration (included from postgresql.conf).
func (q *Cluster) writePGConf() error {
	sc := "on"
	if q.opts.SynchronousCommitOff {
		sc = "off"
	}
	listen := "127.0.0.1"
	if q.prefix != "" {
		// The namespace's loopback for the server, its 10.213.0.1 for
		// ackcheck (from the hub).
		listen += "," + q.host()
	}
	conf := fmt.Sprintf(`# written by ackcheck cluster queen; rewritten when a setting changes
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
max_connections = 200
synchronous_commit = %s
`, listen, q.pgPort(), q.pgSocketDir(), sc)
	return cluster.WriteFileDurable(q.pgConf(), []byte(conf), 0o644, ownedByPostgres)
}

// writeSettings rewrites ackcheck.conf and then cluster.json after a
// setting changed, each durably (a power loss right after an fsync toggle
// keeps the setting toggled).
func (q *Cluster) writeSettings() error {
	if err := q.writePGConf(); err != nil {
		return err
	}
	return q.writeClusterJSON()
}

func (q *Cluster) writeClusterJSON() error {
	qf := queenFile{Kind: queenKind, Home: q.opts.Home, BasePort: q.opts.BasePort, SynchronousCommitOff: q.opts.SynchronousCommitOff,
		LazyFS: q.opts.LazyFS, LazyFSBin: q.opts.LazyFSBinary, LazyFSMode: q.opts.LazyFSEntries, NetNS: q.prefix, NetnsSubnet: cluster.NetnsSubnetText(q.subnet)}
	data, _ := json.MarshalIndent(qf, "", "  ")
	return cluster.WriteFileDurable(filepath.Join(q.opts.Dir, "cluster.json"), data, 0o644, nil)
}

// StartNode implements Local. It does not wait for the node to answer.
func (q *Cluster) StartNode(ctx context.Context, id int32) error {
	if pid, _ := q.PID(id); pid != 0 {
		return nil
	}
	if m := q.Mount(id); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	switch id {
	case DBNode:
		bin, err := pgBin()
		if err != nil {
			return err
		}
		// No postmaster of this data dir runs (PID said so): a
		// postmaster.pid left by a killed one is stale, and PostgreSQL
		// would refuse to start if its PID now belonged to another live
		// process, as after a power loss on a machine that kept running.
		// The same holds for the socket's lock file; a killed postmaster
		// that nobody reaped yet (a zombie) still has its PID, which
		// PostgreSQL takes for a live one.
		os.Remove(filepath.Join(q.dataDir(DBNode), "postmaster.pid"))
		sock := filepath.Join(q.pgSocketDir(), fmt.Sprintf(".s.PGSQL.%d", q.pgPort()))
		os.Remove(sock + ".lock")
		os.Remove(sock)
		// pg_ctl starts the server in a session of its own, with -D in its
		// command line (the marker), and writes postmaster.pid; -W: do not
		// wait for it to accept connections.
		pgCtl := asPostgres(ctx, filepath.Join(bin, "pg_ctl"), "-D", q.dataDir(DBNode), "-l", q.pgLog(), "-W", "start")
		if n := q.Net(); n != nil {
			if err := cluster.NeedNet(ctx, q.prefix, q.upCmd()); err != nil {
				return err
			}
			// The postmaster pg_ctl forks inherits the namespace.
			pgCtl = n.Command(ctx, ServerNode, pgCtl.Path, pgCtl.Args[1:]...)
		}
		out, err := pgCtl.CombinedOutput()
		if err != nil {
			return fmt.Errorf("start PostgreSQL: %v\n%s", err, cluster.Tail(out, 1500))
		}
		for i := 0; i < 100; i++ {
			if pid, _ := q.PID(id); pid != 0 {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		data, _ := os.ReadFile(q.pgLog())
		return fmt.Errorf("PostgreSQL did not start; %s says:\n%s", q.pgLog(), cluster.Tail(data, 1500))
	case ServerNode:
		// The server connects to its database once, at start: wait for a
		// database that runs to answer (one recovering from a crash takes
		// a while). One that does not run is the fault's to report.
		if pid, _ := q.PID(DBNode); pid != 0 {
			if err := q.waitDB(ctx, 3*time.Minute, "queen"); err != nil {
				return fmt.Errorf("start the Queen server: %w", err)
			}
		}
		cmd := exec.Command(q.queenBinary())
		host := "127.0.0.1"
		if n := q.Net(); n != nil {
			if err := cluster.NeedNet(ctx, q.prefix, q.upCmd()); err != nil {
				return err
			}
			// ip netns exec execs the server in place: the PID recorded
			// is queen-server's. It listens on every address of the
			// namespace: its loopback and 10.213.0.1.
			cmd = n.Command(context.Background(), ServerNode, q.queenBinary())
			host = "0.0.0.0"
		}
		cmd.Dir = q.opts.Home // it loads ./schema from its working directory
		cmd.Env = append(os.Environ(),
			fmt.Sprintf("PORT=%d", q.opts.BasePort), "HOST="+host,
			fmt.Sprintf("QUEEN_UDP_NOTIFY_PORT=%d", q.opts.BasePort+1),
			"PG_HOST=127.0.0.1", fmt.Sprintf("PG_PORT=%d", q.pgPort()), "PG_USER=postgres", "PG_PASSWORD=postgres", "PG_DB=queen",
			"NUM_WORKERS=2", "DB_POOL_SIZE=40", "SIDECAR_POOL_SIZE=16", "LOG_LEVEL=info",
			"FILE_BUFFER_DIR="+q.dataDir(ServerNode))
		if q.prefix != "" {
			return cluster.StartDetachedIn(cmd, q.queenLog(), q.queenPIDFile(), "queen-server", "queen-server")
		}
		return cluster.StartDetached(cmd, q.queenLog(), q.queenPIDFile(), "queen-server")
	}
	return fmt.Errorf("no node %d: the Queen cluster has 1 (the server) and 2 (db)", id)
}

// PID implements Local: the Queen server's process, or PostgreSQL's
// postmaster.
func (q *Cluster) PID(id int32) (int, error) {
	switch id {
	case ServerNode:
		return cluster.PIDFrom(q.queenPIDFile(), q.queenMarker())
	case DBNode:
		return q.postmasterPID()
	}
	return 0, fmt.Errorf("no node %d", id)
}

// postmasterPID reads the first line of postmaster.pid.
func (q *Cluster) postmasterPID() (int, error) {
	f, err := os.Open(filepath.Join(q.dataDir(DBNode), "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 || !cluster.RunsAs(pid, q.pgMarker()) {
		return 0, nil
	}
	return pid, nil
}

// Signal implements Local. PostgreSQL is signalled as a whole: the
// postmaster and every backend (its process group, which pg_ctl made its
// own session), as a machine's crash or a SIGSTOP of the database would
// stop them all at once.
func (q *Cluster) Signal(id int32, sig syscall.Signal) (int, error) {
	pid, err := q.PID(id)
	if err != nil {
		return 0, err
	}
	if pid == 0 {
		return 0, fmt.Errorf("node %d does not run", id)
	}
	target := pid
	if id == DBNode {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			target = -pid
		}
	}
	if err := syscall.Kill(target, sig); err != nil {
		return pid, fmt.Errorf("signal %v to node %d (PID %d): %w", sig, id, pid, err)
	}
	return pid, nil
}

// StopNode implements Local: the Queen server gets SIGTERM; PostgreSQL a
// fast shutdown (SIGINT: a smart one would wait for Queen's connections
// forever). Either is SIGKILLed after grace.
func (q *Cluster) StopNode(ctx context.Context, id int32, grace time.Duration) error {
	pid, err := q.PID(id)
	if err != nil || pid == 0 {
		return err
	}
	if id == ServerNode {
		return cluster.StopProcess(ctx, pid, q.queenMarker(), grace)
	}
	return cluster.SignalAndWait(ctx, pid, q.pgMarker(), grace, syscall.SIGINT, func() { q.Signal(id, syscall.SIGKILL) })
}

// Grace implements Local.
func (q *Cluster) Grace() time.Duration { return 30 * time.Second }

// Down implements Local: the Queen server first, then PostgreSQL, then
// the lazyfs mount under each that stopped, then the cluster's network
// namespace, if any (with it every rule a fault left), once both stopped:
// it stays while a node may still run in it, so that a second down finds
// it again.
func (q *Cluster) Down(ctx context.Context) error {
	var errs []error
	stopped := true
	for _, id := range []int32{ServerNode, DBNode} {
		err := q.StopNode(ctx, id, q.Grace())
		errs = append(errs, err)
		stopped = stopped && err == nil
		if m := q.Mount(id); m != nil && err == nil {
			errs = append(errs, m.Stop(ctx))
		}
	}
	if n := q.Net(); n != nil && stopped {
		if err := n.Delete(ctx); err != nil {
			errs = append(errs, fmt.Errorf("delete the cluster's network namespaces %s-*: %w (remove them with `ip netns delete`)", q.prefix, err))
		}
	}
	return errors.Join(errs...)
}

// DataDirInode implements Local.
func (q *Cluster) DataDirInode(id int32) (uint64, error) {
	return cluster.DataDirInode(q.Mount(id), q.dataDir(id))
}

// CanLoseUnsynced implements Local.
func (q *Cluster) CanLoseUnsynced(id int32) error {
	return cluster.CanLoseOnMount(q.Mount(id), q.opts.Dir, queenKind)
}

// LoseUnsynced implements Local.
func (q *Cluster) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	pid, err := q.PID(id)
	if err != nil {
		return "", err
	}
	if id == DBNode && pid == 0 {
		// The postmaster is gone; its backends may not be yet.
		if err := q.waitBackendsGone(ctx); err != nil {
			return "", err
		}
	}
	return cluster.LoseOnMount(ctx, q.Mount(id), q.opts.Dir, pid)
}

// waitBackendsGone waits until no process of user postgres runs with
// this cluster's data dir open (they hold files lazyfs must see closed).
func (q *Cluster) waitBackendsGone(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		busy := false
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && cwd == q.dataDir(DBNode) {
				busy = true
				break
			}
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL's processes still run 30 s after its postmaster died")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Healthy reports whether node id answers: the Queen server's /health
// says healthy, or PostgreSQL runs a query.
func (q *Cluster) Healthy(ctx context.Context, id int32) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if id == DBNode {
		return q.pingDB(ctx, "queen")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, q.URL()+"/health", nil)
	resp, err := q.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Status   string `json:"status"`
		Database string `json:"database"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("/health: %s", cluster.Tail(body, 200))
	}
	if h.Status != "healthy" {
		return fmt.Errorf("/health: status %q, database %q", h.Status, h.Database)
	}
	return nil
}

func (q *Cluster) pingDB(ctx context.Context, db string) error {
	conn, err := q.pgConnect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

func (q *Cluster) waitDB(ctx context.Context, timeout time.Duration, db string) error {
	deadline := time.Now().Add(timeout)
	for {
		err := q.pingDB(ctx, db)
		if err == nil {
			return nil
		}
		if pid, _ := q.PID(DBNode); pid == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(q.pgLog())
			return fmt.Errorf("PostgreSQL does not answer (%v); %s says:\n%s", err, q.pgLog(), cluster.Tail(data, 1500))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
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
	deadline := time.Now().Add(timeout)
	for {
		err := q.Healthy(ctx, ServerNode)
		if err == nil {
			return nil
		}
		if pid, _ := q.PID(ServerNode); pid == 0 || time.Now().After(deadline) {
			data, _ := os.ReadFile(q.queenLog())
			return fmt.Errorf("the Queen server is not healthy (%v); %s says:\n%s", err, q.queenLog(), cluster.Tail(data, 1500))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Health implements Local.
func (q *Cluster) Health(ctx context.Context) []cluster.NodeStatus {
	var out []cluster.NodeStatus
	for _, id := range q.Nodes() {
		pid, _ := q.PID(id)
		s := cluster.NodeStatus{ID: id, PID: pid, LazyFS: q.LazyFS()}
		if id == ServerNode {
			s.Endpoints = []cluster.Endpoint{{Name: "name", Addr: "queen"}, {Name: "address", Addr: q.URL()}}
		} else {
			s.Endpoints = []cluster.Endpoint{{Name: "name", Addr: "db"}, {Name: "address", Addr: "postgres://" + net.JoinHostPort(q.host(), strconv.Itoa(q.pgPort())) + "/queen"}}
		}
		if m := q.Mount(id); m != nil {
			s.LazyFSPID = m.PID()
		}
		switch err := q.Healthy(ctx, id); {
		case pid == 0:
			s.Health = "not running"
		case err != nil:
			s.Health = err.Error()
		default:
			s.Healthy = true
		}
		out = append(out, s)
	}
	return out
}

// ClientFlags implements Local.
func (q *Cluster) ClientFlags() []cluster.Flag {
	flags := []cluster.Flag{{Name: "queen-url", Value: q.URL()}, {Name: "postgres-url", Value: q.PostgresURL()}}
	if q.prefix != "" {
		flags = append(flags, cluster.Flag{Name: "netns", Value: q.prefix})
	}
	return flags
}

// FsyncSetting implements FsyncSwitch: PostgreSQL's synchronous_commit
// (fsync of the commit's WAL before the commit returns).
func (q *Cluster) FsyncSetting() string { return "PostgreSQL synchronous_commit" }

// FsyncOn implements FsyncSwitch.
func (q *Cluster) FsyncOn() bool { return !q.opts.SynchronousCommitOff }

// FsyncValue implements FsyncSwitch.
func (q *Cluster) FsyncValue(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// FsyncFlags implements FsyncSwitch.
func (q *Cluster) FsyncFlags(on bool) string { return "--synchronous-commit " + q.FsyncValue(on) }

// SetFsync implements FsyncSwitch: a clean restart of PostgreSQL (a fast
// shutdown, its lazyfs mount synced, the setting rewritten, started
// again); the Queen server stays up and reconnects. It returns once both
// answer. A no-op when the setting is in force.
func (q *Cluster) SetFsync(ctx context.Context, on bool) error {
	if q.FsyncOn() == on {
		return nil
	}
	if err := q.StopNode(ctx, DBNode, q.Grace()); err != nil {
		return fmt.Errorf("stop PostgreSQL to change synchronous_commit: %w", err)
	}
	if m := q.Mount(DBNode); m != nil {
		if err := m.Sync(ctx); err != nil {
			return err
		}
	}
	q.opts.SynchronousCommitOff = !on
	if err := q.writeSettings(); err != nil {
		return err
	}
	if err := q.StartNode(ctx, DBNode); err != nil {
		return err
	}
	return q.WaitReady(ctx, 3*time.Minute)
}

// LocalLauncher is the local Queen cluster's kind.
type LocalLauncher struct{}

// Kind implements Launcher.
func (LocalLauncher) Kind() string { return queenKind }

// Doc implements Launcher.
func (LocalLauncher) Doc() (string, string) {
	return "A local Queen MQ server on PostgreSQL 15 (node 1: the Queen server, node 2: db)",
		`up initializes a PostgreSQL cluster with Debian's initdb (as the user
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
ready line prints). down deletes the namespaces.`
}

// NewFlags implements Launcher.
func (LocalLauncher) NewFlags() cluster.LaunchFlags { return &queenFlags{} }

type queenFlags struct {
	opts    ClusterOptions
	syncOff string
}

func (f *queenFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.opts.Home, "queen-home", "", "directory with queen-server and schema/ (what shared/queen/build.sh writes); required at the first up")
	fs.IntVar(&f.opts.BasePort, "base-port", 0, "the Queen server's HTTP port; its UDP notifications use base+1, PostgreSQL base+2 (default 26632)")
	fs.StringVar(&f.syncOff, "synchronous-commit", "on", "PostgreSQL synchronous_commit: on (its default) or off; on an existing cluster, switched by a clean restart of PostgreSQL")
	fs.BoolVar(&f.opts.LazyFS, "lazyfs", false, "put PostgreSQL's data dir and Queen's file-buffer dir each on ackcheck lazyfs (at the first up; needs FUSE)")
	fs.BoolVar(&f.opts.NetNS, "netns", false, "run the server and PostgreSQL in a network namespace of their own at 10.213.0.1, for network faults (at the first up; needs root, ip and nft)")
	cluster.RegisterNetnsSubnet(fs, &f.opts.NetnsSubnet)
	fs.StringVar(&f.opts.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (lazyfs's default) or journal (any fsync commits every directory change, as ext4 and XFS do)")
}

func (f *queenFlags) Open(dir string) (cluster.Local, error) {
	o := f.opts
	o.Dir = dir
	switch f.syncOff {
	case "on", "":
	case "off":
		o.SynchronousCommitOff = true
	default:
		return nil, fmt.Errorf("--synchronous-commit %q: use on or off", f.syncOff)
	}
	return OpenCluster(o)
}

// AfterUp switches synchronous_commit on an existing cluster when
// --synchronous-commit asks for another value than it runs with.
func (f *queenFlags) AfterUp(ctx context.Context, fs *pflag.FlagSet, c cluster.Local, progress io.Writer) error {
	q := c.(*Cluster)
	on := f.syncOff != "off"
	if !fs.Changed("synchronous-commit") || q.FsyncOn() == on {
		return nil
	}
	fmt.Fprintf(progress, "switching synchronous_commit to %s (a clean restart of PostgreSQL) ...\n", q.FsyncValue(on))
	return q.SetFsync(ctx, on)
}
