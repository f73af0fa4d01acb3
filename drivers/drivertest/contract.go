package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Contract checks the Driver interface directly, not through a run: what
// the pipeline relies on without looking (drivers/driver.go's doc).
//
//   - EndOffsets of a topic that does not exist is ErrTopicMissing.
//   - EnsureTopic creates the topic it is asked for, and describes it as
//     it is when asked again.
//   - done is called exactly once per Publish; an acked position lies in
//     the partition asked for, and below the end offset read after it.
//   - Read delivers [From, To) of each partition in offset order, every
//     acked position among them, and reports each partition complete.
//   - Topology lists every partition of the topic, each with a leader among
//     the nodes, and its in-sync replicas among its replicas.
//   - Close of a producer with a context that has ended returns, and every
//     Publish still outstanding has had its done called (Unknown, if the
//     broker had not answered).
func Contract(t *testing.T, h Harness) {
	t.Helper()
	d := h.NewDriver(t)
	defer d.Close()
	for _, v := range Violations(d, h.Partitions, h.ReplicationFactor) {
		t.Error(v)
	}
}

// Violations runs the contract's checks against d and returns what it
// breaks, a sentence each (nil: none). A check that cannot go on after a
// violation stops there.
func Violations(d drivers.Driver, partitions, rf int) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &contract{d: d, partitions: partitions, rf: rf, topic: fmt.Sprintf("contract-%d", time.Now().UnixNano())}
	// Each stage needs the one before it to have held.
	_ = c.topicStage(ctx) && c.publishStage(ctx) && c.readStage(ctx) && c.topologyStage(ctx) && c.closeEndedStage(ctx)
	return c.out
}

// contract is one check of the Driver contract, stage by stage.
type contract struct {
	d              drivers.Driver
	partitions, rf int
	topic          string

	mu  sync.Mutex
	out []string

	info       drivers.TopicInfo
	start, end drivers.Offsets
	acked      map[int32][]int64 // acked offsets by partition
}

