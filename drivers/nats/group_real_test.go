package nats_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/nats"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRealNATSGroup runs the group suite (drivertest.RunGroup) on R3
// streams of the real cluster of ACKCHECK_NATS_DIR: a member pulls the
// group's durable consumers to the end and acks as it goes, at the
// stream sequences the read-back gives; the consumers' ack floors are
// the acknowledged commits; a member that leaves without acking has its
// messages delivered to another once AckWait (nats.GroupAckWait) passed.
// Then the group's coordinator is a node of the cluster.
func TestRealNATSGroup(t *testing.T) {
	n := plainNATS.Get(t)
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

// TestRealNATSGroupConsumerLeaderKill: the leader of a durable
// consumer killed (issue 39's truth), at the seam: 2 members pull and
// ack R3 consumers on 3 streams beside a 100/s load; 3 s in, the Raft
// leader of the group's consumer on the first stream (the group's
// coordinator) gets SIGKILL and is started again 2 s later. No record
// acked by the producer is skipped, no acknowledged ack is lost, and the
// consumers' ack floors are the last commits.
func TestRealNATSGroupConsumerLeaderKill(t *testing.T) {
	n := plainNATS.Get(t)
	res := drivertest.RunGroupFault(t, drivertest.GroupFaultHarness{
		NewDriver: func(t *testing.T) drivers.Driver {
			d, err := nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Partitions: 3, ReplicationFactor: 3,
		Fault: func(ctx context.Context, d drivers.Driver, _, group string) (string, error) {
			id, err := d.(drivers.GroupCoordinatorFinder).GroupCoordinator(ctx, group)
			if err != nil {
				return "", err
			}
			pid, err := n.Signal(id, syscall.SIGKILL)
			if err != nil {
				return "", err
			}
			time.Sleep(2 * time.Second)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				err = n.StartNode(ctx, id)
				if err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("SIGKILL of node %d (pid %d), the leader of the group's first consumer, started again 2 s later", id, pid), nil
		},
	})
	res.Clean(t)
	if err := n.WaitReady(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

// The checks of RunGroupFault fire on purpose on NATS: 3 s into the
// load, the group's durable consumer on the first stream is deleted and
// made again behind its members' backs. Made again from the stream's
// first sequence, the group is given again what it had acknowledged:
// acks lost. Made again 30 sequences past the stream's last (0.6 s of
// the load ahead), the group is never given what lay between: skipped.
func TestRealNATSGroupChecksFire(t *testing.T) {
	n := plainNATS.Get(t)
	for _, c := range []struct {
		name  string
		past  bool // past the stream's last sequence, else from its first
		fires func(drivertest.GroupFaultResult) int
	}{
		{"consumer made again from the start", false, func(r drivertest.GroupFaultResult) int { return r.AcksLost }},
		{"consumer made again ahead of the end", true, func(r drivertest.GroupFaultResult) int { return r.Skipped }},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := drivertest.RunGroupFault(t, drivertest.GroupFaultHarness{
				NewDriver: func(t *testing.T) drivers.Driver {
					d, err := nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Partitions: 2, ReplicationFactor: 3, Duration: 6 * time.Second, CatchUp: 15 * time.Second,
				Fault: func(ctx context.Context, _ drivers.Driver, topic, group string) (string, error) {
					nc, err := natsgo.Connect(strings.Join(n.Servers(), ","))
					if err != nil {
						return "", err
					}
					defer nc.Close()
					js, err := jetstream.New(nc)
					if err != nil {
						return "", err
					}
					stream := nats.StreamName(topic, 0)
					cfg := jetstream.ConsumerConfig{Durable: group, AckPolicy: jetstream.AckExplicitPolicy, AckWait: nats.GroupAckWait, MaxDeliver: -1, MaxAckPending: 10000}
					if c.past {
						st, err := js.Stream(ctx, stream)
						if err != nil {
							return "", err
						}
						cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, st.CachedInfo().State.LastSeq+30
					}
					if err := js.DeleteConsumer(ctx, stream, group); err != nil {
						return "", err
					}
					if _, err := js.CreateConsumer(ctx, stream, cfg); err != nil {
						return "", err
					}
					return fmt.Sprintf("%s: consumer %s of stream %s deleted and made again (start sequence %d)", c.name, group, stream, cfg.OptStartSeq), nil
				},
			})
			if c.fires(res) == 0 {
				t.Errorf("%s: the check did not fire: %+v", c.name, res)
			}
		})
	}
}
