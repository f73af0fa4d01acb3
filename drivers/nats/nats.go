// Package nats is ackcheck's driver for NATS JetStream, on
// github.com/nats-io/nats.go and its jetstream package.
//
// A run's topic of N partitions is N streams, one per partition, so that
// each partition has a Raft group, and a leader, of its own, as a Kafka
// partition has:
//
//	stream  <topic>-<p>            (file storage, R = the replication factor)
//	subject ackcheck.<topic>.<p>   (the stream's only subject)
//
// A position is the stream sequence: it starts at 1 and grows by one per
// stored message, so it is the partition's log order. Each publish carries
// a Nats-Msg-Id unique to the producer and the message, so that the
// driver's retries (and the client's own, on "no responders" while a
// stream elects a leader) are deduplicated by the stream rather than
// stored twice. Read uses an ordered consumer (ephemeral, no state to go
// stale) from the run's first sequence.
package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config is how to reach a NATS cluster and how to publish.
type Config struct {
	// Servers are the cluster's client URLs, nats://host:port. Node IDs in
	// the topology are their positions, 1-based: faults name nodes by them.
	Servers []string `json:"servers"`
	// MonitorURLs are the servers' monitoring endpoints (http://host:8222),
	// in the order of Servers. Optional; with them the driver reads each
	// server's running JetStream configuration (sync_interval: what an ack
	// meant), its version, the meta leader and its health.
	MonitorURLs []string `json:"monitor_urls,omitempty"`
	// PublishTimeout bounds one message from its first send to its ack,
	// the driver's retries (same Nats-Msg-Id) included; past it the outcome
	// is unknown. It must stay below the streams' duplicate window (2
	// minutes by default) for the retries to be deduplicated. Default 30s.
	PublishTimeout time.Duration `json:"publish_timeout"`
	// AckTimeout bounds one attempt; an attempt that times out is retried
	// while PublishTimeout allows. Default 5s.
	AckTimeout time.Duration `json:"ack_timeout"`
	// MaxPending is the most unanswered publishes per producer; one past
	// it is rejected at once (it never blocks the paced load). Default 10000.
	MaxPending int `json:"max_pending"`
	// NetNS is the prefix of the network namespaces of a local cluster
	// started with `cluster nats up --netns`: every connection, client and
	// monitoring alike, is then made from that Net's hub (netns.Net.Dial),
	// the only place its servers can be reached from. "" dials from the
	// machine's own namespace. Set from --cluster-dir by the cluster's
	// ClientFlags.
	NetNS string `json:"netns,omitempty"`
}

// netnsDialTimeout bounds one connect through a Net: nats.go applies its
// Timeout only to its own dialer, and a server a fault cut off from the
// client drops the SYN.
const netnsDialTimeout = 5 * time.Second

// hubDialer dials from a Net's hub: nats.go's CustomDialer, and the
// monitoring client's DialContext.
type hubDialer struct{ net *netns.Net }

// Dial implements nats.CustomDialer.
func (h hubDialer) Dial(network, addr string) (net.Conn, error) {
	return h.DialContext(context.Background(), network, addr)
}

// DialContext dials with netnsDialTimeout at most.
func (h hubDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, netnsDialTimeout)
	defer cancel()
	return h.net.Dial(ctx, network, addr)
}

// connOpts are the options of every connection the driver makes: its
// name, and with NetNS the hub's dialer. The one place the driver's
// connections get their dialer.
func (c Config) connOpts(name string, more ...nats.Option) []nats.Option {
	opts := append([]nats.Option{nats.Name(name)}, more...)
	if c.NetNS != "" {
		opts = append(opts, nats.SetCustomDialer(hubDialer{&netns.Net{Prefix: c.NetNS}}))
	}
	return opts
}

// httpClient is the monitoring endpoints' client: through the hub with
// NetNS.
func (c Config) httpClient() *http.Client {
	if c.NetNS == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DialContext: hubDialer{&netns.Net{Prefix: c.NetNS}}.DialContext, DisableKeepAlives: true}}
}

