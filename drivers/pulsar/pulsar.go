// Package pulsar is ackcheck's driver for Apache Pulsar, on
// github.com/apache/pulsar-client-go (the client and its pulsaradmin REST
// client).
//
// A run's topic is a partitioned topic; each load producer keeps one
// Pulsar producer per partition (a message pinned to partition p goes to
// <topic>-partition-<p>), so that the partition of every ack is the one
// ackcheck chose. A position is the packed message ID (see Pack). Read
// uses a Reader per partition, from the run's start to the last message
// ID seen after the load: no subscription whose state could go stale.
package pulsar

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/auth"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Config is how to reach a Pulsar cluster and how to produce.
type Config struct {
	// ServiceURL is the binary protocol address, e.g. pulsar://127.0.0.1:6650.
	ServiceURL string `json:"service_url"`
	// AdminURL is the admin REST address, e.g. http://127.0.0.1:8080.
	AdminURL string `json:"admin_url"`
	// BookieHTTPURL is a bookie's admin API (httpServerEnabled=true), e.g.
	// http://127.0.0.1:8000: the bookie's running configuration says
	// whether its journal is fsynced before an ack (journalSyncData).
	// Optional; without it the ack meaning says that this is not known.
	BookieHTTPURL string `json:"bookie_http_url,omitempty"`
	// Tenant and Namespace hold the run's topics. Default public/default.
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	// DisableBatching sends every message in an entry of its own (Pulsar
	// batches by default).
	DisableBatching bool `json:"disable_batching"`
	// BatchingMaxPublishDelay is how long the client waits to fill a batch.
	// Default 10ms (Pulsar's).
	BatchingMaxPublishDelay time.Duration `json:"batching_max_publish_delay"`
	// SendTimeout bounds one message from send to ack; past it the
	// outcome is unknown. Default 30s (Pulsar's).
	SendTimeout time.Duration `json:"send_timeout"`
	// MaxPendingMessages per partition producer; a send past it is
	// rejected at once (never blocks the paced load). Default 10000.
	MaxPendingMessages int `json:"max_pending_messages"`
	// NetNS is the prefix of the network namespaces of a local standalone
	// started with `cluster pulsar up --netns`: every connection is then
	// made from that Net's hub, the only place the broker can be reached
	// from. The admin and bookie calls dial from it; the binary protocol,
	// whose client library has no dialer option, goes through a forwarder
	// (netns.Forwarder) on 127.0.0.1 at ServiceURL's port, which the
	// broker advertises. "" dials from the machine's own namespace. Set
	// from --cluster-dir by the cluster's ClientFlags.
	NetNS string `json:"netns,omitempty"`
}

// netnsDialTimeout bounds one connect through a Net: a broker a fault
// cut off from the client drops the SYN.
const netnsDialTimeout = 5 * time.Second

// hubDial dials from the hub of the Net of prefix, within netnsDialTimeout.
func hubDial(prefix string) netns.DialFunc {
	n := &netns.Net{Prefix: prefix}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, netnsDialTimeout)
		defer cancel()
		return n.Dial(ctx, network, addr)
	}
}

// httpClient is the client of the admin and bookie calls: through the
// hub with NetNS. The one place they get their transport.
func (c Config) httpClient() *http.Client {
	if c.NetNS == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: c.httpTransport()}
}

func (c Config) httpTransport() http.RoundTripper {
	if c.NetNS == "" {
		return http.DefaultTransport
	}
	return &http.Transport{DialContext: hubDial(c.NetNS), DisableKeepAlives: true}
}

// WithDefaults fills the zero fields; the flags' defaults are these.
func (c Config) WithDefaults() Config {
	c.Tenant = cmp.Or(c.Tenant, "public")
	c.Namespace = cmp.Or(c.Namespace, "default")
	c.BatchingMaxPublishDelay = cmp.Or(c.BatchingMaxPublishDelay, 10*time.Millisecond)
	c.SendTimeout = cmp.Or(c.SendTimeout, 30*time.Second)
	c.MaxPendingMessages = cmp.Or(c.MaxPendingMessages, 10000)
	return c
}

