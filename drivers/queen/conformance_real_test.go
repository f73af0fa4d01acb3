package queen_test

import (
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
)

// TestRealQueenConformance runs the conformance suite on the real Queen
// server and PostgreSQL of ACKCHECK_QUEEN_DIR (.ci/run starts one): the
// Driver contract, a clean run, and each verdict class fired on purpose
// by a wrapped driver that drops, duplicates, corrupts, invents or
// reorders. One push in flight per producer: with more, Queen commits a
// producer's pushes in any order, and the clean run would count them
// reordered (they are: see the README).
func TestRealQueenConformance(t *testing.T) {
	q := lazyQueen.Get(t)
	drivertest.Run(t, drivertest.Harness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL(), MaxConcurrent: 1})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 4, ReplicationFactor: 1, Rate: 500, Duration: 3 * time.Second,
	})
}