// WithDefaults fills the zero fields; the flags' defaults are these.
func (c Config) WithDefaults() Config {
	c.PublishTimeout = cmp.Or(c.PublishTimeout, 30*time.Second)
	c.AckTimeout = cmp.Or(c.AckTimeout, 5*time.Second)
	c.MaxPending = cmp.Or(c.MaxPending, 10000)
	return c
}

// errInsufficientResources is the server's JSInsufficientResourcesErr:
// fewer servers with JetStream than the stream's replicas.
const errInsufficientResources jetstream.ErrorCode = 10023

// duplicateWindow is the streams' Nats-Msg-Id window (JetStream's default).
const duplicateWindow = 2 * time.Minute

// Validate checks the addresses and timeouts.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("no NATS server: give --servers nats://host:4222[,nats://host:4223...]")
	}
	for _, s := range c.Servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
			return fmt.Errorf("--servers %q: give nats://host:port (a server's client port, 4222 by default)", s)
		}
	}
	if len(c.MonitorURLs) > 0 && len(c.MonitorURLs) != len(c.Servers) {
		return fmt.Errorf("--monitor-urls lists %d URLs for %d --servers: give one per server, in the same order", len(c.MonitorURLs), len(c.Servers))
	}
	for _, m := range c.MonitorURLs {
		u, err := url.Parse(m)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--monitor-urls %q: give http://host:port (a server's monitoring port, 8222 by default)", m)
		}
	}
	if c.PublishTimeout < 0 || c.AckTimeout < 0 || c.MaxPending < 0 {
		return errors.New("--publish-timeout, --ack-timeout and --max-pending cannot be negative")
	}
	if err := drivers.CheckNetns(c.NetNS, append(slices.Clone(c.Servers), c.MonitorURLs...)...); err != nil {
		return err
	}
	if c.PublishTimeout >= duplicateWindow {
		return fmt.Errorf("--publish-timeout %s must stay below the streams' duplicate window (%s): a retry after it could be stored twice", c.PublishTimeout, duplicateWindow)
	}
	return nil
}

// Driver talks to one NATS cluster. Create it with New.
type Driver struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream

	mu    sync.Mutex
	names map[string]int32 // server name -> node ID, learned from the servers themselves
	// groups is the topic each consumer group was joined on, and
	// lastTopic the last one EnsureTopic was given: the streams of a
	// group asked for by name alone (group.go).
	groups    map[string]string
	lastTopic string
}

var (
	_ drivers.Driver          = (*Driver)(nil)
	_ drivers.NodeProber      = (*Driver)(nil)
	_ drivers.AckDescriber    = (*Driver)(nil)
	_ drivers.VersionReporter = (*Driver)(nil)
)

// connect opens a connection to the cluster that reconnects forever:
// servers die and come back during a run.
func (c Config) connect(name string) (*nats.Conn, error) {
	return nats.Connect(strings.Join(c.Servers, ","), c.connOpts(name, nats.Timeout(5*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(false),
		nats.NoCallbacksAfterClientClose())...)
}

// New validates cfg and connects. Some server must answer.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	nc, err := cfg.connect("ackcheck-admin")
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w: %v (check --servers and that the servers run)",
			strings.Join(cfg.Servers, ","), drivers.ErrUnreachable, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream on %s: %w", nc.ConnectedUrl(), err)
	}
	return &Driver{cfg: cfg, nc: nc, js: js, names: map[string]int32{}, groups: map[string]string{}}, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return driverName }

// driverName is the value of --driver.
const driverName = "nats"

// Config is the configuration in force, defaults applied.
func (d *Driver) Config() Config { return d.cfg }

// Close implements drivers.Driver.
func (d *Driver) Close() error { d.nc.Close(); return nil }

// StreamName is the stream that holds partition p of topic.
func StreamName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

// Subject is the subject partition p of topic is published on.
func Subject(topic string, p int32) string { return fmt.Sprintf("ackcheck.%s.%d", topic, p) }

// checkTopic refuses topic names that cannot be part of a stream name and
// a subject token.
func checkTopic(topic string) error {
	if topic == "" || strings.ContainsAny(topic, ".*> \t\r\n/\\") {
		return fmt.Errorf("topic %q: a NATS topic name cannot be empty or hold '.', '*', '>', '/', '\\' or spaces (it names streams and a subject token)", topic)
	}
	return nil
}

