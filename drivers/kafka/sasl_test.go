package kafka

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestSASL(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			c := newKfake(t, kfake.EnableSASL(), kfake.Superuser(mech, "ackcheck", "s3cret"))
			good, err := New(Config{Brokers: c.ListenAddrs(), SASLMechanism: mech, SASLUsername: "ackcheck", SASLPassword: "s3cret"})
			if err != nil {
				t.Fatal(err)
			}
			defer good.Close()
			res, err := runner.Run(context.Background(), runner.Config{
				Out: filepath.Join(t.TempDir(), "run"), Driver: good,
				Topic:  drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
				Load:   load.Config{Rate: 500, Duration: time.Second, MessageSize: 100, LiveRead: true},
				Verify: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			drivertest.AssertClean(t, res)

			bad, err := New(Config{Brokers: c.ListenAddrs(), SASLMechanism: mech, SASLUsername: "ackcheck", SASLPassword: "wrong"})
			if err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = bad.EnsureTopic(ctx, drivers.TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 1})
			if err == nil || !strings.Contains(err.Error(), "accept SASL "+mech+` for user "ackcheck"`) {
				t.Fatalf("wrong password: %v, want an error that names the mechanism and user", err)
			}
			t.Logf("wrong password says: %v", err)
		})
	}
}
