package kafka

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// Profile is Apache Kafka's, for Kafka and every Kafka-compatible broker:
// its Spec, and what depends on the driver's acks.
type Profile struct{ drivers.Declared[Profile] }

var (
	_ drivers.Profile  = Profile{}
	_ cluster.Provider = Profile{}
)

// Spec implements drivers.SpecOf: what Declared answers from.
func (Profile) Spec() drivers.Spec { return spec }

var spec = drivers.Spec{
	Name: driverName, AddressFlag: "brokers",
	NewFlags: func() drivers.Flags { return &flags{} },
	// The fsync audit: the default (the log is flushed by the OS, not
	// per message) against flush.messages=1 (every replica fsyncs each
	// append before it counts), both topic settings.
	Durability: &drivers.Durability{
		Settings: []drivers.DurabilitySetting{
			{Name: "default", Label: "Kafka default (flush.messages unset: no fsync per message)", ExpectLoss: true,
				Why: "Kafka's documentation leaves durability to replication and the OS page cache by default; an ack does not wait for fsync, so when every replica loses power at once, acked messages not yet written back by the OS are lost"},
			{Name: "flush1", Label: "flush.messages=1 (fsync every message)", TopicConfigs: map[string]string{"flush.messages": "1"},
				ExpectLoss: false,
				Why:        "with flush.messages=1 each replica fsyncs an append before it counts toward the high watermark, so an acks=all ack means fsynced on every in-sync replica, and a power loss loses nothing acked"},
		},
		Check: func(d drivers.Driver) error {
			if acks := acksOf(d); !acksAll(acks) {
				return fmt.Errorf("the audit compares fsync settings under acks=all; --acks %s would measure replication instead", acks)
			}
			return nil
		},
	},
	// The brokers' own log.flush.interval.messages in server.properties.
	ConfigFsync: drivers.PropertyFsync("log.flush.interval.messages", "1", LongMax),
	// 999,000 bytes. The driver leaves franz-go's ProducerBatchMaxBytes at
	// its default, 1,000,012 bytes (Kafka's max.message.bytes default of
	// old; brokers now allow 1,048,588), and one record batch holds a
	// 61-byte header, the record's framing (at most 21 bytes) and its key
	// (at most 21 bytes) besides the value; the rest is room. A topic that
	// allows more does not help: the client's limit is fixed by the driver.
	MaxMessageSize: 999_000,
	// The cluster decides what it accepts (a CreateTopics beyond its
	// limits is refused by the controller, with its error in ackcheck's),
	// so ackcheck bounds only what no cluster should be sent: 1,000,000
	// partitions at once is a topic whose replica assignments alone make
	// a CreateTopics request of tens of MB and a metadata record per
	// partition in the KRaft log. A public benchmark carried 25,000 on
	// Kafka; the local cluster's heaps hold far fewer at RF 3.
	MaxPartitions:    1_000_000,
	MaxPartitionsWhy: "the cluster itself refuses what it cannot hold; this is only a sanity bound, since one CreateTopics for more carries tens of MB of replica assignments and a KRaft metadata record per partition",
	// The log segments.
	DataFiles: []string{"*.log"},
}

// Launcher implements cluster.Provider: a local KRaft cluster.
func (Profile) Launcher() cluster.Launcher { return launcher }

// Expect implements drivers.Profile: what the leader kill does depends on
// the producer's acks.
func (Profile) Expect(s drivers.Scenario, d drivers.Driver) (string, string) {
	acks := acksOf(d)
	variant := "acks=" + acks
	if s != drivers.LeaderKill {
		return variant, ""
	}
	if acksAll(acks) {
		return variant, "a new leader is elected from the in-sync replicas within seconds; acks pause for the partitions the killed broker led and resume; the restarted broker rejoins as a follower; no acknowledged message is lost"
	}
	return variant, "a new leader is elected within seconds; with acks=" + acks + " the old leader may have acknowledged messages no follower had copied yet, and those can be lost"
}

// ExpectFault implements drivers.FaultExpecter (a test asserts it): what a
// fault does to a Kafka broker, in Kafka's terms (the ISR, fencing); ""
// where the generic expectation holds (a kill under acks=all).
func (Profile) ExpectFault(f drivers.NodeFault, d drivers.Driver) string {
	switch acks := acksOf(d); f {
	case drivers.NodeKilled:
		if !acksAll(acks) {
			return "the node dies at once; partitions it led elect new leaders; with acks=" + acks + " messages it acknowledged before any follower copied them can be lost"
		}
	case drivers.NodePaused:
		return "the node stops answering; the controller fences it after broker.session.timeout.ms and leaders move; acks stall meanwhile for partitions it led"
	case drivers.NodeRestarted:
		return "the node starts on the same data, rejoins as a follower, catches up, and its replicas return to the ISR"
	}
	return ""
}

