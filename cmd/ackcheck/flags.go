package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	natsdriver "github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/spf13/pflag"
)

// driverFlags are every driver's flags, each named as that broker's users
// know them.
type driverFlags struct {
	pulsar pulsarFlags
	nats   natsFlags

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

func (k *driverFlags) register(fs *pflag.FlagSet) {
	k.registerKafka(fs)
	k.pulsar.register(fs)
	k.nats.register(fs)
}

// registerKafka registers the Kafka driver's own flags.
func (k *driverFlags) registerKafka(fs *pflag.FlagSet) {
	fs.StringSliceVar(&k.brokers, "brokers", nil, "Kafka bootstrap brokers, host:port[,host:port...]")
	fs.StringVar(&k.acks, "acks", "all", "producer acks: all, 1 or 0")
	fs.BoolVar(&k.idempotent, "idempotent", false, "idempotent producer (default: on with --acks all, off otherwise)")
	fs.StringVar(&k.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fs.DurationVar(&k.linger, "linger", 5*time.Millisecond, "producer linger (linger.ms)")
	fs.DurationVar(&k.deliveryTimeout, "delivery-timeout", 30*time.Second, "longest a record may take from send to outcome, retries included (delivery.timeout.ms); then its outcome is unknown")
	fs.StringVar(&k.saslMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&k.saslUsername, "sasl-username", "", "SASL user name")
	fs.StringVar(&k.saslPassword, "sasl-password", "", "SASL password (or set ACKCHECK_SASL_PASSWORD); never written to the run directory")
	fs.BoolVar(&k.tls, "tls", false, "connect with TLS")
	fs.StringVar(&k.tlsCA, "tls-ca", "", "PEM file of CA certificates to trust")
	fs.StringVar(&k.tlsCert, "tls-cert", "", "PEM client certificate (with --tls-key)")
	fs.StringVar(&k.tlsKey, "tls-key", "", "PEM client key (with --tls-cert)")
	fs.BoolVar(&k.tlsInsecure, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates")
}

// flagOwners maps each driver's own flag to that driver.
func flagOwners() map[string]string {
	var k driverFlags
	owners := map[string]string{}
	for driver, register := range map[string]func(*pflag.FlagSet){"kafka": k.registerKafka, "pulsar": k.pulsar.register, "nats": k.nats.register} {
		fs := pflag.NewFlagSet(driver, pflag.ContinueOnError)
		register(fs)
		fs.VisitAll(func(f *pflag.Flag) { owners[f.Name] = driver })
	}
	return owners
}

// flagsBelongTo refuses a flag of another driver given on the command
// line: it would be accepted and silently ignored (--driver kafka
// --servers nats://...).
func flagsBelongTo(driver string, fs *pflag.FlagSet) error {
	owners := flagOwners()
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if o, ok := owners[f.Name]; ok && o != driver && err == nil {
			err = fmt.Errorf("--%s is a flag of the %s driver, and this run uses --driver %s: drop it, or give --driver %s", f.Name, o, driver, o)
		}
	})
	return err
}

// natsFlags are the NATS JetStream driver's flags.
type natsFlags struct {
	servers, monitorURLs []string
	publishTimeout       time.Duration
	ackTimeout           time.Duration
	maxPending           int
}

func (n *natsFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&n.servers, "servers", nil, "NATS: the servers' client URLs, nats://host:4222[,...]; node N of faults is the N-th")
	fs.StringSliceVar(&n.monitorURLs, "monitor-urls", nil, "NATS: the servers' monitoring URLs, http://host:8222[,...], in the order of --servers (sync_interval, versions, health)")
	fs.DurationVar(&n.publishTimeout, "publish-timeout", 30*time.Second, "NATS: longest a message may take from its first send to its ack, retries with the same Nats-Msg-Id included; then its outcome is unknown")
	fs.DurationVar(&n.ackTimeout, "ack-timeout", 5*time.Second, "NATS: longest one publish attempt waits for its ack before it is retried")
	fs.IntVar(&n.maxPending, "max-pending", 10000, "NATS: unanswered publishes per producer; one past it is rejected")
}

func (n *natsFlags) config(fs *pflag.FlagSet, base natsdriver.Config) natsdriver.Config {
	c := base
	set := func(name string, apply func()) {
		if fs.Changed(name) || (name == "servers" && len(c.Servers) == 0) || (name == "monitor-urls" && len(c.MonitorURLs) == 0) {
			apply()
		}
	}
	set("servers", func() { c.Servers = n.servers })
	set("monitor-urls", func() { c.MonitorURLs = n.monitorURLs })
	set("publish-timeout", func() { c.PublishTimeout = n.publishTimeout })
	set("ack-timeout", func() { c.AckTimeout = n.ackTimeout })
	set("max-pending", func() { c.MaxPending = n.maxPending })
	return c
}