// call gives each JetStream API call its own short deadline: while the
// cluster elects leaders, a call can hang until its context ends.
func call[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return f(cctx)
}

// retrying repeats f while it fails with something other than notFound,
// for up to limit: a stream without a leader answers nothing for seconds.
func retrying[T any](ctx context.Context, limit time.Duration, f func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(limit)
	for {
		v, err := call(ctx, f)
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) || time.Now().After(deadline) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// unreachable turns a failed call into a sentence a user can act on.
func (d *Driver) unreachable(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return fmt.Errorf("%s: %w: %v (check --servers %s, that the servers run, and that JetStream is enabled)",
			what, drivers.ErrUnreachable, err, strings.Join(d.cfg.Servers, ","))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// EnsureTopic implements drivers.Driver: it creates one stream per
// partition, or uses existing ones as they are (their count is the
// topic's partition count).
func (d *Driver) EnsureTopic(ctx context.Context, spec drivers.TopicSpec) (drivers.TopicInfo, error) {
	if err := checkTopic(spec.Name); err != nil {
		return drivers.TopicInfo{}, err
	}
	if len(spec.Configs) > 0 {
		return drivers.TopicInfo{}, fmt.Errorf("the nats driver sets no topic configs (got %v): fsync is the servers' jetstream sync_interval", spec.Configs)
	}
	d.mu.Lock()
	d.lastTopic = spec.Name
	d.mu.Unlock()
	if spec.ReplicationFactor < 1 || spec.ReplicationFactor > 5 {
		return drivers.TopicInfo{}, fmt.Errorf("--replication-factor %d: a JetStream stream has 1 to 5 replicas", spec.ReplicationFactor)
	}
	info := drivers.TopicInfo{Name: spec.Name, ReplicationFactor: spec.ReplicationFactor}
	existing, err := d.partitions(ctx, spec.Name)
	if err != nil {
		return info, err
	}
	if len(existing) > 0 {
		info.Partitions = existing
		st, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (jetstream.Stream, error) {
			return d.js.Stream(ctx, StreamName(spec.Name, 0))
		})
		if err != nil {
			return info, d.unreachable("describe stream "+StreamName(spec.Name, 0), err)
		}
		info.ReplicationFactor = st.CachedInfo().Config.Replicas
		return info, d.waitLeaders(ctx, spec.Name, existing)
	}
	for p := int32(0); p < int32(spec.Partitions); p++ {
		cfg := jetstream.StreamConfig{
			Name: StreamName(spec.Name, p), Subjects: []string{Subject(spec.Name, p)},
			Storage: jetstream.FileStorage, Replicas: spec.ReplicationFactor,
			Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld, Duplicates: duplicateWindow,
		}
		err := d.createStream(ctx, cfg)
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && (apiErr.ErrorCode == errInsufficientResources || apiErr.ErrorCode == errNoSuitablePeers) {
				return info, fmt.Errorf("create stream %s with %d replicas: %w (a stream needs as many JetStream servers as replicas, all up; lower --replication-factor or start more servers)", cfg.Name, cfg.Replicas, err)
			}
			return info, d.unreachable("create stream "+cfg.Name, err)
		}
		info.Partitions = append(info.Partitions, p)
	}
	info.Created = true
	return info, d.waitLeaders(ctx, spec.Name, info.Partitions)
}