// acksOf is the producer's acks setting of d ("all" when d is not a Kafka
// driver).
func acksOf(d drivers.Driver) string {
	if kd, ok := d.(*Driver); ok {
		return kd.Config().WithDefaults().Acks
	}
	return "all"
}

// acksAll reports whether acks waits for every in-sync replica.
func acksAll(acks string) bool { return acks == "all" || acks == "-1" }

// LongMax is Kafka's "never flush by count" value, the default of
// flush.messages and log.flush.interval.messages.
const LongMax = "9223372036854775807"

// flags are the Kafka driver's flags, named as Kafka's users know them.
type flags struct {
	brokers         []string
	acks            string
	idempotent      bool
	compression     string
	linger          time.Duration
	deliveryTimeout time.Duration
	saslMechanism   string
	saslUsername    string
	saslPassword    string
	tls             bool
	tlsCA           string
	tlsCert         string
	tlsKey          string
	tlsInsecure     bool
}

func (k *flags) Register(fs *pflag.FlagSet) {
	def := Config{}.WithDefaults()
	fs.StringSliceVar(&k.brokers, "brokers", nil, "Kafka bootstrap brokers, host:port[,host:port...]")
	fs.StringVar(&k.acks, "acks", def.Acks, "producer acks: all, 1 or 0")
	fs.BoolVar(&k.idempotent, "idempotent", false, "idempotent producer (default: on with --acks all, off otherwise)")
	fs.StringVar(&k.compression, "compression", def.Compression, "batch compression: none, gzip, snappy, lz4, zstd")
	fs.DurationVar(&k.linger, "linger", def.Linger, "producer linger (linger.ms)")
	fs.DurationVar(&k.deliveryTimeout, "delivery-timeout", def.DeliveryTimeout, "longest a record may take from send to outcome, retries included (delivery.timeout.ms); then its outcome is unknown")
	fs.StringVar(&k.saslMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&k.saslUsername, "sasl-username", "", "SASL user name")
	fs.StringVar(&k.saslPassword, "sasl-password", "", "SASL password (or set ACKCHECK_SASL_PASSWORD); never written to the run directory")
	fs.BoolVar(&k.tls, "tls", false, "connect with TLS")
	fs.StringVar(&k.tlsCA, "tls-ca", "", "PEM file of CA certificates to trust")
	fs.StringVar(&k.tlsCert, "tls-cert", "", "PEM client certificate (with --tls-key)")
	fs.StringVar(&k.tlsKey, "tls-key", "", "PEM client key (with --tls-cert)")
	fs.BoolVar(&k.tlsInsecure, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates")
	drivers.RegisterNetns(fs)
}

// Open implements drivers.Flags. A value given explicitly that the client
// would replace or act on wrongly is refused before anything connects.
func (k *flags) Open(fs *pflag.FlagSet, saved json.RawMessage) (drivers.Driver, any, error) {
	given := fs.Changed
	switch {
	case given("delivery-timeout") && k.deliveryTimeout < time.Second:
		return nil, nil, fmt.Errorf("--delivery-timeout %s: use at least 1s", k.deliveryTimeout)
	case (given("sasl-username") || given("sasl-password")) && k.saslMechanism == "":
		return nil, nil, fmt.Errorf("--sasl-username and --sasl-password need --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512); without it the client would connect unauthenticated")
	}
	c, err := drivers.OpenSaved(fs, saved, func(c *Config, o drivers.Overlay) {
		o.SetOr("brokers", len(c.Brokers) == 0, func() { c.Brokers = k.brokers })
		o.Set("acks", func() { c.Acks = k.acks })
		o.Set("idempotent", func() { v := k.idempotent; c.Idempotent = &v })
		o.Set("compression", func() { c.Compression = k.compression })
		o.Set("linger", func() { c.Linger = k.linger })
		o.Set("delivery-timeout", func() { c.DeliveryTimeout = k.deliveryTimeout })
		o.Set("sasl-mechanism", func() { c.SASLMechanism = k.saslMechanism })
		o.Set("sasl-username", func() { c.SASLUsername = k.saslUsername })
		o.Set("tls", func() { c.TLS = k.tls })
		o.Set("tls-ca", func() { c.TLSCAFile = k.tlsCA })
		o.Set("tls-cert", func() { c.TLSCertFile = k.tlsCert })
		o.Set("tls-key", func() { c.TLSKeyFile = k.tlsKey })
		o.Set("tls-insecure-skip-verify", func() { c.TLSInsecureSkipVerify = k.tlsInsecure })
		o.Netns(&c.NetNS)
	})
	if err != nil {
		return nil, nil, err
	}
	c.SASLPassword = k.saslPassword
	if c.SASLPassword == "" {
		c.SASLPassword = os.Getenv("ACKCHECK_SASL_PASSWORD")
	}
	d, err := New(c)
	if err != nil {
		return nil, nil, err
	}
	public := d.Config()
	public.SASLPassword = ""
	return d, public, nil
}