// pulsarFlags are the Pulsar driver's flags.
type pulsarFlags struct {
	serviceURL, adminURL string
	bookieHTTPURL        string
	tenant, namespace    string
	batching             bool
	batchingDelay        time.Duration
	sendTimeout          time.Duration
	maxPending           int
}

func (p *pulsarFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.serviceURL, "service-url", "", "Pulsar: the broker's binary protocol URL, pulsar://host:6650")
	fs.StringVar(&p.adminURL, "admin-url", "", "Pulsar: the broker's admin REST URL, http://host:8080")
	fs.StringVar(&p.bookieHTTPURL, "bookie-http-url", "", "Pulsar: a bookie's admin API, http://host:8000, to read journalSyncData from the running bookie")
	fs.StringVar(&p.tenant, "tenant", "public", "Pulsar: tenant of the run's topic")
	fs.StringVar(&p.namespace, "namespace", "default", "Pulsar: namespace of the run's topic")
	fs.BoolVar(&p.batching, "batching", true, "Pulsar: batch messages in the producer (batchingEnabled)")
	fs.DurationVar(&p.batchingDelay, "batching-max-publish-delay", 10*time.Millisecond, "Pulsar: longest a batch waits to fill (batchingMaxPublishDelay)")
	fs.DurationVar(&p.sendTimeout, "send-timeout", 30*time.Second, "Pulsar: longest a message may wait for its ack (sendTimeout); then its outcome is unknown")
	fs.IntVar(&p.maxPending, "max-pending-messages", 10000, "Pulsar: pending messages per partition producer; a send past it is rejected (maxPendingMessages)")
}

func (p *pulsarFlags) config(fs *pflag.FlagSet, base pulsar.Config) pulsar.Config {
	c := base
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
	return c
}

// config builds the driver config: base (from run.json, for verify) with
// every flag the user set on top.
func (k *driverFlags) config(fs *pflag.FlagSet, base kafka.Config) kafka.Config {
	c := base
	set := func(name string, apply func()) {
		if fs.Changed(name) || (name == "brokers" && len(c.Brokers) == 0) {
			apply()
		}
	}
	set("brokers", func() { c.Brokers = k.brokers })
	set("acks", func() { c.Acks = k.acks })
	set("idempotent", func() { v := k.idempotent; c.Idempotent = &v })
	set("compression", func() { c.Compression = k.compression })
	set("linger", func() { c.Linger = k.linger })
	set("delivery-timeout", func() { c.DeliveryTimeout = k.deliveryTimeout })
	set("sasl-mechanism", func() { c.SASLMechanism = k.saslMechanism })
	set("sasl-username", func() { c.SASLUsername = k.saslUsername })
	set("tls", func() { c.TLS = k.tls })
	set("tls-ca", func() { c.TLSCAFile = k.tlsCA })
	set("tls-cert", func() { c.TLSCertFile = k.tlsCert })
	set("tls-key", func() { c.TLSKeyFile = k.tlsKey })
	set("tls-insecure-skip-verify", func() { c.TLSInsecureSkipVerify = k.tlsInsecure })
	c.SASLPassword = k.saslPassword
	if c.SASLPassword == "" {
		c.SASLPassword = os.Getenv("ACKCHECK_SASL_PASSWORD")
	}
	return c
}

// newDriver connects the named driver. settings is the driver part of an
// earlier run.json (nil for a new run). It returns the driver and its
// settings with secrets removed, for run.json.
func newDriver(name string, fs *pflag.FlagSet, kf *driverFlags, settings json.RawMessage) (drivers.Driver, any, error) {
	name = strings.ToLower(name)
	switch name {
	case "kafka", "pulsar", "nats":
		if err := flagsBelongTo(name, fs); err != nil {
			return nil, nil, err
		}
	}
	switch name {
	case "kafka":
		var base kafka.Config
		if len(settings) > 0 {
			if err := json.Unmarshal(settings, &base); err != nil {
				return nil, nil, fmt.Errorf("run.json driver settings: %w", err)
			}
		}
		cfg := kf.config(fs, base)
		d, err := kafka.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		public := d.Config()
		public.SASLPassword = ""
		return d, public, nil
	case "pulsar":
		var base pulsar.Config
		if len(settings) > 0 {
			if err := json.Unmarshal(settings, &base); err != nil {
				return nil, nil, fmt.Errorf("run.json driver settings: %w", err)
			}
		}
		d, err := pulsar.New(kf.pulsar.config(fs, base))
		if err != nil {
			return nil, nil, err
		}
		return d, d.Config(), nil
	case "nats":
		var base natsdriver.Config
		if len(settings) > 0 {
			if err := json.Unmarshal(settings, &base); err != nil {
				return nil, nil, fmt.Errorf("run.json driver settings: %w", err)
			}
		}
		d, err := natsdriver.New(kf.nats.config(fs, base))
		if err != nil {
			return nil, nil, err
		}
		return d, d.Config(), nil
	}
	return nil, nil, fmt.Errorf("--driver %q: the drivers are: kafka, pulsar, nats", name)
}
