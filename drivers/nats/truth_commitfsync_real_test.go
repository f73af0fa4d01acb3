package nats_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	natsdriver "github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRealNATSCommitsPowerLoss measures what an acknowledged ack of a
// durable consumer (R3, the driver's group) means on disk, under each
// sync_interval, against the servers' own account: the consumers' ack
// floor read through the JetStream API after a power loss of every
// server, with no member running. Per setting: a topic of 3 R3 streams,
// 300 messages each, the group's consumers made, and then every node's
// lazyfs synced (as a periodic sync_interval flush would: the streams,
// their messages and the consumers exist on disk before any ack). One
// member then polls and commits everything in steps of 20 messages (each
// commit acks with DoubleAck and answers the ack floor its consumer
// reports), closes, and every server loses power. A commit is lost when
// its answered position is above the recovered ack floor plus one.
//
// Expected from nats-server's source (drivers/nats/commitfsync.go): with
// the default sync_interval no ack after the sync was fsynced, so the
// floors go back (commits lost > 0); with sync_interval: always each ack
// was fsynced in the consumer's Raft log on a majority before its answer,
// so no commit is lost. Measured (2026-12-05, one run): the default lost
// 48 of 48 acknowledged commits (every floor back at 0, every message
// kept), always 0 of 48 (every floor at 300).
func TestRealNATSCommitsPowerLoss(t *testing.T) {
	n := lazyNATS.Get(t)
	d := natsDriver(t, n)
	defer d.Close()
	keepSync(t, n)
	cs := d.(drivers.CommitFsyncSetter)
	for _, always := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "always"}[always]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			if err := n.SetSyncAlways(ctx, always); err != nil {
				t.Fatal(err)
			}
			if on, err := cs.CommitFsync(ctx); err != nil || on != always {
				t.Fatalf("%s read back: %v %v, want %v", cs.CommitFsyncSetting(), on, err, always)
			}
			topic := strings.ReplaceAll(scenariotest.TopicName(t), "/", "-")
			group := "g-" + name
			const parts, perPart, step = 3, 300, 20
			if _, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: parts, ReplicationFactor: 3}); err != nil {
				t.Fatal(err)
			}
			nc, js := jsConn(t, n)
			defer nc.Close()
			for p := int32(0); p < parts; p++ {
				for i := 0; i < perPart; i++ {
					pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
					_, err := js.Publish(pctx, natsdriver.Subject(topic, p), []byte(fmt.Sprintf("m-%d-%d", p, i)))
					pcancel()
					if err != nil {
						t.Fatalf("publish %d to partition %d: %v", i, p, err)
					}
				}
			}
			gc := d.(drivers.GroupConsumer)
			m, err := gc.JoinGroup(ctx, drivers.GroupSpec{Group: group, Topic: topic})
			if err != nil {
				t.Fatal(err)
			}
			if on, why, err := d.(drivers.GroupCommitFsyncReader).GroupCommitFsync(ctx, group, topic); err != nil || on != always {
				t.Fatalf("the group's commits read as fsynced %v (%s), %v; want %v", on, why, err, always)
			} else {
				t.Logf("what an ack means, read from the cluster: fsynced %v: %s", on, why)
			}
			if err := n.SyncAll(ctx); err != nil {
				t.Fatalf("sync every node (the streams and consumers durable before any ack): %v", err)
			}
			// Poll and commit everything, step messages of a partition at a time.
			var answers []drivers.CommitAnswer
			next, done := map[int32]int64{}, map[int32]int64{}
			for delivered := 0; delivered < parts*perPart; {
				pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
				ds, err := m.Poll(pctx)
				pcancel()
				if err != nil {
					t.Fatalf("poll after %d deliveries: %v", delivered, err)
				}
				delivered += len(ds)
				for _, dl := range ds {
					if dl.Pos.Offset+1 > next[dl.Pos.Partition] {
						next[dl.Pos.Partition] = dl.Pos.Offset + 1
					}
				}
				// Commit in steps: each step acks the next `step` sequences.
				for p, end := range next {
					for at := max(done[p], 1) + step; done[p] < end; at += step {
						upto := min(at, end)
						done[p] = upto
						as, err := m.Commit(ctx, map[int32]int64{p: upto})
						if err != nil {
							t.Fatal(err)
						}
						for _, a := range as {
							if a.Err == nil {
								answers = append(answers, a)
							}
						}
					}
				}
			}
			m.Close(ctx)
			last := map[int32]int64{}
			for _, a := range answers {
				last[a.Partition] = max(last[a.Partition], a.Offset)
			}
			t.Logf("%d commits acknowledged; the last answered position per partition: %v", len(answers), last)
			if len(answers) == 0 {
				t.Fatal("no commit acknowledged")
			}
			lossAt := time.Now()
			powerLossAll(t, ctx, n)
			t.Logf("the power loss of every node and their restart took %.1f s", time.Since(lossAt).Seconds())
			// The servers' own account: each consumer's ack floor, and each
			// stream's last sequence, after the restart.
			floor := map[int32]int64{}
			for p := int32(0); p < parts; p++ {
				ci := consumerInfoRetry(t, ctx, js, natsdriver.StreamName(topic, p), group)
				si := streamInfoRetry(t, ctx, js, natsdriver.StreamName(topic, p))
				if ci == nil {
					t.Logf("partition %d: the group's consumer is gone after the power loss (stream %s: %v)", p, natsdriver.StreamName(topic, p), si != nil)
					floor[p] = 0
					continue
				}
				floor[p] = int64(ci.AckFloor.Stream)
				last := uint64(0)
				if si != nil {
					last = si.State.LastSeq
				}
				t.Logf("partition %d: recovered ack floor %d (delivered %d, ack pending %d); stream last sequence %d of %d published", p, ci.AckFloor.Stream, ci.Delivered.Stream, ci.NumAckPending, last, perPart)
			}
			lost := 0
			for _, a := range answers {
				if a.Offset > floor[a.Partition]+1 {
					lost++
				}
			}
			t.Logf("sync_interval %s: %d of %d acknowledged commits lost by the servers' own account (recovered ack floors %v against the last answers %v)", name, lost, len(answers), floor, last)
			if always && lost != 0 {
				t.Errorf("sync_interval: always lost %d of %d acknowledged commits: the ack floors went back below what the servers answered", lost, len(answers))
			}
			if !always && lost == 0 {
				t.Errorf("the default sync_interval lost no commit: every ack survived although none was fsynced after the sync (see the floors above)")
			}
		})
	}
}