// Validate checks the addresses.
func (c Config) Validate() error {
	if !strings.HasPrefix(c.ServiceURL, "pulsar://") && !strings.HasPrefix(c.ServiceURL, "pulsar+ssl://") {
		return fmt.Errorf("--service-url %q: give pulsar://host:port (the broker's binary protocol port, 6650 by default)", c.ServiceURL)
	}
	u, err := url.Parse(c.AdminURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--admin-url %q: give http://host:port (the broker's web service port, 8080 by default)", c.AdminURL)
	}
	if c.SendTimeout < 0 || c.BatchingMaxPublishDelay < 0 {
		return fmt.Errorf("--send-timeout and --batching-max-publish-delay cannot be negative")
	}
	urls := []string{c.ServiceURL, c.AdminURL}
	if c.BookieHTTPURL != "" {
		urls = append(urls, c.BookieHTTPURL)
	}
	if err := drivers.CheckNetns(c.NetNS, urls...); err != nil || c.NetNS == "" {
		return err
	}
	if u, err := url.Parse(c.ServiceURL); err != nil || u.Scheme != "pulsar" || u.Port() == "" {
		return fmt.Errorf("--service-url %q with --netns: give pulsar://host:port with its port (the forwarder listens on 127.0.0.1 at it; TLS is not forwarded)", c.ServiceURL)
	}
	return nil
}

// forwardAddrs are, with NetNS, where the forwarder listens (127.0.0.1 at
// the service URL's port: the address the standalone advertises) and the
// broker it forwards to (the service URL's host and port).
func (c Config) forwardAddrs() (listen, target string, err error) {
	u, err := url.Parse(c.ServiceURL)
	if err != nil {
		return "", "", fmt.Errorf("--service-url %q: %w", c.ServiceURL, err)
	}
	return net.JoinHostPort("127.0.0.1", u.Port()), u.Host, nil
}

// Driver talks to one Pulsar cluster. Create it with New.
type Driver struct {
	cfg    Config
	client pulsar.Client
	admin  admin.Client
	http   *http.Client
	// fwd carries the binary protocol through the hub with NetNS; nil
	// without.
	fwd *netns.Forwarder

	// mu guards groups (the topic each group was joined on) and
	// coordinators, for the group calls that name a group alone
	// (group.go).
	mu           sync.Mutex
	groups       map[string]string
	coordinators map[string]int32 // the owner last found per group (GroupCoordinator)
}

var (
	_ drivers.Driver          = (*Driver)(nil)
	_ drivers.NodeProber      = (*Driver)(nil)
	_ drivers.AckDescriber    = (*Driver)(nil)
	_ drivers.VersionReporter = (*Driver)(nil)
)

// New validates cfg and makes the clients. No broker needs to answer yet.
// With NetNS it opens the forwarder, which fails when its port is taken
// (another driver of the same standalone in this process or another).
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	d := &Driver{cfg: cfg, http: cfg.httpClient(), groups: map[string]string{}, coordinators: map[string]int32{}}
	clientURL := cfg.ServiceURL
	if cfg.NetNS != "" {
		listen, target, err := cfg.forwardAddrs()
		if err != nil {
			return nil, err
		}
		if d.fwd, err = netns.Forward(listen, target, hubDial(cfg.NetNS), netnsDialTimeout); err != nil {
			return nil, fmt.Errorf("the pulsar driver reaches %s through the hub of %s-*: %w", target, cfg.NetNS, err)
		}
		clientURL = "pulsar://" + d.fwd.Addr()
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: clientURL, ConnectionTimeout: 5 * time.Second, OperationTimeout: 15 * time.Second,
		Logger: quietLogger(),
	})
	if err != nil {
		d.closeForwarder()
		return nil, fmt.Errorf("pulsar client for %s: %w", cfg.ServiceURL, err)
	}
	d.client = client
	acfg := &config.Config{WebServiceURL: cfg.AdminURL}
	if cfg.NetNS == "" {
		d.admin, err = admin.New(acfg)
	} else {
		d.admin, err = admin.NewPulsarClientWithAuthProvider(acfg, auth.NewDefaultProvider(cfg.httpTransport()))
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("pulsar admin client for %s: %w", cfg.AdminURL, err)
	}
	return d, nil
}

