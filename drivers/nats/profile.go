package nats

import (
	"encoding/json"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// Profile is NATS JetStream's: its Spec.
type Profile struct{ drivers.Declared[Profile] }

var (
	_ drivers.Profile  = Profile{}
	_ cluster.Provider = Profile{}
)

// Spec implements drivers.SpecOf: what Declared answers from.
func (Profile) Spec() drivers.Spec { return spec }

var spec = drivers.Spec{
	Name: driverName, AddressFlag: "servers",
	NewFlags:   func() drivers.Flags { return &flags{} },
	LeaderKill: "a new stream leader is elected from the current replicas within seconds; acks pause for the streams the killed server led and resume; the restarted server catches up as a follower; no acknowledged message is lost",
	// The fsync audit: the servers' default sync_interval (the stores are
	// fsynced every two minutes) against sync_interval: always. It is the
	// servers' own setting and a running server does not change it on
	// reload, so each setting runs on a cluster switched to it.
	Durability: &drivers.Durability{Settings: []drivers.DurabilitySetting{
		{Name: "default", Label: "NATS default (jetstream sync_interval: 2m)", ExpectLoss: true, ServerFsync: drivers.ServerFsync(false),
			Why: "NATS documents that JetStream fsyncs its stores every sync_interval (2 minutes by default) and relies on replication meanwhile; an R3 ack means a majority stored the message, not that any fsynced it, so when every server loses power at once, what came since the last sync is lost"},
		{Name: "always", Label: "jetstream sync_interval: always", ExpectLoss: false, ServerFsync: drivers.ServerFsync(true),
			Why: "with sync_interval: always each server fsyncs every write before it counts, so an R3 ack means fsynced on a majority, and a power loss of every server loses nothing acked"},
	}},
	// jetstream { sync_interval } in each server's configuration file.
	ConfigFsync: drivers.FsyncEdit("jetstream sync_interval", "always", "2m", SetSyncInterval),
	// 1 MiB less 4 KiB. A NATS server's max_payload defaults to 1,048,576
	// bytes and counts a message's headers (Nats-Msg-Id, Ackcheck-Key)
	// with its data.
	MaxMessageSize: 1<<20 - 4<<10,
	// The driver makes one JetStream stream per partition, each
	// replicated stream a Raft group of its own with its own leader
	// election; NATS advises some thousands of streams per server, and
	// creating 10,000 one by one already takes minutes. Beyond that a run
	// measures stream creation, not durability.
	MaxPartitions:    10_000,
	MaxPartitionsWhy: "the driver makes one JetStream stream per partition, each replicated stream its own Raft group; NATS advises some thousands of streams per server",
	// JetStream's message blocks, the files Jepsen's NATS analysis
	// corrupted.
	DataFiles: []string{"*.blk"},
}

// Launcher implements cluster.Provider: a local cluster of nats-servers.
func (Profile) Launcher() cluster.Launcher { return launcher }

// flags are the NATS JetStream driver's flags.
type flags struct {
	servers, monitorURLs []string
	publishTimeout       time.Duration
	ackTimeout           time.Duration
	maxPending           int
}

func (n *flags) Register(fs *pflag.FlagSet) {
	def := Config{}.WithDefaults()
	fs.StringSliceVar(&n.servers, "servers", nil, "NATS: the servers' client URLs, nats://host:4222[,...]; node N of faults is the N-th")
	fs.StringSliceVar(&n.monitorURLs, "monitor-urls", nil, "NATS: the servers' monitoring URLs, http://host:8222[,...], in the order of --servers (sync_interval, versions, health)")
	fs.DurationVar(&n.publishTimeout, "publish-timeout", def.PublishTimeout, "NATS: longest a message may take from its first send to its ack, retries with the same Nats-Msg-Id included; then its outcome is unknown")
	fs.DurationVar(&n.ackTimeout, "ack-timeout", def.AckTimeout, "NATS: longest one publish attempt waits for its ack before it is retried")
	fs.IntVar(&n.maxPending, "max-pending", def.MaxPending, "NATS: unanswered publishes per producer; one past it is rejected")
	drivers.RegisterNetns(fs)
}

// Open implements drivers.Flags.
func (n *flags) Open(fs *pflag.FlagSet, saved json.RawMessage) (drivers.Driver, any, error) {
	c, err := drivers.OpenSaved(fs, saved, func(c *Config, o drivers.Overlay) {
		o.SetOr("servers", len(c.Servers) == 0, func() { c.Servers = n.servers })
		o.SetOr("monitor-urls", len(c.MonitorURLs) == 0, func() { c.MonitorURLs = n.monitorURLs })
		o.Set("publish-timeout", func() { c.PublishTimeout = n.publishTimeout })
		o.Set("ack-timeout", func() { c.AckTimeout = n.ackTimeout })
		o.Set("max-pending", func() { c.MaxPending = n.maxPending })
		o.Netns(&c.NetNS)
	})
	if err != nil {
		return nil, nil, err
	}
	return drivers.Opened(New(c))
}