// keepSync puts the cluster's sync_interval back as found when the test
// ends.
func keepSync(t *testing.T, n *natsdriver.Cluster) {
	t.Helper()
	was := n.SyncAlways()
	t.Cleanup(func() {
		if err := n.SetSyncAlways(context.Background(), was); err != nil {
			t.Errorf("put sync_interval back: %v", err)
		}
	})
}

// jsConn is a JetStream client of the cluster's own, apart from the
// driver's.
func jsConn(t *testing.T, n *natsdriver.Cluster) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(n.Servers(), ","), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// powerLossAll SIGKILLs every server, waits until each is gone, drops
// what its lazyfs had not fsynced, starts them all again and waits until
// each answers healthy.
func powerLossAll(t *testing.T, ctx context.Context, n *natsdriver.Cluster) {
	t.Helper()
	for _, id := range n.Nodes() {
		if _, err := n.Signal(id, syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL node %d: %v", id, err)
		}
	}
	for _, id := range n.Nodes() {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if pid, _ := n.PID(id); pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d still runs 30 s after SIGKILL", id)
			}
		}
	}
	for _, id := range n.Nodes() {
		lost, err := n.LoseUnsynced(ctx, id)
		if err != nil {
			t.Fatalf("lose node %d's unsynced writes: %v", id, err)
		}
		t.Logf("power loss, node %d: %s", id, lost)
	}
	for _, id := range n.Nodes() {
		if err := n.StartNode(ctx, id); err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
	}
	if err := n.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// consumerInfoRetry reads a consumer's info, asking again while its Raft
// group elects a leader after the restart (up to a minute); nil when the
// stream or consumer is gone.
func consumerInfoRetry(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	return infoRetry(t, ctx, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
		c, err := js.Consumer(ctx, stream, name)
		if err != nil {
			return nil, err
		}
		return c.Info(ctx)
	})
}

func streamInfoRetry(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) *jetstream.StreamInfo {
	t.Helper()
	return infoRetry(t, ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return nil, err
		}
		return s.Info(ctx)
	})
}

func infoRetry[T any](t *testing.T, ctx context.Context, f func(context.Context) (*T, error)) *T {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var v *T
		v, err = f(cctx)
		cancel()
		if err == nil {
			return v
		}
		if ctx.Err() != nil {
			break
		}
	}
	// Not found: gone. Anything else after a minute: the cluster did not
	// come back, which is no measurement.
	if strings.Contains(err.Error(), "not found") {
		return nil
	}
	t.Fatalf("no answer a minute after the restart: %v", err)
	return nil
}