func (c *contract) errorf(format string, args ...any) {
	c.mu.Lock()
	c.out = append(c.out, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// ok records err, if any, and reports whether the stage may go on.
func (c *contract) ok(err error) bool {
	if err != nil {
		c.errorf("%v", err)
	}
	return err == nil
}

// topicStage: a missing topic is ErrTopicMissing; EnsureTopic creates it,
// then describes it as it is.
func (c *contract) topicStage(ctx context.Context) bool {
	if _, err := c.d.EndOffsets(ctx, c.topic); !errors.Is(err, drivers.ErrTopicMissing) {
		c.errorf("EndOffsets of a missing topic: %v, want ErrTopicMissing", err)
		return false
	}
	spec := drivers.TopicSpec{Name: c.topic, Partitions: c.partitions, ReplicationFactor: c.rf}
	info, err := c.d.EnsureTopic(ctx, spec)
	if !c.ok(err) {
		return false
	}
	if !info.Created || len(info.Partitions) != c.partitions {
		c.errorf("EnsureTopic of a new topic: %+v", info)
		return false
	}
	again, err := c.d.EnsureTopic(ctx, spec)
	if err != nil || again.Created || !slices.Equal(again.Partitions, info.Partitions) {
		c.errorf("EnsureTopic of an existing topic: %+v, %v", again, err)
		return false
	}
	c.info = info
	c.start, err = c.d.EndOffsets(ctx, c.topic)
	return c.ok(err)
}

// publishStage: exactly one done per send, acked in the partition asked
// for, at an offset within the end offsets before and after.
func (c *contract) publishStage(ctx context.Context) bool {
	p, err := c.d.NewProducer(ctx, c.topic, 0)
	if !c.ok(err) {
		return false
	}
	var mu sync.Mutex
	calls := make([]int, contractSends)
	outcomes := make([]drivers.Outcome, contractSends)
	var wg sync.WaitGroup
	wg.Add(contractSends)
	for i := 0; i < contractSends; i++ {
		part := c.info.Partitions[i%len(c.info.Partitions)]
		p.Publish(ctx, drivers.Message{Value: []byte(fmt.Sprintf("contract %d", i)), Partition: part}, func(o drivers.Outcome) {
			mu.Lock()
			calls[i]++
			outcomes[i] = o
			first := calls[i] == 1
			mu.Unlock()
			if first {
				wg.Done()
			}
		})
	}
	if !waitGroup(&wg, time.Minute) {
		c.errorf("not every publish's done came within a minute")
		return false
	}
	if err := p.Close(ctx); err != nil {
		c.errorf("Close: %v", err)
		return false
	}
	c.acked = map[int32][]int64{}
	mu.Lock()
	for i, o := range outcomes {
		if calls[i] != 1 {
			c.errorf("publish %d: done called %d times, want exactly once", i, calls[i])
		}
		if o.Status != drivers.Acked {
			c.errorf("publish %d on a healthy cluster: %s %v", i, o.Status, o.Err)
			continue
		}
		if want := c.info.Partitions[i%len(c.info.Partitions)]; o.Pos.Partition != want {
			c.errorf("publish %d asked for partition %d, acked in %d", i, want, o.Pos.Partition)
		}
		c.acked[o.Pos.Partition] = append(c.acked[o.Pos.Partition], o.Pos.Offset)
	}
	mu.Unlock()
	c.end, err = c.d.EndOffsets(ctx, c.topic)
	if !c.ok(err) {
		return false
	}
	for part, offs := range c.acked {
		for _, off := range offs {
			if off < 0 {
				continue // the broker gives no position (Kafka acks=0, Queen)
			}
			start, _ := c.start.Get(part)
			end, _ := c.end.Get(part)
			if off < start || off >= end {
				c.errorf("partition %d: acked offset %d outside [%d, %d) of the end offsets", part, off, start, end)
			}
		}
	}
	return true
}

// contractSends is how many messages the publish and close stages send.
const contractSends = 200

// readStage: [start, end) read in order, completely, every acked position
// among what was read.
func (c *contract) readStage(ctx context.Context) bool {
	seen := map[int32][]int64{}
	rep, err := c.d.Read(ctx, drivers.ReadSpec{Topic: c.topic, From: c.start, To: c.end, IdleTimeout: 20 * time.Second}, func(r drivers.Record) error {
		if s := seen[r.Pos.Partition]; len(s) > 0 && r.Pos.Offset <= s[len(s)-1] {
			return fmt.Errorf("partition %d: offset %d read after %d", r.Pos.Partition, r.Pos.Offset, s[len(s)-1])
		}
		seen[r.Pos.Partition] = append(seen[r.Pos.Partition], r.Pos.Offset)
		return nil
	})
	if err != nil {
		c.errorf("Read: %v", err)
		return false
	}
	if !rep.Complete() {
		c.errorf("Read of [start, end) not complete: %+v", rep.Partitions)
	}
	for part, offs := range c.acked {
		for _, off := range offs {
			if off >= 0 && !slices.Contains(seen[part], off) {
				c.errorf("partition %d: acked offset %d not read back", part, off)
			}
		}
		if len(seen[part]) < len(offs) {
			c.errorf("partition %d: %d acked, %d read back", part, len(offs), len(seen[part]))
		}
	}
	return true
}

// topologyStage: every partition, a leader among the nodes, in-sync
// replicas among the replicas.
func (c *contract) topologyStage(ctx context.Context) bool {
	topo, err := c.d.Topology(ctx, c.topic)
	if !c.ok(err) {
		return false
	}
	if len(topo.Partitions) != c.partitions {
		c.errorf("Topology lists %d partitions, want %d", len(topo.Partitions), c.partitions)
	}
	for _, ps := range topo.Partitions {
		if ps.Leader < 0 || !slices.ContainsFunc(topo.Nodes, func(n drivers.Node) bool { return n.ID == ps.Leader }) {
			c.errorf("partition %d: leader %d is not among the nodes %+v", ps.Partition, ps.Leader, topo.Nodes)
		}
		for _, r := range ps.ISR {
			if !slices.Contains(ps.Replicas, r) {
				c.errorf("partition %d: in-sync replica %d is not a replica %v", ps.Partition, r, ps.Replicas)
			}
		}
	}
	return true
}

// closeEndedStage: Close with an ended context returns, and every publish
// has its done (acked, or Unknown when the broker had not answered yet).
func (c *contract) closeEndedStage(ctx context.Context) bool {
	q, err := c.d.NewProducer(ctx, c.topic, 1)
	if !c.ok(err) {
		return false
	}
	var wg sync.WaitGroup
	wg.Add(contractSends)
	var late sync.Map
	for i := 0; i < contractSends; i++ {
		q.Publish(ctx, drivers.Message{Value: []byte("x"), Partition: c.info.Partitions[0]}, func(o drivers.Outcome) {
			if _, dup := late.LoadOrStore(i, o.Status); dup {
				c.errorf("publish %d: done called twice", i)
				return
			}
			if o.Status != drivers.Acked && o.Status != drivers.Unknown && o.Status != drivers.Rejected {
				c.errorf("publish %d: invalid status %v", i, o.Status)
			}
			wg.Done()
		})
	}
	ended, stop := context.WithCancel(ctx)
	stop()
	closed := make(chan error, 1)
	go func() { closed <- q.Close(ended) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		c.errorf("Close with an ended context did not return within 30 s")
		return false
	}
	if !waitGroup(&wg, 30*time.Second) {
		c.errorf("not every publish's done came within 30 s of Close with an ended context")
	}
	return true
}

// waitGroup waits for wg at most d and reports whether it finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return drivers.Within(ctx, wg.Wait) == nil
}