func (d *Driver) closeForwarder() {
	if d.fwd != nil {
		d.fwd.Close()
	}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return driverName }

// driverName is the value of --driver.
const driverName = "pulsar"

// Config is the configuration in force, defaults applied.
func (d *Driver) Config() Config { return d.cfg }

// Close implements drivers.Driver.
// The client first, then the forwarder its connections go through.
func (d *Driver) Close() error {
	d.client.Close()
	d.closeForwarder()
	return nil
}

func (d *Driver) topic(name string) (*utils.TopicName, error) {
	tn, err := utils.GetTopicName(fmt.Sprintf("persistent://%s/%s/%s", d.cfg.Tenant, d.cfg.Namespace, name))
	if err != nil {
		return nil, fmt.Errorf("topic %q: %w", name, err)
	}
	return tn, nil
}

// describe is topic's full name and its partition count, as the admin API
// gives it. A failed answer is wrapped with %w (isStatus sees its HTTP
// status) unless no broker answered at all (drivers.ErrUnreachable).
func (d *Driver) describe(ctx context.Context, topic string) (*utils.TopicName, int, error) {
	tn, err := d.topic(topic)
	if err != nil {
		return nil, 0, err
	}
	meta, err := d.admin.Topics().GetMetadataWithContext(ctx, *tn)
	if err != nil {
		return tn, 0, d.unreachable("describe topic "+tn.String(), err)
	}
	return tn, meta.Partitions, nil
}

func (d *Driver) partition(name string, p int32) (*utils.TopicName, error) {
	tn, err := d.topic(name)
	if err != nil {
		return nil, err
	}
	return tn.GetPartition(int(p))
}

// unreachable turns a failed admin call into a sentence a user can act on.
func (d *Driver) unreachable(what string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") ||
		errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %v (check --admin-url %s and --service-url %s, and that the broker runs)",
			what, drivers.ErrUnreachable, err, d.cfg.AdminURL, d.cfg.ServiceURL)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func isStatus(err error, code int) bool {
	var e rest.Error
	if errors.As(err, &e) {
		return e.Code == code
	}
	var pe *rest.Error
	return errors.As(err, &pe) && pe.Code == code
}

