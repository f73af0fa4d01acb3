package pulsar

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// Profile is Apache Pulsar's.
type Profile struct{}

var (
	_ drivers.Profile     = Profile{}
	_ cluster.Provider    = Profile{}
	_ drivers.TargetWords = Profile{}
)

// TargetWords implements drivers.TargetWords: Pulsar calls the broker that
// serves a partition its owner, so owner:<topic>/<partition> is
// leader:<topic>/<partition>.
func (Profile) TargetWords() map[string]string { return map[string]string{"owner": "leader"} }

// Name implements drivers.Profile.
func (Profile) Name() string { return driverName }

// AddressFlag implements drivers.Profile.
func (Profile) AddressFlag() string { return "service-url" }

// Launcher implements cluster.Provider: a local standalone.
func (Profile) Launcher() cluster.Launcher { return launcher }

// Expect implements drivers.Profile.
func (Profile) Expect(s drivers.Scenario, _ drivers.Driver) (string, string) {
	if s == drivers.LeaderKill {
		return "", "the killed broker's topics move to another broker, or wait for it to restart; acks pause for them and resume; no acknowledged message is lost"
	}
	return "", ""
}

// Durability implements drivers.Profile: the bookie's
// journalSyncData=false (the journal is fsynced only by the bookie's
// periodic flush) against Pulsar's default, journalSyncData=true. It is
// the bookie's own setting: each run needs the cluster switched to it.
func (Profile) Durability() (drivers.Durability, bool) {
	off, on := false, true
	return drivers.Durability{Settings: []drivers.DurabilitySetting{
		{Name: "nosync", Label: "journalSyncData=false", ExpectLoss: true, ServerFsync: &off,
			Why: "BookKeeper documents journalSyncData=false as acknowledging an entry once it is written to the journal, before fsync; a power loss of the bookies in the ack quorum loses what the journal had not flushed yet"},
		{Name: "default", Label: "Pulsar default (journalSyncData=true)", ExpectLoss: false, ServerFsync: &on,
			Why: "with journalSyncData=true (the default) a bookie fsyncs its journal before it acknowledges an entry, so an ack means fsynced on the ack quorum, and a power loss loses nothing acked"},
	}}, true
}

// MaxMessageSize implements drivers.Profile: 5 MiB less 64 KiB. A Pulsar
// broker's maxMessageSize defaults to 5,242,880 bytes and counts the
// message's metadata (producer name, sequence ID, properties) with its
// value; the driver does not enable chunking, so a larger message is
// rejected.
func (Profile) MaxMessageSize() int { return 5<<20 - 64<<10 }

// ConfigFsync implements drivers.Profile: journalSyncData in each
// bookie's bookkeeper.conf.
func (Profile) ConfigFsync() *drivers.ConfigEdit {
	return &drivers.ConfigEdit{Setting: "journalSyncData", Edit: func(c string, on bool) (string, error) {
		return drivers.SetProperty(c, "journalSyncData", strconv.FormatBool(on)), nil
	}}
}

// NewFlags implements drivers.Profile.
func (Profile) NewFlags() drivers.Flags { return &flags{} }

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
	fs.StringVar(&p.serviceURL, "service-url", "", "Pulsar: the broker's binary protocol URL, pulsar://host:6650")
	fs.StringVar(&p.adminURL, "admin-url", "", "Pulsar: the broker's admin REST URL, http://host:8080")
	fs.StringVar(&p.bookieHTTPURL, "bookie-http-url", "", "Pulsar: a bookie's admin API, http://host:8000, to read journalSyncData from the running bookie")
	fs.StringVar(&p.tenant, "tenant", "public", "Pulsar: tenant of the run's topic")
	fs.StringVar(&p.namespace, "namespace", "default", "Pulsar: namespace of the run's topic")
	fs.BoolVar(&p.batching, "batching", true, "Pulsar: batch messages in the producer (batchingEnabled)")
	fs.DurationVar(&p.batchingDelay, "batching-max-publish-delay", 10*time.Millisecond, "Pulsar: longest a batch waits to fill (batchingMaxPublishDelay)")
	fs.DurationVar(&p.sendTimeout, "send-timeout", 30*time.Second, "Pulsar: longest a message may wait for its ack (sendTimeout); then its outcome is unknown")
	fs.IntVar(&p.maxPending, "max-pending-messages", 10000, "Pulsar: pending messages per partition producer; a send past it is rejected (maxPendingMessages)")
	drivers.RegisterNetns(fs)
}

// Open implements drivers.Flags.
func (p *flags) Open(fs *pflag.FlagSet, saved json.RawMessage) (drivers.Driver, any, error) {
	var c Config
	if err := drivers.DecodeSaved(saved, &c); err != nil {
		return nil, nil, err
	}
	set := func(name string, apply func()) {
		if fs.Changed(name) || (name == "service-url" && c.ServiceURL == "") || (name == "admin-url" && c.AdminURL == "") ||
			(name == "bookie-http-url" && c.BookieHTTPURL == "") {
			apply()
		}
	}
	set("service-url", func() { c.ServiceURL = p.serviceURL })
	set("admin-url", func() { c.AdminURL = p.adminURL })
	set("bookie-http-url", func() { c.BookieHTTPURL = p.bookieHTTPURL })
	set("tenant", func() { c.Tenant = p.tenant })
	set("namespace", func() { c.Namespace = p.namespace })
	set("batching", func() { c.DisableBatching = !p.batching })
	set("batching-max-publish-delay", func() { c.BatchingMaxPublishDelay = p.batchingDelay })
	set("send-timeout", func() { c.SendTimeout = p.sendTimeout })
	set("max-pending-messages", func() { c.MaxPendingMessages = p.maxPending })
	set("netns", func() { c.NetNS, _ = fs.GetString("netns") })
	d, err := New(c)
	if err != nil {
		return nil, nil, err
	}
	return d, d.Config(), nil
}

// MaxPartitions implements drivers.PartitionLimiter: a partitioned
// topic's limit is the broker's maxNumPartitionsPerPartitionedTopic (0,
// no limit, by default), which refuses the creation itself when set. Each
// partition is a topic of its own with its own managed ledger and, in
// pulsar-client-go, its own producer per load producer; a public
// benchmark carried 50,000. 100,000 is a sanity bound above that.
func (Profile) MaxPartitions() (int, string) {
	return 100_000, "the broker's maxNumPartitionsPerPartitionedTopic refuses beyond its own setting; each partition is a topic with its own ledger and its own client producer, so this is a sanity bound twice the most a public benchmark carried"
}

// DataFiles implements drivers.DataFiler: BookKeeper's entry logs (the
// ledgers' data).
func (Profile) DataFiles() []string { return []string{"*.log"} }
