package drivertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The named steps of RunGroupFault.

// withDefaults fills in the harness's documented defaults.
func (h GroupFaultHarness) withDefaults() GroupFaultHarness {
	if h.Members == 0 {
		h.Members = 2
	}
	if h.Rate == 0 {
		h.Rate = 100
	}
	if h.Duration == 0 {
		h.Duration = 8 * time.Second
	}
	if h.FaultAt == 0 {
		h.FaultAt = 3 * time.Second
	}
	if h.CatchUp == 0 {
		h.CatchUp = 40 * time.Second
	}
	return h
}

// groupFaultTopic creates the run's topic and returns it with where its
// partitions start (the log start where the driver knows it, else the
// end: the topic is new).
func groupFaultTopic(ctx context.Context, t *testing.T, d drivers.Driver, h GroupFaultHarness, topic string) (drivers.TopicInfo, drivers.Offsets) {
	info, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: h.Partitions, ReplicationFactor: h.ReplicationFactor})
	if err != nil {
		t.Fatal(err)
	}
	startAt, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if ls, ok := d.(drivers.LogStarter); ok {
		if startAt, err = ls.StartOffsets(ctx, topic); err != nil {
			t.Fatal(err)
		}
	}
	return info, startAt
}

// groupDelivery is one record given to a member.
type groupDelivery struct {
	value  string
	pos    drivers.Position
	polled time.Time // when the poll that gave it began
}

// groupCommit is one acknowledged commit.
type groupCommit struct {
	p   int32
	off int64
	at  time.Time // when the answer came
}

// groupWatch is what the members were given and what the broker answered
// to their commits; mu guards every field.
type groupWatch struct {
	mu         sync.Mutex
	deliveries []groupDelivery
	commits    []groupCommit
	committed  map[int32]int64 // the last acknowledged commit per partition
	memberErrs []error
}

// join starts members members of spec's group, each polling and
// committing until mctx ends; wg counts them.
func (w *groupWatch) join(ctx, mctx context.Context, t *testing.T, gc drivers.GroupConsumer, wg *sync.WaitGroup, members int, spec drivers.GroupSpec) {
	for n := range members {
		spec.Member = n
		m, err := gc.JoinGroup(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Close(context.Background())
			for mctx.Err() == nil {
				w.pollAndCommit(mctx, m, n)
			}
		}()
	}
}