// createStream creates one stream, again while the answer is one an
// election gives (no answer, no responders, 503 temporarily unavailable)
// for up to 30 s: right after the servers restart, their meta layer may
// still be choosing its leader. A create
// whose answer was lost and that is sent again finds its stream there,
// which the server accepts, as the config is the same.
func (d *Driver) createStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := call(ctx, func(ctx context.Context) (jetstream.Stream, error) { return d.js.CreateStream(ctx, cfg) })
		if err == nil || !electing(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// errNoSuitablePeers is the server's JSClusterNoPeersErr: the meta leader
// knows too few current servers to place the replicas, as when a stream
// asks for more replicas than the cluster has servers.
const errNoSuitablePeers jetstream.ErrorCode = 10005

// electing reports whether a JetStream API call failed in a way a meta or
// stream leader election explains, so that asking again can succeed.
func electing(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		if apiErr.ErrorCode == errInsufficientResources { // a 503 too, but more servers are needed
			return false
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

// waitLeaders returns once every partition's stream has a leader: a
// producer that starts before that sees its first publishes time out.
func (d *Driver) waitLeaders(ctx context.Context, topic string, parts []int32) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range parts {
		for {
			si, err := call(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) { return d.info(ctx, StreamName(topic, p)) })
			if err == nil && (si.Cluster == nil || si.Cluster.Leader != "") {
				break
			}
			if time.Now().After(deadline) {
				return d.unreachable(fmt.Sprintf("stream %s has no leader after 30s", StreamName(topic, p)), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// partitions lists the topic's partitions from the streams that exist. It
// refuses a topic with holes (stream <topic>-1 without <topic>-0).
func (d *Driver) partitions(ctx context.Context, topic string) ([]int32, error) {
	names, err := retrying(ctx, 15*time.Second, func(ctx context.Context) ([]string, error) {
		lister := d.js.StreamNames(ctx, jetstream.WithStreamListSubject("ackcheck."+topic+".*"))
		var out []string
		for n := range lister.Name() {
			out = append(out, n)
		}
		return out, lister.Err()
	})
	if err != nil {
		return nil, d.unreachable("list the streams of topic "+topic, err)
	}
	var parts []int32
	for _, n := range names {
		suffix, ok := strings.CutPrefix(n, topic+"-")
		p, err := strconv.ParseInt(suffix, 10, 32)
		if !ok || err != nil || StreamName(topic, int32(p)) != n {
			return nil, fmt.Errorf("stream %s takes subjects of topic %s but is not named %s-<partition>: give another --topic", n, topic, topic)
		}
		parts = append(parts, int32(p))
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for i, p := range parts {
		if p != int32(i) {
			return nil, fmt.Errorf("topic %s: stream %s is missing (partitions are %v): give another --topic", topic, StreamName(topic, int32(i)), parts)
		}
	}
	return parts, nil
}

// EndOffsets implements drivers.Driver: per partition, the sequence the
// next message will get (last sequence + 1).
func (d *Driver) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	return d.eachStream(ctx, topic, func(st jetstream.StreamState) int64 { return int64(st.LastSeq) + 1 })
}

// StartOffsets implements drivers.LogStarter: per partition, the first
// sequence its stream still holds (a purge, or limits that removed old
// messages, move it forward); the end offset (last sequence + 1) when the
// stream holds nothing.
func (d *Driver) StartOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	return d.eachStream(ctx, topic, func(st jetstream.StreamState) int64 {
		if st.Msgs == 0 {
			return int64(st.LastSeq) + 1
		}
		return int64(st.FirstSeq)
	})
}

// eachStream reads every partition's stream state of topic and returns
// of(state) per partition; a topic with no stream is ErrTopicMissing.
func (d *Driver) eachStream(ctx context.Context, topic string, of func(jetstream.StreamState) int64) (drivers.Offsets, error) {
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return drivers.Offsets{}, err
	}
	if len(parts) == 0 {
		return drivers.Offsets{}, fmt.Errorf("topic %s: %w", topic, drivers.ErrTopicMissing)
	}
	out := drivers.MakeOffsets(len(parts))
	for _, p := range parts {
		si, err := d.streamInfo(ctx, topic, p)
		if err != nil {
			return drivers.Offsets{}, err
		}
		out.Set(p, of(si.State))
	}
	return out, nil
}

var _ drivers.LogStarter = (*Driver)(nil)

// info asks for a stream's info (state and cluster) now.
func (d *Driver) info(ctx context.Context, name string) (*jetstream.StreamInfo, error) {
	st, err := d.js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.CachedInfo(), nil
}

// streamInfo describes partition p's stream, waiting up to 15s for it to
// answer (a stream electing a leader does not).
func (d *Driver) streamInfo(ctx context.Context, topic string, p int32) (*jetstream.StreamInfo, error) {
	name := StreamName(topic, p)
	si, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (*jetstream.StreamInfo, error) { return d.info(ctx, name) })
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s: %w", name, drivers.ErrTopicMissing)
	}
	if err != nil {
		return nil, d.unreachable("describe stream "+name, err)
	}
	return si, nil
}

// Topology implements drivers.Driver. Nodes are --servers, numbered 1..;
// each partition's leader is its stream's Raft leader, its replicas the
// stream's peers, and its in-sync replicas the leader and the peers the
// leader reports current and online. The controller is the meta leader,
// when a monitoring URL answers.
func (d *Driver) Topology(ctx context.Context, topic string) (drivers.Topology, error) {
	topo := drivers.Topology{At: time.Now(), Controller: -1}
	for i, s := range d.cfg.Servers {
		u, _ := url.Parse(s)
		port, _ := strconv.Atoi(u.Port())
		topo.Nodes = append(topo.Nodes, drivers.Node{ID: int32(i + 1), Host: u.Hostname(), Port: int32(port)})
	}
	d.learnNames(ctx)
	if meta := d.metaLeader(ctx); meta != "" {
		if id, ok := d.nodeID(meta); ok {
			topo.Controller = id
		}
	}
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return topo, err
	}
	for _, p := range parts {
		ps := drivers.PartitionState{Partition: p, Leader: -1, Epoch: -1}
		si, err := call(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) { return d.info(ctx, StreamName(topic, p)) })
		switch {
		case err != nil:
			ps.Err = err.Error()
		case si.Cluster == nil:
			ps.Err = "the stream reports no cluster (a single server without clustering)"
		default:
			ps = d.partitionState(p, si.Cluster)
		}
		topo.Partitions = append(topo.Partitions, ps)
	}
	return topo, nil
}

