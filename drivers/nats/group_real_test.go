package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/drivers/nats/natstest"
)

// TestRealNATSGroup runs the group suite (drivertest.RunGroup) on R3
// streams of the real cluster of ACKCHECK_NATS_DIR: a member pulls the
// group's durable consumers to the end and acks as it goes, at the
// stream sequences the read-back gives; the consumers' ack floors are
// the acknowledged commits; a member that leaves without acking has its
// messages delivered to another once AckWait (nats.GroupAckWait) passed.
// Then the group's coordinator is a node of the cluster.
func TestRealNATSGroup(t *testing.T) {
	n := natstest.Cluster(t)
	var d *nats.Driver
	topic := drivertest.RunGroup(t, drivertest.GroupHarness{
		NewDriver: func(t *testing.T) drivers.Driver {
			var err error
			d, err = nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 3, ReplicationFactor: 3, Redelivery: nats.GroupAckWait,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := d.CommitPromise(ctx, "x")
	if err != nil || !p.Durable {
		t.Errorf("R3 consumers: commit promise %+v, %v; want durable", p, err)
	}
	id, err := d.GroupCoordinator(ctx, topic+"-a")
	if err != nil || id < 1 || int(id) > len(n.Servers()) {
		t.Errorf("group %s-a: coordinator %d, %v; want a node of 1..%d", topic, id, err, len(n.Servers()))
	}
	if id, err := d.GroupCoordinator(ctx, "never-joined"); err == nil {
		t.Errorf("a group never joined has coordinator %d; want an error", id)
	}
}
