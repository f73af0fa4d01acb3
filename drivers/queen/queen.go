// Package queen is ackcheck's driver for Queen MQ, a message queue on
// PostgreSQL spoken to over HTTP (no client library exists: net/http).
//
// A topic of N partitions is a queue with partitions p0..p<N-1>. Every
// pushed item carries a transactionId unique to the message, so a push
// the driver sends again after a lost answer is answered "duplicate"
// (Queen deduplicates (partition, transactionId)), never stored twice.
// HTTP status codes are not trusted (Queen answers 200 to some errors);
// each item's status in the body decides its outcome:
//
//	queued, duplicate  acked: committed to PostgreSQL
//	buffered           acked, and counted apart: written to the server's
//	                   file buffer, to be replayed into PostgreSQL later
//	error              rejected
//	no answer          unknown (sent again while PushTimeout lasts)
//
// Queen has no offsets. A partition's log is its rows in (created_at, id)
// order, as Queen's consumers read them; a record's offset is its index in
// that order, and an ack carries no position (Offset -1). Read-back is
// SQL on the database the queues live in (a read that consumes nothing
// any consumer group would see), which is also where what an ack meant is
// read: PostgreSQL's fsync, synchronous_commit and full_page_writes.
package queen

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the Queen driver's configuration, as run.json keeps it.
type Config struct {
	// URL is the Queen server's HTTP address, http://host:6632. Required.
	URL string `json:"url"`
	// PostgresURL reaches the database the queues live in, for read-back
	// and for PostgreSQL's durability settings. Required.
	PostgresURL string `json:"postgres_url"`
	// PushTimeout bounds a message from its first push to its outcome,
	// pushes sent again included; then it is unknown. Default 30s.
	PushTimeout time.Duration `json:"push_timeout"`
	// AttemptTimeout bounds one HTTP push. Default 10s.
	AttemptTimeout time.Duration `json:"attempt_timeout"`
	// MaxBatch is the most items one HTTP push carries. Default 100.
	MaxBatch int `json:"max_batch"`
	// Linger is how long a push waits for more items. Default 5ms.
	Linger time.Duration `json:"linger"`
	// MaxConcurrent is the most HTTP pushes in flight per producer.
	// Default 8.
	MaxConcurrent int `json:"max_concurrent"`
	// MaxPending is the most unanswered messages per producer; one past
	// it is rejected at once (it never blocks the paced load). Default
	// 10000.
	MaxPending int `json:"max_pending"`
	// NetNS is the prefix of the network namespaces of a local cluster
	// started with `cluster queen up --netns`: every connection, HTTP
	// (load, admin, readiness) and PostgreSQL (read-back, settings)
	// alike, is then made from that Net's hub (netns.Net.Dial), the only
	// place the server and its database can be reached from. "" dials
	// from the machine's own namespace. Set from --cluster-dir by the
	// cluster's ClientFlags.
	NetNS string `json:"netns,omitempty"`
	// BufferDir is the server's file buffer dir (FILE_BUFFER_DIR) when
	// ackcheck can read it: a local cluster. Settle then also waits for
	// the files there, the only account of events an earlier server
	// process buffered. Empty: the server's own counts only.
	BufferDir string `json:"buffer_dir,omitempty"`
}

// netnsDialTimeout bounds one connect through a Net: a server a fault
// cut off from the client drops the SYN, and the HTTP transport has no
// connect timeout of its own.
const netnsDialTimeout = 5 * time.Second

// dialer is how the driver connects, HTTP and PostgreSQL alike: from the
// Net's hub with NetNS, else from the machine's own namespace. The one
// place the driver's connections get their dialer.
func (c Config) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.NetNS == "" {
		var d net.Dialer
		return d.DialContext
	}
	n := &netns.Net{Prefix: c.NetNS}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, netnsDialTimeout)
		defer cancel()
		return n.Dial(ctx, network, addr)
	}
}

// WithDefaults fills the zero fields; the flags' defaults are these.
func (c Config) WithDefaults() Config {
	c.PushTimeout = cmp.Or(c.PushTimeout, 30*time.Second)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, 10*time.Second)
	c.MaxBatch = cmp.Or(c.MaxBatch, 100)
	c.Linger = cmp.Or(c.Linger, 5*time.Millisecond)
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, 8)
	c.MaxPending = cmp.Or(c.MaxPending, 10000)
	return c
}

