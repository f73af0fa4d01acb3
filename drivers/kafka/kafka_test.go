package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/twmb/franz-go/pkg/kfake"
)

func newKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The conformance suite against kfake: fast, in-process. The same suite
// runs against real Kafka in the cluster tests.
func TestConformanceKfake(t *testing.T) {
	c := newKfake(t)
	drivertest.Run(t, drivertest.Harness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := New(Config{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 4, ReplicationFactor: 3, Rate: 2000, Duration: 2 * time.Second,
	})
}

func TestConfigValidate(t *testing.T) {
	off, on := false, true
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{Brokers: []string{"127.0.0.1:9092"}}, ""},
		{"no brokers", Config{}, "--brokers"},
		{"no port", Config{Brokers: []string{"localhost"}}, "host:port"},
		{"bad acks", Config{Brokers: []string{"a:1"}, Acks: "2"}, "--acks"},
		{"idempotent acks=1", Config{Brokers: []string{"a:1"}, Acks: "1", Idempotent: &on}, "--idempotent needs --acks all"},
		{"acks=1 not idempotent", Config{Brokers: []string{"a:1"}, Acks: "1", Idempotent: &off}, ""},
		{"acks=1 default", Config{Brokers: []string{"a:1"}, Acks: "1"}, ""},
		{"compression", Config{Brokers: []string{"a:1"}, Compression: "brotli"}, "--compression"},
		{"sasl", Config{Brokers: []string{"a:1"}, SASLMechanism: "GSSAPI"}, "--sasl-mechanism"},
		{"sasl no user", Config{Brokers: []string{"a:1"}, SASLMechanism: "PLAIN"}, "--sasl-username"},
		{"short delivery timeout", Config{Brokers: []string{"a:1"}, DeliveryTimeout: time.Millisecond}, "--delivery-timeout"},
		{"cert without key", Config{Brokers: []string{"a:1"}, TLSCertFile: "c.pem"}, "--tls-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
	if d := (Config{Brokers: []string{"a:1"}, Acks: "1"}).WithDefaults(); *d.Idempotent {
		t.Fatal("acks=1 defaults to idempotent")
	}
}