// pollAndCommit is one turn of member n: a poll, then a commit of what it
// gave; only commits the broker answered without error are kept.
func (w *groupWatch) pollAndCommit(mctx context.Context, m drivers.GroupMember, n int) {
	began := time.Now()
	ds, err := m.Poll(mctx)
	if err != nil {
		if mctx.Err() == nil {
			w.mu.Lock()
			w.memberErrs = append(w.memberErrs, fmt.Errorf("member %d: poll: %w", n, err))
			w.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
		return
	}
	next := map[int32]int64{}
	w.mu.Lock()
	for _, dl := range ds {
		w.deliveries = append(w.deliveries, groupDelivery{string(dl.Value), dl.Pos, began})
		next[dl.Pos.Partition] = max(next[dl.Pos.Partition], dl.Pos.Offset+1)
	}
	w.mu.Unlock()
	cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
	answers, err := m.Commit(cctx, next)
	ccancel()
	now := time.Now()
	if err != nil {
		return // no answer: nothing was acknowledged
	}
	w.mu.Lock()
	for _, a := range answers {
		if a.Err == nil {
			w.commits = append(w.commits, groupCommit{a.Partition, a.Offset, now})
			w.committed[a.Partition] = max(w.committed[a.Partition], a.Offset)
		}
	}
	w.mu.Unlock()
}

// caughtUp reports whether the acknowledged commits reached end on every
// partition that holds records past start.
func (w *groupWatch) caughtUp(start, end map[int32]int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, e := range end {
		if e > start[p] && w.committed[p] < e {
			return false
		}
	}
	return true
}

// produceUnderFault sends the paced load, every outcome kept, while the
// harness's fault fires at FaultAt; it returns the acknowledged values
// once every outcome is in, and what the fault said it did.
func produceUnderFault(ctx context.Context, t *testing.T, d drivers.Driver, h GroupFaultHarness, topic, group string, info drivers.TopicInfo) (*sync.Map, string) {
	p, err := d.NewProducer(ctx, topic, 7)
	if err != nil {
		t.Fatal(err)
	}
	var acked sync.Map
	var ackedN sync.WaitGroup
	total := int(h.Duration.Seconds() * float64(h.Rate))
	faultDone := make(chan string, 1)
	began := time.Now()
	go func() {
		time.Sleep(h.FaultAt)
		what, err := h.Fault(ctx, d, topic, group)
		if err != nil {
			what = "the fault failed: " + err.Error()
		}
		faultDone <- what
	}()
	for i := range total {
		if wait := time.Until(began.Add(time.Duration(i) * time.Second / time.Duration(h.Rate))); wait > 0 {
			time.Sleep(wait)
		}
		v := fmt.Sprintf("%s-%06d", topic, i)
		ackedN.Add(1)
		p.Publish(ctx, drivers.Message{Value: []byte(v), Partition: info.Partitions[i%len(info.Partitions)], SentAt: time.Now()}, func(o drivers.Outcome) {
			if o.Status == drivers.Acked {
				acked.Store(v, true)
			}
			ackedN.Done()
		})
	}
	ackedN.Wait()
	p.Close(ctx)
	return &acked, <-faultDone
}

// heldOffsets is what the broker holds for the group, asked again for up
// to 10 s until it agrees with the acknowledged commits.
func heldOffsets(ctx context.Context, t *testing.T, or drivers.GroupOffsetReader, group, topic string, committed map[int32]int64) map[int32]int64 {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		held, err := or.CommittedOffsets(ctx, group, topic)
		if err != nil {
			t.Fatalf("read the group's offsets: %v", err)
		}
		if sorted(held) == sorted(committed) || time.Now().After(deadline) {
			return held
		}
	}
}

// readPositions is where each record is, from a read-back of spec.
func readPositions(ctx context.Context, t *testing.T, d drivers.Driver, spec drivers.ReadSpec) map[string]drivers.Position {
	where := map[string]drivers.Position{}
	if _, err := d.Read(ctx, spec, func(r drivers.Record) error {
		where[string(r.Value)] = r.Pos
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return where
}

// count fills in res's counts from the deliveries and commits (the caller
// holds w.mu), the acknowledged values and their read-back positions.
func (w *groupWatch) count(t *testing.T, res *GroupFaultResult, acked *sync.Map, where map[string]drivers.Position) {
	seen := map[string]int{}
	for _, dl := range w.deliveries {
		seen[dl.value]++
		if seen[dl.value] > 1 {
			res.Redelivered++
		}
		for _, c := range w.commits {
			if c.p == dl.pos.Partition && c.off > dl.pos.Offset && c.at.Before(dl.polled) {
				res.AcksLost++
				if res.AcksLost <= 3 {
					t.Logf("ack lost: %q delivered at %v by a poll begun %s, after a commit of %d answered %s", dl.value, dl.pos,
						dl.polled.Format("15:04:05.000"), c.off, c.at.Format("15:04:05.000"))
				}
				break
			}
		}
	}
	acked.Range(func(k, _ any) bool {
		res.Acked++
		if seen[k.(string)] > 0 {
			return true
		}
		pos, ok := where[k.(string)]
		if ok && (pos.Offset < w.committed[pos.Partition] || pos.Offset < res.Held[pos.Partition]) {
			res.Skipped++
			if res.Skipped <= 3 {
				t.Logf("skipped: %q at %v, never delivered, below the commit %d (the broker holds %d)", k, pos, w.committed[pos.Partition], res.Held[pos.Partition])
			}
		}
		return true
	})
	res.Delivered, res.Distinct, res.Commits = len(w.deliveries), len(seen), len(w.commits)
}