// Validate reports what is missing or out of range.
func (c Config) Validate() error {
	switch {
	case c.URL == "":
		return fmt.Errorf("--queen-url is required: the Queen server, http://host:6632 (or --cluster-dir of `ackcheck cluster queen up`)")
	case c.PostgresURL == "":
		return fmt.Errorf("--postgres-url is required: the database the queues live in, postgres://user@host:5432/queen (read-back and durability settings)")
	case c.PushTimeout < time.Second:
		return fmt.Errorf("--push-timeout %s: use at least 1s", c.PushTimeout)
	case c.MaxBatch < 1 || c.MaxBatch > 10000:
		return fmt.Errorf("--max-batch %d: use 1 to 10000", c.MaxBatch)
	case c.MaxConcurrent < 1:
		return fmt.Errorf("--max-concurrent %d: use at least 1", c.MaxConcurrent)
	case c.MaxPending < 1:
		return fmt.Errorf("--max-pending %d: use at least 1", c.MaxPending)
	}
	return drivers.CheckNetns(c.NetNS, c.URL, c.PostgresURL)
}

// Driver is a connection to one Queen server and its database.
type Driver struct {
	cfg  Config
	http *http.Client
	db   *pgxpool.Pool

	mu    sync.Mutex
	parts map[string]int // partitions per topic, from EnsureTopic

	// Acks by how Queen stored them, for reports (AckClasses).
	queued, duplicate, buffered atomic.Int64
}

var (
	_ drivers.Driver            = (*Driver)(nil)
	_ drivers.NodeProber        = (*Driver)(nil)
	_ drivers.AckDescriber      = (*Driver)(nil)
	_ drivers.VersionReporter   = (*Driver)(nil)
	_ drivers.SettingsDescriber = (*Driver)(nil)
	_ drivers.OutcomeDeadliner  = (*Driver)(nil)
	_ drivers.AckClasser        = (*Driver)(nil)
	_ drivers.Switcher          = (*Driver)(nil)
	_ drivers.GroupConsumer     = (*Driver)(nil)
	_ drivers.GroupOffsetReader = (*Driver)(nil)
)

// Nodes of a Queen deployment as faults and topology name them.
const (
	ServerNode int32 = 1 // the Queen server
	DBNode     int32 = 2 // PostgreSQL
)

// New validates cfg and prepares the connections; it does not fail when
// nothing answers yet.
func New(cfg Config) (*Driver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	pc, err := pgxpool.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("--postgres-url: %w", err)
	}
	pc.MaxConns = 8
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	pc.ConnConfig.DialFunc = cfg.dialer()
	db, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("--postgres-url: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.DialContext = cfg.dialer()
	return &Driver{cfg: cfg, db: db, http: &http.Client{Transport: tr}, parts: map[string]int{}}, nil
}

// driverName is the value of --driver.
const driverName = "queen"

// Name implements drivers.Driver.
func (d *Driver) Name() string { return driverName }

// Config returns the configuration in force, defaults applied.
func (d *Driver) Config() Config { return d.cfg }

// Close implements drivers.Driver.
func (d *Driver) Close() error {
	d.db.Close()
	d.http.CloseIdleConnections()
	return nil
}

// partitionName is partition p's name in Queen.
func partitionName(p int32) string { return "p" + strconv.Itoa(int(p)) }

