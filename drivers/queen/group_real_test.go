package queen_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/jackc/pgx/v5"
)

// TestRealQueenGroup runs the group suite (drivertest.RunGroup) on the
// real Queen of ACKCHECK_QUEEN_DIR: a member pops a 4-partition queue to
// its end with consumerGroup and acks as it goes, at the positions the
// read-back gives; Queen's cursors (queen.partition_consumers) are the
// acknowledged commits; a member that leaves without acking has its
// records popped again by another once the lease (10 s on the driver's
// queues) expired.
func TestRealQueenGroup(t *testing.T) {
	q := lazyQueen.Get(t)
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

// TestRealQueenGroupServerKill: Queen server SIGKILL during pops and
// acks (issue 39's truth), at the seam: 2 members pop and ack a 4-
// partition queue beside a 100/s load; 3 s in, the server is killed and
// started again. No record acked by the producer is skipped (all of
// them are delivered, and the group committed to the ends), no
// acknowledged ack is lost (nothing delivered below an acknowledged
// commit by a later poll), and Queen's cursors are the last commits.
// Redeliveries are counted: pops and acks lost with the server.
func TestRealQueenGroupServerKill(t *testing.T) {
	q := lazyQueen.Get(t)
	res := drivertest.RunGroupFault(t, drivertest.GroupFaultHarness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL(), MaxConcurrent: 1})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 4, ReplicationFactor: 1,
		Fault: func(ctx context.Context, _ drivers.Driver, _, _ string) (string, error) {
			pid, err := q.Signal(queen.ServerNode, syscall.SIGKILL)
			if err != nil {
				return "", err
			}
			time.Sleep(time.Second)
			if err := q.StartNode(ctx, queen.ServerNode); err != nil {
				return "", err
			}
			return fmt.Sprintf("SIGKILL of the Queen server (pid %d), started again 1 s later", pid), nil
		},
	})
	res.Clean(t)
}

// The checks of RunGroupFault fire on purpose: Queen's cursors of the
// group are moved behind its members' backs (SQL on queen.
// partition_consumers, the leases released, so the members' acks in
// flight are refused) 3 s into the load, after holding the partitions
// from the members for 1 s. Moved back to the start, the
// group is given again what it had acknowledged: acks lost. Moved to
// each partition's last message, the group is never given what lay
// between: skipped. The clean test above is the same run without it.
func TestRealQueenGroupChecksFire(t *testing.T) {
	q := lazyQueen.Get(t)
	for _, c := range []struct {
		name, set string
		fires     func(drivertest.GroupFaultResult) int
	}{
		{"cursor moved back", `last_consumed_id = '00000000-0000-0000-0000-000000000000', last_consumed_created_at = NULL`,
			func(r drivertest.GroupFaultResult) int { return r.AcksLost }},
		{"cursor moved on", `(last_consumed_id, last_consumed_created_at) = (SELECT m.id, m.created_at FROM queen.messages m
			WHERE m.partition_id = pc.partition_id ORDER BY m.created_at DESC, m.id DESC LIMIT 1)`,
			func(r drivertest.GroupFaultResult) int { return r.Skipped }},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := drivertest.RunGroupFault(t, drivertest.GroupFaultHarness{
				NewDriver: func(t *testing.T) drivers.Driver {
					d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL(), MaxConcurrent: 1})
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Partitions: 2, ReplicationFactor: 1, Rate: 100, Duration: 6 * time.Second, CatchUp: 15 * time.Second,
				Fault: func(ctx context.Context, _ drivers.Driver, _, group string) (string, error) {
					conn, err := pgx.Connect(ctx, q.PostgresURL())
					if err != nil {
						return "", err
					}
					defer conn.Close(ctx)
					// First the partitions are held by a lease of nobody's
					// for 1 s (the members' acks in flight are refused, and
					// records pile up undelivered), then the cursors are
					// moved and the lease released.
					if _, err := conn.Exec(ctx, `UPDATE queen.partition_consumers pc SET lease_expires_at = now() + interval '5 seconds',
						lease_acquired_at = now(), worker_id = 'ackcheck-test-hold' WHERE pc.consumer_group = $1`, group); err != nil {
						return "", err
					}
					time.Sleep(time.Second)
					tag, err := conn.Exec(ctx, `UPDATE queen.partition_consumers pc SET `+c.set+`,
						lease_expires_at = NULL, lease_acquired_at = NULL, worker_id = NULL, batch_size = 0, acked_count = 0
						WHERE pc.consumer_group = $1`, group)
					if err != nil {
						return "", err
					}
					return fmt.Sprintf("%s: %d cursors of group %s, after holding them 1 s", c.name, tag.RowsAffected(), group), nil
				},
			})
			if c.fires(res) == 0 {
				t.Errorf("%s: the check did not fire: %+v", c.name, res)
			}
		})
	}
}
