package kafka_test

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/kafka"
)

// TestRealKafkaConformance runs the conformance suite on the real 3-node
// cluster of ACKCHECK_KAFKA_CLUSTER_DIR (.ci/run starts one): the Driver
// contract, a clean run, and each verdict class fired on purpose.
func TestRealKafkaConformance(t *testing.T) {
	k := plainKafka.Get(t)
	drivertest.Run(t, drivertest.Harness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := kafka.New(kafka.Config{Brokers: k.Brokers()})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 4, ReplicationFactor: 3, Rate: 500, Duration: 3 * time.Second,
	})
}
