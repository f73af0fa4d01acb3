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
func Violations(d drivers.Driver, partitions, rf int) (out []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu0 sync.Mutex
	errorf := func(format string, args ...any) {
		mu0.Lock()
		out = append(out, fmt.Sprintf(format, args...))
		mu0.Unlock()
	}
	h := Harness{Partitions: partitions, ReplicationFactor: rf}
	topic := fmt.Sprintf("contract-%d", time.Now().UnixNano())

	if _, err := d.EndOffsets(ctx, topic); !errors.Is(err, drivers.ErrTopicMissing) {
		errorf("EndOffsets of a missing topic: %v, want ErrTopicMissing", err)
		return out
	}
	info, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: h.Partitions, ReplicationFactor: h.ReplicationFactor})
	if err != nil {
		errorf("%v", err)
		return out
	}
	if !info.Created || len(info.Partitions) != h.Partitions {
		errorf("EnsureTopic of a new topic: %+v", info)
		return out
	}
	again, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: h.Partitions, ReplicationFactor: h.ReplicationFactor})
	if err != nil || again.Created || !slices.Equal(again.Partitions, info.Partitions) {
		errorf("EnsureTopic of an existing topic: %+v, %v", again, err)
		return out
	}
	start, err := d.EndOffsets(ctx, topic)
	if err != nil {
		errorf("%v", err)
		return out
	}

	// Publish: exactly one done per send, acked where asked.
	p, err := d.NewProducer(ctx, topic, 0)
	if err != nil {
		errorf("%v", err)
		return out
	}
	const n = 200
	var mu sync.Mutex
	calls := make([]int, n)
	outcomes := make([]drivers.Outcome, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		part := info.Partitions[i%len(info.Partitions)]
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
		errorf("not every publish's done came within a minute")
		return out
	}
	if err := p.Close(ctx); err != nil {
		errorf("Close: %v", err)
		return out
	}
	acked := map[int32][]int64{}
	mu.Lock()
	for i, o := range outcomes {
		if calls[i] != 1 {
			errorf("publish %d: done called %d times, want exactly once", i, calls[i])
		}
		if o.Status != drivers.Acked {
			errorf("publish %d on a healthy cluster: %s %v", i, o.Status, o.Err)
			continue
		}
		if want := info.Partitions[i%len(info.Partitions)]; o.Pos.Partition != want {
			errorf("publish %d asked for partition %d, acked in %d", i, want, o.Pos.Partition)
		}
		acked[o.Pos.Partition] = append(acked[o.Pos.Partition], o.Pos.Offset)
	}
	mu.Unlock()
	end, err := d.EndOffsets(ctx, topic)
	if err != nil {
		errorf("%v", err)
		return out
	}
	for part, offs := range acked {
		for _, off := range offs {
			if off < start[part] || off >= end[part] {
				errorf("partition %d: acked offset %d outside [%d, %d) of the end offsets", part, off, start[part], end[part])
			}
		}
	}

	// Read: [start, end) in order, every acked position, complete.
	seen := map[int32][]int64{}
	rep, err := d.Read(ctx, drivers.ReadSpec{Topic: topic, From: start, To: end, IdleTimeout: 20 * time.Second}, func(r drivers.Record) error {
		if s := seen[r.Pos.Partition]; len(s) > 0 && r.Pos.Offset <= s[len(s)-1] {
			return fmt.Errorf("partition %d: offset %d read after %d", r.Pos.Partition, r.Pos.Offset, s[len(s)-1])
		}
		seen[r.Pos.Partition] = append(seen[r.Pos.Partition], r.Pos.Offset)
		return nil
	})
	if err != nil {
		errorf("Read: %v", err)
		return out
	}
	if !rep.Complete() {
		errorf("Read of [start, end) not complete: %+v", rep.Partitions)
	}
	for part, offs := range acked {
		for _, off := range offs {
			if !slices.Contains(seen[part], off) {
				errorf("partition %d: acked offset %d not read back", part, off)
			}
		}
	}

	// Topology: every partition, a leader among the nodes, ISR within
	// replicas.
	topo, err := d.Topology(ctx, topic)
	if err != nil {
		errorf("%v", err)
		return out
	}
	if len(topo.Partitions) != h.Partitions {
		errorf("Topology lists %d partitions, want %d", len(topo.Partitions), h.Partitions)
	}
	for _, ps := range topo.Partitions {
		if ps.Leader < 0 || !slices.ContainsFunc(topo.Nodes, func(n drivers.Node) bool { return n.ID == ps.Leader }) {
			errorf("partition %d: leader %d is not among the nodes %+v", ps.Partition, ps.Leader, topo.Nodes)
		}
		for _, r := range ps.ISR {
			if !slices.Contains(ps.Replicas, r) {
				errorf("partition %d: in-sync replica %d is not a replica %v", ps.Partition, r, ps.Replicas)
			}
		}
	}

	// Close with an ended context: it returns, and every publish has its
	// done (acked, or Unknown when the broker had not answered yet).
	q, err := d.NewProducer(ctx, topic, 1)
	if err != nil {
		errorf("%v", err)
		return out
	}
	var wg2 sync.WaitGroup
	wg2.Add(n)
	var late sync.Map
	for i := 0; i < n; i++ {
		q.Publish(ctx, drivers.Message{Value: []byte("x"), Partition: info.Partitions[0]}, func(o drivers.Outcome) {
			if _, dup := late.LoadOrStore(i, o.Status); dup {
				errorf("publish %d: done called twice", i)
				return
			}
			if o.Status != drivers.Acked && o.Status != drivers.Unknown && o.Status != drivers.Rejected {
				errorf("publish %d: invalid status %v", i, o.Status)
			}
			wg2.Done()
		})
	}
	ended, stop := context.WithCancel(ctx)
	stop()
	closed := make(chan error, 1)
	go func() { closed <- q.Close(ended) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		errorf("Close with an ended context did not return within 30 s")
		return out
	}
	if !waitGroup(&wg2, 30*time.Second) {
		errorf("not every publish's done came within 30 s of Close with an ended context")
	}
	return out
}

// waitGroup waits for wg at most d and reports whether it finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