// partitionIndex reads a name partitionName wrote; ok is false for others.
func partitionIndex(name string) (int32, bool) {
	if !strings.HasPrefix(name, "p") {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 0 || partitionName(int32(n)) != name {
		return 0, false
	}
	return int32(n), true
}

// call sends an HTTP request with a JSON body (nil: none) and decodes the
// JSON answer into out. The status code is not trusted: Queen answers 200
// to some failures and the body says which.
func (d *Driver) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequestWithContext(ctx, method, d.cfg.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w: %w", method, path, drivers.ErrUnreachable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	var e struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != nil {
		return fmt.Errorf("%s %s: Queen answered %d: %v", method, path, resp.StatusCode, e.Error)
	}
	if resp.StatusCode >= 400 {
		return fmt.Errorf("%s %s: Queen answered %d: %s", method, path, resp.StatusCode, clip(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: an answer that is not what Queen documents (%v): %s", method, path, err, clip(data))
		}
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// queueExists reports whether the queue has a row in the database. A
// connection the database closed (a restart) is retried for a few seconds.
func (d *Driver) queueExists(ctx context.Context, queue string) (bool, error) {
	return retry(ctx, 5*time.Second, func() (bool, error) {
		var n int
		err := d.db.QueryRow(ctx, `SELECT count(*) FROM queen.queues WHERE name = $1`, queue).Scan(&n)
		if err != nil {
			return false, d.dbErr("look up queue "+queue, err)
		}
		return n > 0, nil
	})
}

// dbErr wraps a database error; one that reached no server, or a server
// not taking queries (starting up, shutting down), is ErrUnreachable.
func (d *Driver) dbErr(what string, err error) error {
	if !transient(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: %w (check --postgres-url and that PostgreSQL runs)", what, drivers.ErrUnreachable, err)
}

// transient reports whether err says the database cannot answer now
// rather than that the query is wrong: no connection, or SQLSTATE classes
// 08 (connection exception) and 57 (operator intervention: starting up,
// shutting down).
func transient(err error) bool {
	var pgErr interface{ SQLState() string }
	if !errors.As(err, &pgErr) {
		return true
	}
	c := pgErr.SQLState()
	return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57")
}

// dbWait is how long read-back waits for a database that cannot answer
// now (recovering from a crash, restarting) before it gives up.
const dbWait = 3 * time.Minute

// retry runs fn until it succeeds, fails with an error that is not
// transient, wait passes, or ctx ends.
func retry[T any](ctx context.Context, wait time.Duration, fn func() (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	for {
		v, err := fn()
		if err == nil || !errors.Is(err, drivers.ErrUnreachable) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// EnsureTopic implements drivers.Driver: a queue, created through Queen's
// configure API when missing. Its partitions come into being at their
// first push.
func (d *Driver) EnsureTopic(ctx context.Context, spec drivers.TopicSpec) (drivers.TopicInfo, error) {
	exists, err := d.queueExists(ctx, spec.Name)
	if err != nil {
		return drivers.TopicInfo{}, err
	}
	info := drivers.TopicInfo{Name: spec.Name, ReplicationFactor: 1}
	n := spec.Partitions
	if exists {
		names, err := d.partitionNames(ctx, spec.Name)
		if err != nil {
			return info, err
		}
		if len(names) > 0 {
			n = 0
			for _, p := range names {
				n = max(n, int(p)+1)
			}
		}
	} else {
		// Retention off, said explicitly: the read-back needs every row.
		// (Options are needed anyway: Queen 0.15 answers a configure
		// without any with an error, after it configured the queue.)
		// The lease a consumer group's pop takes is GroupLease, not
		// Queen's 300 s: how long a member that left without acking
		// holds its partitions (group.go).
		conf := map[string]any{"queue": spec.Name, "options": map[string]any{"retentionEnabled": false, "leaseTime": int(GroupLease / time.Second)}}
		if err := d.call(ctx, http.MethodPost, "/api/v1/configure", conf, nil); err != nil {
			return info, fmt.Errorf("create queue %s: %w", spec.Name, err)
		}
		info.Created = true
	}
	if n < 1 {
		n = 1
	}
	for p := 0; p < n; p++ {
		info.Partitions = append(info.Partitions, int32(p))
	}
	d.mu.Lock()
	d.parts[spec.Name] = n
	d.mu.Unlock()
	return info, nil
}

// partitionNames lists a queue's partitions that ackcheck's naming covers.
func (d *Driver) partitionNames(ctx context.Context, queue string) ([]int32, error) {
	rows, err := d.db.Query(ctx, `SELECT p.name FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, queue)
	if err != nil {
		return nil, d.dbErr("list partitions of "+queue, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, d.dbErr("list partitions of "+queue, err)
	}
	var out []int32
	for _, n := range names {
		if p, ok := partitionIndex(n); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// partitionCount is the number of partitions of topic: what EnsureTopic
// found, else what the database holds.
func (d *Driver) partitionCount(ctx context.Context, topic string) (int, error) {
	d.mu.Lock()
	n := d.parts[topic]
	d.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	exists, err := d.queueExists(ctx, topic)
	if err != nil {
		return 0, err
	}
	if !exists {
		return 0, fmt.Errorf("queue %s: %w", topic, drivers.ErrTopicMissing)
	}
	names, err := d.partitionNames(ctx, topic)
	if err != nil {
		return 0, err
	}
	for _, p := range names {
		n = max(n, int(p)+1)
	}
	return max(n, 1), nil
}

// EndOffsets implements drivers.Driver: each partition's row count. It
// waits up to dbWait for a database that cannot answer now.
func (d *Driver) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	return retry(ctx, dbWait, func() (drivers.Offsets, error) { return d.endOffsets(ctx, topic) })
}

func (d *Driver) endOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	n, err := d.partitionCount(ctx, topic)
	if err != nil {
		return drivers.Offsets{}, err
	}
	rows, err := d.db.Query(ctx, `SELECT p.name, count(m.id) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		LEFT JOIN queen.messages m ON m.partition_id = p.id WHERE q.name = $1 GROUP BY p.name`, topic)
	if err != nil {
		return drivers.Offsets{}, d.dbErr("count messages of "+topic, err)
	}
	out := drivers.MakeOffsets(n)
	for p := 0; p < n; p++ {
		out.Set(int32(p), 0)
	}
	var name string
	var count int64
	_, err = pgx.ForEachRow(rows, []any{&name, &count}, func() error {
		if p, ok := partitionIndex(name); ok && int(p) < n {
			out.Set(p, count)
		}
		return nil
	})
	if err != nil {
		return drivers.Offsets{}, d.dbErr("count messages of "+topic, err)
	}
	return out, nil
}

// health is what /health says (Queen 0.15 and 2.x).
type health struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	Version  string `json:"version"`
	// Queen 2.x reports its Raft role; absent before.
	Raft *struct {
		Role   string `json:"role"`
		Leader string `json:"leader"`
	} `json:"raft,omitempty"`
}

// health reads /health. The server answers it, with its status in the
// body, whatever the HTTP status: an unhealthy answer is still an answer.
func (d *Driver) health(ctx context.Context) (health, error) {
	var h health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.cfg.URL+"/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return h, fmt.Errorf("GET /health: %w: %w", drivers.ErrUnreachable, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(data, &h); err != nil || h.Status == "" {
		return h, fmt.Errorf("GET /health answered %d: %s", resp.StatusCode, clip(data))
	}
	return h, nil
}

// ProbeNode implements drivers.NodeProber: the Queen server is ready when
// /health says healthy, the database when it runs a query.
func (d *Driver) ProbeNode(ctx context.Context, id int32) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	switch id {
	case ServerNode:
		h, err := d.health(ctx)
		if err != nil {
			return err
		}
		if h.Status != "healthy" {
			return fmt.Errorf("/health: status %q, database %q", h.Status, h.Database)
		}
		return nil
	case DBNode:
		return d.db.Ping(ctx)
	}
	return fmt.Errorf("no node %d: 1 is the Queen server, 2 its database", id)
}

// Topology implements drivers.Driver. A Queen deployment is a server (node
// 1) on a database (node 2); every partition lives in the database and is
// served by the server, so each has both as replicas, those answering
// now as its in-sync set, and the server as its leader while both answer.
func (d *Driver) Topology(ctx context.Context, topic string) (drivers.Topology, error) {
	topo := drivers.Topology{At: time.Now(), Controller: -1}
	// A node is in the topology while it answers at all: the server
	// answers /health while its database is gone (and says so), which is
	// how the database's absence shows.
	up := map[int32]bool{}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := d.health(hctx)
	cancel()
	up[ServerNode] = err == nil
	up[DBNode] = d.ProbeNode(ctx, DBNode) == nil
	for _, id := range []int32{ServerNode, DBNode} {
		if up[id] {
			topo.Nodes = append(topo.Nodes, drivers.Node{ID: id})
		}
	}
	if len(topo.Nodes) == 0 {
		return topo, fmt.Errorf("neither the Queen server nor its database answers: %w", drivers.ErrUnreachable)
	}
	d.mu.Lock()
	n := d.parts[topic]
	d.mu.Unlock()
	if n == 0 && up[DBNode] {
		var err error
		if n, err = d.partitionCount(ctx, topic); err != nil {
			return topo, err
		}
	}
	for p := 0; p < n; p++ {
		ps := drivers.PartitionState{Partition: int32(p), Leader: -1, Epoch: -1, Replicas: []int32{ServerNode, DBNode}}
		for _, id := range ps.Replicas {
			if up[id] {
				ps.ISR = append(ps.ISR, id)
			} else {
				ps.Offline = append(ps.Offline, id)
			}
		}
		if up[ServerNode] && up[DBNode] {
			ps.Leader = ServerNode
		}
		topo.Partitions = append(topo.Partitions, ps)
	}
	return topo, nil
}
