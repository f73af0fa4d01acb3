package queen_test

import (
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/drivers/queen/queentest"
)

// TestRealQueenGroup runs the group suite (drivertest.RunGroup) on the
// real Queen of ACKCHECK_QUEEN_DIR: a member pops a 4-partition queue to
// its end with consumerGroup and acks as it goes, at the positions the
// read-back gives; Queen's cursors (queen.partition_consumers) are the
// acknowledged commits; a member that leaves without acking has its
// records popped again by another once the lease (10 s on the driver's
// queues) expired.
func TestRealQueenGroup(t *testing.T) {
	q := queentest.Cluster(t)
	drivertest.RunGroup(t, drivertest.GroupHarness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL(), MaxConcurrent: 1})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 4, ReplicationFactor: 1, Redelivery: queen.GroupLease,
	})
}
