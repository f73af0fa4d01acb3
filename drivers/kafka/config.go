// Package kafka is ackcheck's driver for Apache Kafka and Kafka-compatible
// brokers (Redpanda, KubeMQ's Kafka API and others), on franz-go's kgo
// client and kadm admin client.
//
// Each load producer is its own kgo.Client, so with idempotence each has its
// own producer ID and sequence numbers, as separate applications would.
// Read-back assigns partitions directly (no consumer group), so it works on
// brokers without KIP-848 groups and leaves no group state behind.
package kafka

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config configures the driver. Zero values take the documented defaults;
// Validate rejects combinations Kafka would reject, with a sentence that
// says what to change.
type Config struct {
	// Brokers are the bootstrap addresses (host:port). Required.
	Brokers []string `json:"brokers"`
	// Acks is "all" (default), "1" or "0": the producer's acks setting.
	Acks string `json:"acks"`
	// Idempotent enables the idempotent producer. Default: on with
	// acks=all (Kafka requires acks=all for it), off otherwise.
	Idempotent *bool `json:"idempotent,omitempty"`
	// Compression is none (default), gzip, snappy, lz4 or zstd.
	Compression string `json:"compression"`
	// Linger is how long a batch waits for more records. Default 5ms.
	Linger time.Duration `json:"linger"`
	// DeliveryTimeout bounds one record from publish to outcome, retries
	// included (delivery.timeout.ms). When it fires the outcome is Unknown.
	// Default 30s.
	DeliveryTimeout time.Duration `json:"delivery_timeout"`
	// MaxBuffered is the most records one producer client buffers. The load
	// bounds in-flight sends itself; this only has to be above that bound so
	// that the client never blocks the pacer. Default 1,000,000.
	MaxBuffered int `json:"max_buffered,omitempty"`

	// SASLMechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism string `json:"sasl_mechanism,omitempty"`
	SASLUsername  string `json:"sasl_username,omitempty"`
	SASLPassword  string `json:"sasl_password,omitempty"`

	// TLS enables TLS. TLSCAFile, TLSCertFile and TLSKeyFile are PEM files;
	// TLSInsecureSkipVerify turns off server certificate checks.
	TLS                   bool   `json:"tls,omitempty"`
	TLSCAFile             string `json:"tls_ca_file,omitempty"`
	TLSCertFile           string `json:"tls_cert_file,omitempty"`
	TLSKeyFile            string `json:"tls_key_file,omitempty"`
	TLSInsecureSkipVerify bool   `json:"tls_insecure_skip_verify,omitempty"`

	// NetNS is the prefix of the network namespaces of a local cluster
	// started with `cluster kafka up --netns`: every connection is then
	// made from that Net's hub (netns.Net.Dial), the only place its
	// brokers can be reached from. "" dials from the machine's own
	// network namespace. Set from --cluster-dir by the cluster's
	// ClientFlags.
	NetNS string `json:"netns,omitempty"`
}

// netnsDialTimeout bounds one connect through a Net: kgo applies its
// DialTimeout (default 10 s) only to its own dialer, and a node a fault
// cut off from the client drops the SYN, so without it a dial would wait
// for the kernel's retries (about two minutes).
const netnsDialTimeout = 10 * time.Second

// WithDefaults returns c with every zero field set to its default; the
// flags' defaults are these.
func (c Config) WithDefaults() Config {
	c.Acks = cmp.Or(c.Acks, "all")
	if c.Idempotent == nil {
		on := c.Acks == "all"
		c.Idempotent = &on
	}
	c.Compression = cmp.Or(c.Compression, "none")
	c.Linger = cmp.Or(c.Linger, 5*time.Millisecond)
	c.DeliveryTimeout = cmp.Or(c.DeliveryTimeout, 30*time.Second)
	c.MaxBuffered = cmp.Or(c.MaxBuffered, 1_000_000)
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if len(c.Brokers) == 0 {
		return fmt.Errorf("no brokers: pass --brokers host:port[,host:port...]")
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			return fmt.Errorf("broker %q has no port: write it as host:port, e.g. 127.0.0.1:9092", b)
		}
	}
	switch c.Acks {
	case "all", "-1", "1", "0":
	default:
		return fmt.Errorf("--acks %q: use all, 1 or 0", c.Acks)
	}
	if *c.Idempotent && c.Acks != "all" && c.Acks != "-1" {
		return fmt.Errorf("--idempotent needs --acks all (Kafka rejects idempotent producers with acks=%s); drop --idempotent or use --acks all", c.Acks)
	}
	if _, err := c.compression(); err != nil {
		return err
	}
	switch strings.ToUpper(c.SASLMechanism) {
	case "":
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if c.SASLUsername == "" {
			return fmt.Errorf("--sasl-mechanism %s needs --sasl-username and --sasl-password", c.SASLMechanism)
		}
	default:
		return fmt.Errorf("--sasl-mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.SASLMechanism)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if c.DeliveryTimeout < time.Second {
		return fmt.Errorf("--delivery-timeout %s is below the 1s the Kafka client allows", c.DeliveryTimeout)
	}
	if c.Linger < 0 {
		return fmt.Errorf("--linger must not be negative")
	}
	if err := drivers.CheckNetns(c.NetNS, c.Brokers...); err != nil {
		return err
	}
	if c.NetNS != "" {
		if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" {
			return fmt.Errorf("--netns reaches a local cluster, which has no TLS listener: drop the --tls flags")
		}
	}
	return nil
}

func (c Config) compression() (kgo.CompressionCodec, error) {
	switch strings.ToLower(c.Compression) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: use none, gzip, snappy, lz4 or zstd", c.Compression)
}

func (c Config) acks() kgo.Acks {
	switch c.Acks {
	case "1":
		return kgo.LeaderAck()
	case "0":
		return kgo.NoAck()
	}
	return kgo.AllISRAcks()
}

// commonOpts are the options every client of the driver shares: brokers,
// security, and short retry backoffs so that a failover shows up as
// latency rather than as a client asleep.
func (c Config) commonOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if m := c.saslMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if c.NetNS != "" {
		// The one place the driver's clients (load, read-back, admin and
		// topology reads) get their connections: all through the hub.
		n := &netns.Net{Prefix: c.NetNS}
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, netnsDialTimeout)
			defer cancel()
			return n.Dial(ctx, network, host)
		}))
	}
	if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

func (c Config) saslMechanism() sasl.Mechanism {
	switch strings.ToUpper(c.SASLMechanism) {
	case "PLAIN":
		return plain.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha512Mechanism()
	}
	return nil
}

func (c Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLSInsecureSkipVerify}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", c.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// UnmarshalJSON reads run.json's driver settings: snake_case keys, and
// the Go field names run.json had before (ackcheck verify of an old run).
func (c *Config) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	t := reflect.TypeOf(*c)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if v, ok := raw[f.Name]; ok && key != f.Name {
			if _, both := raw[key]; !both {
				raw[key] = v
			}
			delete(raw, f.Name)
		}
	}
	data, _ = json.Marshal(raw)
	type plain Config // without this method
	return json.Unmarshal(data, (*plain)(c))
}