// partitionState maps a stream's cluster info to the driver seam.
func (d *Driver) partitionState(p int32, c *jetstream.ClusterInfo) drivers.PartitionState {
	ps := drivers.PartitionState{Partition: p, Leader: -1, Epoch: -1}
	var unknown []string
	add := func(name string, inSync, offline bool) {
		id, ok := d.nodeID(name)
		if !ok {
			unknown = append(unknown, name)
			return
		}
		ps.Replicas = append(ps.Replicas, id)
		if inSync {
			ps.ISR = append(ps.ISR, id)
		}
		if offline {
			ps.Offline = append(ps.Offline, id)
		}
	}
	if c.Leader != "" {
		add(c.Leader, true, false)
		if id, ok := d.nodeID(c.Leader); ok {
			ps.Leader = id
		}
		if c.LeaderSince != nil {
			ps.ElectedAt = *c.LeaderSince
		}
	} else {
		ps.Err = "no leader"
	}
	// In sync is the leader's Raft view: the peer acknowledged everything
	// and was heard from recently (the server turns Current off past its
	// lost-quorum interval). Offline is the meta layer's liveness flag,
	// cleared only by the server's next statsz: after a restart it stayed
	// set for 8 s while the peer was current and its own /healthz said all
	// its streams were, so it is a sign of absence, not of lag.
	for _, r := range c.Replicas {
		add(r.Name, r.Current, r.Offline)
	}
	if len(unknown) > 0 {
		ps.Err = strings.TrimPrefix(ps.Err+"; servers not among --servers: "+strings.Join(unknown, ", "), "; ")
	}
	return ps
}

func (d *Driver) nodeID(name string) (int32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.names[name]
	return id, ok
}

// learnNames asks each server whose name is not known yet for it: from
// its monitoring endpoint if there is one, else by connecting to it alone.
// A server that does not answer now is asked again next time.
func (d *Driver) learnNames(ctx context.Context) {
	d.mu.Lock()
	known := map[int32]bool{}
	for _, id := range d.names {
		known[id] = true
	}
	d.mu.Unlock()
	for i, s := range d.cfg.Servers {
		id := int32(i + 1)
		if known[id] {
			continue
		}
		name := ""
		if len(d.cfg.MonitorURLs) > 0 {
			var v varz
			if err := d.monitor(ctx, id, "/varz", &v); err == nil {
				name = v.ServerName
			}
		} else if nc, err := nats.Connect(s, d.cfg.connOpts("ackcheck-probe", nats.Timeout(2*time.Second), nats.NoReconnect())...); err == nil {
			name = nc.ConnectedServerName()
			nc.Close()
		}
		if name != "" {
			d.mu.Lock()
			d.names[name] = id
			d.mu.Unlock()
		}
	}
}

