package queen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/jackc/pgx/v5"
)

// PostgreSQL, node 2 of a local Queen cluster: Debian's binaries, run as
// the user postgres (initdb and the server refuse root), its data dir and
// the settings ackcheck owns in it.

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

// postmasterPID reads the first line of postmaster.pid.
func (q *Cluster) postmasterPID() (int, error) {
	f, err := os.Open(filepath.Join(q.DataDir(DBNode), "postmaster.pid"))
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
	if err != nil || pid <= 0 || !cluster.RunsAs(pid, q.Marker(DBNode)) {
		return 0, nil
	}
	return pid, nil
}

// waitBackendsGone waits until no process of user postgres runs with
// this cluster's data dir open (they hold files lazyfs must see closed).
func (q *Cluster) waitBackendsGone(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		busy := false
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && cwd == q.DataDir(DBNode) {
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

func (q *Cluster) pingDB(ctx context.Context, db string) error {
	conn, err := q.pgConnect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

func (q *Cluster) waitDB(ctx context.Context, timeout time.Duration, db string) error {
	return q.waitFor(ctx, timeout, DBNode, "PostgreSQL does not answer", func() error { return q.pingDB(ctx, db) })
}

// writePGConf writes the settings ackcheck owns in PostgreSQL's
// configuration (included from postgresql.conf).
func (q *Cluster) writePGConf() error {
	listen := "127.0.0.1"
	if q.Net() != nil {
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
`, listen, q.pgPort(), q.pgSocketDir(), queenFsync.Value(q.FsyncOn()))
	return cluster.WriteFileDurable(q.pgConf(), []byte(conf), 0o644, ownedByPostgres)
}

// writeSettings rewrites ackcheck.conf and then cluster.json after a
// setting changed, each durably (a power loss right after an fsync toggle
// keeps the setting toggled).
func (q *Cluster) writeSettings() error {
	if err := q.writePGConf(); err != nil {
		return err
	}
	return q.record()
}

// queenFsync is PostgreSQL's synchronous_commit (fsync of the commit's
// WAL before the commit returns), --synchronous-commit of cluster queen
// up; its values are PostgreSQL's own.
var queenFsync = cluster.FsyncKnob{Setting: "PostgreSQL synchronous_commit", Flag: "synchronous-commit", Off: "off", On: "on",
	How: "a clean restart of PostgreSQL"}

// FsyncKnob implements FsyncSwitch.
func (q *Cluster) FsyncKnob() cluster.FsyncKnob { return queenFsync }

// FsyncOn implements FsyncSwitch.
func (q *Cluster) FsyncOn() bool { return !q.opts.SynchronousCommitOff }

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
	return q.WaitReady(ctx, queenSpec.Ready)
}

// pgConnect connects to database db, through the hub with --netns.
func (q *Cluster) pgConnect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=3", net.JoinHostPort(q.host(), strconv.Itoa(q.pgPort())), db))
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = q.Dial
	return pgx.ConnectConfig(ctx, cfg)
}

// makeDirs makes the nodes' directories, PostgreSQL's given to the user
// postgres, durably.
func (q *Cluster) makeDirs(ctx context.Context) error {
	for _, d := range []string{q.NodeDir(ServerNode), q.NodeDir(DBNode), q.pgSocketDir(), q.DataDir(ServerNode), q.DataDir(DBNode)} {
		if err := cluster.MkdirAllDurable(d, 0o755); err != nil {
			return err
		}
	}
	if err := reachableByPostgres(ctx, q.NodeDir(DBNode)); err != nil {
		return err
	}
	pgDirs := []string{q.NodeDir(DBNode), q.pgSocketDir(), q.DataDir(DBNode)}
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
	return chownPostgres(pgDirs...)
}

// initDB runs initdb in PostgreSQL's data dir and adds ackcheck's
// settings to it. initdb fsyncs what it writes; what ackcheck adds must
// be as durable, or a power loss brings PostgreSQL back on its default
// port and socket dir, where the Queen server never finds it.
func (q *Cluster) initDB(ctx context.Context, bin string) error {
	data := q.DataDir(DBNode)
	if err := os.Chmod(data, 0o700); err != nil {
		return err
	}
	out, err := asPostgres(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %v\n%s", data, err, cluster.Tail(out, 1500))
	}
	// ackcheck.conf first: postgresql.conf includes it if it exists.
	if err := q.writePGConf(); err != nil {
		return err
	}
	extra := map[string]string{"postgresql.conf": "\ninclude_if_exists = 'ackcheck.conf'\n"}
	if n := q.Net(); n != nil {
		// initdb trusts 127.0.0.1 (where the server connects from);
		// ackcheck's calls come from the hub, and from nowhere else.
		extra["pg_hba.conf"] = fmt.Sprintf("\n# ackcheck's calls, from the hub of the cluster's network namespaces\nhost all postgres %s/32 trust\n", n.HubAddr())
	}
	for name, add := range extra {
		path := filepath.Join(data, name)
		conf, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := cluster.WriteFileDurable(path, append(conf, add...), 0o600, ownedByPostgres); err != nil {
			return err
		}
	}
	return nil
}

// createDB creates the database queen, durably.
func (q *Cluster) createDB(ctx context.Context) error {
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

// startDB starts PostgreSQL with pg_ctl, which puts it in a session of
// its own with -D in its command line (the marker) and writes
// postmaster.pid; it returns once that names a postmaster that runs.
func (q *Cluster) startDB(ctx context.Context) error {
	if m := q.Mount(DBNode); m != nil {
		if err := m.Check(ctx); err != nil {
			return err
		}
	}
	bin, err := pgBin()
	if err != nil {
		return err
	}
	// No postmaster of this data dir runs (PID said so): a postmaster.pid
	// left by a killed one is stale, and PostgreSQL would refuse to start
	// if its PID now belonged to another live process, as after a power
	// loss on a machine that kept running. The same holds for the
	// socket's lock file; a killed postmaster that nobody reaped yet (a
	// zombie) still has its PID, which PostgreSQL takes for a live one.
	os.Remove(filepath.Join(q.DataDir(DBNode), "postmaster.pid"))
	sock := filepath.Join(q.pgSocketDir(), fmt.Sprintf(".s.PGSQL.%d", q.pgPort()))
	os.Remove(sock + ".lock")
	os.Remove(sock)
	// -W: do not wait for it to accept connections.
	pgCtl := asPostgres(ctx, filepath.Join(bin, "pg_ctl"), "-D", q.DataDir(DBNode), "-l", q.pgLog(), "-W", "start")
	if n := q.Net(); n != nil {
		if err := q.NeedNet(ctx); err != nil {
			return err
		}
		// The postmaster pg_ctl forks inherits the namespace.
		pgCtl = n.Command(ctx, ServerNode, pgCtl.Path, pgCtl.Args[1:]...)
	}
	if out, err := pgCtl.CombinedOutput(); err != nil {
		return fmt.Errorf("start PostgreSQL: %v\n%s", err, cluster.Tail(out, 1500))
	}
	for i := 0; i < 100; i++ {
		if pid, _ := q.PID(DBNode); pid != 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := os.ReadFile(q.pgLog())
	return fmt.Errorf("PostgreSQL did not start; %s says:\n%s", q.pgLog(), cluster.Tail(data, 1500))
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
		return cluster.StopProcess(ctx, pid, q.Marker(id), grace)
	}
	return cluster.SignalAndWait(ctx, pid, q.Marker(id), grace, syscall.SIGINT, func() { q.Signal(id, syscall.SIGKILL) })
}
