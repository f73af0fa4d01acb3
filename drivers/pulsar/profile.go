package pulsar

import (
	"encoding/json"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// Profile is Apache Pulsar's: its Spec, and its word for a leader.
type Profile struct{ drivers.Declared[Profile] }

var (
	_ drivers.Profile     = Profile{}
	_ cluster.Provider    = Profile{}
	_ drivers.TargetWords = Profile{}
)

// Spec implements drivers.SpecOf: what Declared answers from.
func (Profile) Spec() drivers.Spec { return spec }

var spec = drivers.Spec{
	Name: driverName, AddressFlag: "service-url",
	NewFlags:   func() drivers.Flags { return &flags{} },
	LeaderKill: "the killed broker's topics move to another broker, or wait for it to restart; acks pause for them and resume; no acknowledged message is lost",
	// The fsync audit: the bookie's journalSyncData=false (the journal is
	// fsynced only by the bookie's periodic flush) against Pulsar's
	// default, journalSyncData=true. It is the bookie's own setting: each
	// run needs the cluster switched to it.
	Durability: &drivers.Durability{Settings: []drivers.DurabilitySetting{
		{Name: "nosync", Label: "journalSyncData=false", ExpectLoss: true, ServerFsync: drivers.ServerFsync(false),
			Why: "BookKeeper documents journalSyncData=false as acknowledging an entry once it is written to the journal, before fsync; a power loss of the bookies in the ack quorum loses what the journal had not flushed yet"},
		{Name: "default", Label: "Pulsar default (journalSyncData=true)", ExpectLoss: false, ServerFsync: drivers.ServerFsync(true),
			Why: "with journalSyncData=true (the default) a bookie fsyncs its journal before it acknowledges an entry, so an ack means fsynced on the ack quorum, and a power loss loses nothing acked"},
	}},
	// journalSyncData in each bookie's bookkeeper.conf.
	ConfigFsync: drivers.PropertyFsync("journalSyncData", "true", "false"),
	// 5 MiB less 64 KiB. A Pulsar broker's maxMessageSize defaults to
	// 5,242,880 bytes and counts the message's metadata (producer name,
	// sequence ID, properties) with its value; the driver does not enable
	// chunking, so a larger message is rejected.
	MaxMessageSize: 5<<20 - 64<<10,
	// A partitioned topic's limit is the broker's
	// maxNumPartitionsPerPartitionedTopic (0, no limit, by default), which
	// refuses the creation itself when set. Each partition is a topic of
	// its own with its own managed ledger and, in pulsar-client-go, its
	// own producer per load producer; a public benchmark carried 50,000.
	// 100,000 is a sanity bound above that.
	MaxPartitions:    100_000,
	MaxPartitionsWhy: "the broker's maxNumPartitionsPerPartitionedTopic refuses beyond its own setting; each partition is a topic with its own ledger and its own client producer, so this is a sanity bound twice the most a public benchmark carried",
	// BookKeeper's entry logs (the ledgers' data).
	DataFiles: []string{"*.log"},
}

// TargetWords implements drivers.TargetWords: Pulsar calls the broker that
// serves a partition its owner, so owner:<topic>/<partition> is
// leader:<topic>/<partition>.
func (Profile) TargetWords() map[string]string { return map[string]string{"owner": "leader"} }

// Launcher implements cluster.Provider: a local standalone.
func (Profile) Launcher() cluster.Launcher { return launcher }

// flags are the Pulsar driver's flags.
type flags struct {
	serviceURL, adminURL string
	bookieHTTPURL        string
	tenant, namespace    string
	batching             bool
	batchingDelay        time.Duration
	sendTimeout          time.Duration
	maxPending           int
}

func (p *flags) Register(fs *pflag.FlagSet) {
	def := Config{}.WithDefaults()
	fs.StringVar(&p.serviceURL, "service-url", "", "Pulsar: the broker's binary protocol URL, pulsar://host:6650")
	fs.StringVar(&p.adminURL, "admin-url", "", "Pulsar: the broker's admin REST URL, http://host:8080")
	fs.StringVar(&p.bookieHTTPURL, "bookie-http-url", "", "Pulsar: a bookie's admin API, http://host:8000, to read journalSyncData from the running bookie")
	fs.StringVar(&p.tenant, "tenant", def.Tenant, "Pulsar: tenant of the run's topic")
	fs.StringVar(&p.namespace, "namespace", def.Namespace, "Pulsar: namespace of the run's topic")
	fs.BoolVar(&p.batching, "batching", !def.DisableBatching, "Pulsar: batch messages in the producer (batchingEnabled)")
	fs.DurationVar(&p.batchingDelay, "batching-max-publish-delay", def.BatchingMaxPublishDelay, "Pulsar: longest a batch waits to fill (batchingMaxPublishDelay)")
	fs.DurationVar(&p.sendTimeout, "send-timeout", def.SendTimeout, "Pulsar: longest a message may wait for its ack (sendTimeout); then its outcome is unknown")
	fs.IntVar(&p.maxPending, "max-pending-messages", def.MaxPendingMessages, "Pulsar: pending messages per partition producer; a send past it is rejected (maxPendingMessages)")
	drivers.RegisterNetns(fs)
}

// Open implements drivers.Flags.
func (p *flags) Open(fs *pflag.FlagSet, saved json.RawMessage) (drivers.Driver, any, error) {
	c, err := drivers.OpenSaved(fs, saved, func(c *Config, o drivers.Overlay) {
		o.SetOr("service-url", c.ServiceURL == "", func() { c.ServiceURL = p.serviceURL })
		o.SetOr("admin-url", c.AdminURL == "", func() { c.AdminURL = p.adminURL })
		o.SetOr("bookie-http-url", c.BookieHTTPURL == "", func() { c.BookieHTTPURL = p.bookieHTTPURL })
		o.Set("tenant", func() { c.Tenant = p.tenant })
		o.Set("namespace", func() { c.Namespace = p.namespace })
		o.Set("batching", func() { c.DisableBatching = !p.batching })
		o.Set("batching-max-publish-delay", func() { c.BatchingMaxPublishDelay = p.batchingDelay })
		o.Set("send-timeout", func() { c.SendTimeout = p.sendTimeout })
		o.Set("max-pending-messages", func() { c.MaxPendingMessages = p.maxPending })
		o.Netns(&c.NetNS)
	})
	if err != nil {
		return nil, nil, err
	}
	return drivers.Opened(New(c))
}