// varz is the part of a server's /varz the driver reads.
type varz struct {
	ServerName string `json:"server_name"`
	Version    string `json:"version"`
	JetStream  struct {
		Config *struct {
			SyncInterval time.Duration `json:"sync_interval"`
			SyncAlways   bool          `json:"sync_always"`
			StoreDir     string        `json:"store_dir"`
		} `json:"config"`
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta"`
	} `json:"jetstream"`
}

// monitor GETs path from node id's monitoring endpoint into v.
func (d *Driver) monitor(ctx context.Context, id int32, path string, v any) error {
	if int(id) < 1 || int(id) > len(d.cfg.MonitorURLs) {
		return fmt.Errorf("node %d has no monitoring URL (give --monitor-urls)", id)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	u := strings.TrimRight(d.cfg.MonitorURLs[id-1], "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := d.cfg.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return fmt.Errorf("GET %s: %s %s", u, resp.Status, body.Error)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// metaLeader is the JetStream meta leader's name as the first answering
// monitoring endpoint reports it; "" without monitoring URLs.
func (d *Driver) metaLeader(ctx context.Context) string {
	for i := range d.cfg.MonitorURLs {
		var v varz
		if err := d.monitor(ctx, int32(i+1), "/varz", &v); err == nil && v.JetStream.Meta != nil && v.JetStream.Meta.Leader != "" {
			return v.JetStream.Meta.Leader
		}
	}
	return ""
}

// ProbeNode implements drivers.NodeProber: the server takes a connection
// and answers a round trip, and, when its monitoring URL is known, its
// /healthz says its JetStream assets are current.
func (d *Driver) ProbeNode(ctx context.Context, id int32) error {
	if int(id) < 1 || int(id) > len(d.cfg.Servers) {
		return fmt.Errorf("node %d is not among --servers (1..%d)", id, len(d.cfg.Servers))
	}
	nc, err := nats.Connect(d.cfg.Servers[id-1], d.cfg.connOpts("ackcheck-probe", nats.Timeout(2*time.Second), nats.NoReconnect())...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.FlushTimeout(2 * time.Second); err != nil {
		return err
	}
	if len(d.cfg.MonitorURLs) > 0 {
		return d.monitor(ctx, id, "/healthz", nil)
	}
	return nil
}

// AckMeaning implements drivers.AckDescriber: a stream leader answers once
// a majority of the stream's replicas stored the message; whether stored
// means fsynced is each server's jetstream sync_interval, read from its
// /varz.
func (d *Driver) AckMeaning(ctx context.Context, topic string) (string, error) {
	si, err := d.streamInfo(ctx, topic, 0)
	if err != nil {
		return "", err
	}
	r := si.Config.Replicas
	s := fmt.Sprintf("R%d stream: answered by the stream leader once %d of %d replicas stored the message", r, r/2+1, r)
	if len(d.cfg.MonitorURLs) == 0 {
		return s + "; whether stored means fsynced is not known: give --monitor-urls to read each server's jetstream sync_interval", nil
	}
	ns := d.readSync(ctx)
	settings := joinSync(ns)
	always := allAlways(ns)
	if always {
		return s + " and fsynced it (" + settings + ")", nil
	}
	return s + " in its files, fsynced only every sync_interval (" + settings +
		"): a power loss of a majority can lose acked messages", nil
}

// BrokerVersions implements drivers.VersionReporter from each server's
// /varz; without monitoring URLs, from the connected server's INFO.
func (d *Driver) BrokerVersions(ctx context.Context) (map[int32]string, error) {
	out := map[int32]string{}
	if len(d.cfg.MonitorURLs) == 0 {
		for i, s := range d.cfg.Servers {
			if u, err := url.Parse(d.nc.ConnectedUrl()); err == nil && strings.HasSuffix(s, u.Host) {
				out[int32(i+1)] = "nats-server " + d.nc.ConnectedServerVersion()
			}
		}
		return out, nil
	}
	for i := range d.cfg.MonitorURLs {
		var v varz
		if err := d.monitor(ctx, int32(i+1), "/varz", &v); err == nil {
			out[int32(i+1)] = "nats-server " + v.Version
		}
	}
	return out, nil
}