// EnsureTopic implements drivers.Driver: it creates a partitioned topic,
// or uses an existing one as it is. Pulsar's replication is a namespace
// policy (ensemble, write and ack quorum), not a topic setting: the
// replication factor reported is the write quorum in force.
func (d *Driver) EnsureTopic(ctx context.Context, spec drivers.TopicSpec) (drivers.TopicInfo, error) {
	if len(spec.Configs) > 0 {
		return drivers.TopicInfo{}, fmt.Errorf("the pulsar driver sets no topic configs (got %v): durability is a namespace and bookie setting in Pulsar", spec.Configs)
	}
	tn, err := d.topic(spec.Name)
	if err != nil {
		return drivers.TopicInfo{}, err
	}
	info := drivers.TopicInfo{Name: spec.Name}
	err = d.admin.Topics().CreateWithContext(ctx, *tn, spec.Partitions)
	switch {
	case err == nil:
		info.Created = true
	case isStatus(err, 409):
	default:
		return info, d.unreachable("create topic "+tn.String(), err)
	}
	meta, err := d.admin.Topics().GetMetadataWithContext(ctx, *tn)
	if err != nil {
		return info, d.unreachable("describe topic "+tn.String(), err)
	}
	if meta.Partitions < 1 {
		return info, fmt.Errorf("topic %s exists but is not partitioned: give another --topic (ackcheck needs a partitioned topic)", tn)
	}
	for p := 0; p < meta.Partitions; p++ {
		info.Partitions = append(info.Partitions, int32(p))
	}
	info.ReplicationFactor = 1
	if cfg, err := d.admin.Brokers().GetRuntimeConfigurationsWithContext(ctx); err == nil {
		if q, err := strconv.Atoi(cfg["managedLedgerDefaultWriteQuorum"]); err == nil {
			info.ReplicationFactor = q
		}
	}
	// Wait until every partition has an owner that serves it: a producer
	// made before that fails its first sends.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range info.Partitions {
		pt, _ := d.partition(spec.Name, p)
		for {
			_, err := d.admin.Topics().GetLastMessageIDWithContext(ctx, *pt)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return info, d.unreachable(fmt.Sprintf("partition %d of %s has no serving owner after 30s", p, tn), err)
			}
			select {
			case <-ctx.Done():
				return info, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return info, nil
}

// EndOffsets implements drivers.Driver: per partition, the first position
// after its last message (0 for a partition never written).
func (d *Driver) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	tn, partitions, err := d.describe(ctx, topic)
	if isStatus(err, 404) {
		return drivers.Offsets{}, fmt.Errorf("%s: %w", tn, drivers.ErrTopicMissing)
	}
	if err != nil {
		return drivers.Offsets{}, err
	}
	out := drivers.MakeOffsets(partitions)
	for p := 0; p < partitions; p++ {
		pt, _ := tn.GetPartition(p)
		id, err := d.lastMessageID(ctx, pt)
		if err != nil {
			return drivers.Offsets{}, err
		}
		var end int64
		switch {
		case id.LedgerID < 0:
		case id.EntryID < 0: // a ledger with no entry yet
			end, err = Pack(id.LedgerID, 0, 0)
		default:
			end, err = afterEntry(id.LedgerID, id.EntryID)
		}
		if err != nil {
			return drivers.Offsets{}, fmt.Errorf("partition %d of %s: %w", p, tn, err)
		}
		out.Set(int32(p), end)
	}
	return out, nil
}

