package pulsar_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
)

// TestRealPulsarConformance runs the conformance suite on the real
// standalone of ACKCHECK_PULSAR_DIR (.ci/run starts one), with and without
// producer batching: the Driver contract, a clean run, and each verdict
// class fired on purpose.
func TestRealPulsarConformance(t *testing.T) {
	p := plainPulsar.Get(t)
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			drivertest.Run(t, drivertest.Harness{
				NewDriver: func(t *testing.T) drivers.Driver {
					d, err := pulsar.New(pulsar.Config{ServiceURL: p.ServiceURL(), AdminURL: p.AdminURL(), BookieHTTPURL: p.BookieHTTPURL(),
						DisableBatching: !batching})
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Partitions: 4, ReplicationFactor: 1, Rate: 500, Duration: 3 * time.Second,
			})
		})
	}
}
