package nats_test

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/nats"
)

// TestRealNATSConformance runs the conformance suite on R3 streams of the
// real 3-node cluster of ACKCHECK_NATS_DIR (.ci/run starts one): the
// Driver contract, a clean run, and each verdict class fired on purpose
// by a wrapped driver that drops, duplicates, corrupts, invents or
// reorders.
func TestRealNATSConformance(t *testing.T) {
	n := plainNATS.Get(t)
	drivertest.Run(t, drivertest.Harness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 3, ReplicationFactor: 3, Rate: 500, Duration: 3 * time.Second,
	})
}