// lastMessageID asks for a partition's last message ID, retrying while the
// partition has no owner (a broker restarting).
func (d *Driver) lastMessageID(ctx context.Context, pt *utils.TopicName) (utils.MessageID, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		id, err := d.admin.Topics().GetLastMessageIDWithContext(ctx, *pt)
		if err == nil {
			return id, nil
		}
		if isStatus(err, 404) {
			return id, fmt.Errorf("%s: %w", pt, drivers.ErrTopicMissing)
		}
		if time.Now().After(deadline) {
			return id, d.unreachable("last message ID of "+pt.String(), err)
		}
		select {
		case <-ctx.Done():
			return id, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Topology implements drivers.Driver. Nodes are the active brokers,
// numbered 1.. in the order of their web addresses; each partition's
// leader is the broker that owns it. Pulsar's replicas are bookies, which
// the broker does not report per partition here: Replicas and ISR name
// the owner only.
func (d *Driver) Topology(ctx context.Context, topic string) (drivers.Topology, error) {
	topo := drivers.Topology{At: time.Now(), Controller: -1}
	ids, err := d.brokerIDs(ctx)
	if err != nil {
		return topo, err
	}
	for b, id := range ids {
		host, port, _ := strings.Cut(b, ":")
		pn, _ := strconv.Atoi(port)
		topo.Nodes = append(topo.Nodes, drivers.Node{ID: id, Host: host, Port: int32(pn)})
	}
	sort.Slice(topo.Nodes, func(i, j int) bool { return topo.Nodes[i].ID < topo.Nodes[j].ID })
	tn, partitions, err := d.describe(ctx, topic)
	if err != nil {
		return topo, err
	}
	for p := 0; p < partitions; p++ {
		ps := drivers.PartitionState{Partition: int32(p), Leader: -1, Epoch: -1}
		pt, _ := tn.GetPartition(p)
		look, err := d.admin.Topics().LookupWithContext(ctx, *pt)
		if err != nil {
			ps.Err = err.Error()
		} else if u, err := url.Parse(look.HTTPURL); err == nil {
			if id, ok := ids[u.Host]; ok {
				ps.Leader = id
				ps.Replicas, ps.ISR = []int32{id}, []int32{id}
			} else {
				ps.Err = "owner " + u.Host + " is not an active broker"
			}
		}
		topo.Partitions = append(topo.Partitions, ps)
	}
	return topo, nil
}

// brokerIDs numbers the active brokers 1.. in the order of their web
// addresses (host:port), as Topology does.
func (d *Driver) brokerIDs(ctx context.Context) (map[string]int32, error) {
	clusters, err := d.admin.Clusters().ListWithContext(ctx)
	if err != nil || len(clusters) == 0 {
		return nil, d.unreachable("list clusters", err)
	}
	brokers, err := d.admin.Brokers().GetActiveBrokersWithContext(ctx, clusters[0])
	if err != nil {
		return nil, d.unreachable("list brokers", err)
	}
	sort.Strings(brokers)
	ids := make(map[string]int32, len(brokers))
	for i, b := range brokers {
		ids[b] = int32(i + 1)
	}
	return ids, nil
}

// ProbeNode implements drivers.NodeProber with the broker's own health
// check (a write and a read through the bookies).
func (d *Driver) ProbeNode(ctx context.Context, _ int32) error {
	return d.admin.Brokers().HealthCheckWithContext(ctx)
}

// AckMeaning implements drivers.AckDescriber from the broker's runtime
// configuration: how many bookies hold each entry before the ack, and
// whether the bookie fsyncs its journal first.
func (d *Driver) AckMeaning(ctx context.Context, _ string) (string, error) {
	cfg, err := d.admin.Brokers().GetRuntimeConfigurationsWithContext(ctx)
	if err != nil {
		return "", d.unreachable("read the broker's configuration", err)
	}
	ens, wq, aq := cfg["managedLedgerDefaultEnsembleSize"], cfg["managedLedgerDefaultWriteQuorum"], cfg["managedLedgerDefaultAckQuorum"]
	s := fmt.Sprintf("ensemble %s, write quorum %s, ack quorum %s: answered after %s bookie(s) of %s wrote the entry to their journal", ens, wq, aq, aq, wq)
	v, ok := cfg["journalSyncData"]
	if !ok && d.cfg.BookieHTTPURL != "" {
		bc, err := d.bookieConfig(ctx)
		if err != nil {
			return "", err
		}
		v, ok = bc["journalSyncData"]
	}
	switch {
	case !ok:
		s += "; whether the bookies fsync their journal first is not known: give --bookie-http-url (a bookie's admin API) to read journalSyncData from it"
	case v == "true":
		s += " and fsynced it (journalSyncData=true)"
	default:
		s += " without fsyncing it (journalSyncData=" + v + "): a power loss of those bookies can lose it"
	}
	return s, nil
}

// bookieConfig reads the bookie's configuration as it runs.
func (d *Driver) bookieConfig(ctx context.Context) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(d.cfg.BookieHTTPURL, "/")+"/api/v1/config/server_config", nil)
	if err != nil {
		return nil, fmt.Errorf("--bookie-http-url %q: %w", d.cfg.BookieHTTPURL, err)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the bookie's configuration from %s: %w (is the bookie's http server enabled? httpServerEnabled=true)", d.cfg.BookieHTTPURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the bookie's configuration from %s: %s", d.cfg.BookieHTTPURL, resp.Status)
	}
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("the bookie's configuration from %s: %w", d.cfg.BookieHTTPURL, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

// BrokerVersions implements drivers.VersionReporter.
func (d *Driver) BrokerVersions(ctx context.Context) (map[int32]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(d.cfg.AdminURL, "/")+"/admin/v2/brokers/version", nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, d.unreachable("read the broker version", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the broker version: %s", resp.Status)
	}
	return map[int32]string{1: "Apache Pulsar " + strings.Trim(strings.TrimSpace(string(body)), `"`)}, nil
}

// partitionFor picks a partition for an unpinned message by its key.
func partitionFor(key []byte, n int) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(n))
}
