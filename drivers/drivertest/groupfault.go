package drivertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// GroupFaultHarness is a group under a fault, for RunGroupFault.
type GroupFaultHarness struct {
	// NewDriver returns a fresh driver; it must implement
	// drivers.GroupConsumer and drivers.GroupOffsetReader.
	NewDriver         func(t *testing.T) drivers.Driver
	Partitions        int
	ReplicationFactor int
	// Members of the group. Default 2.
	Members int
	// Rate and Duration of the produced load. Defaults 100/s, 8 s.
	Rate     int
	Duration time.Duration
	// FaultAt is when, into the load, Fault is called. Default 3 s.
	FaultAt time.Duration
	// Fault acts on the cluster (it may find what to act on through the
	// driver: a group's coordinator) and returns once the cluster is
	// meant to recover by itself, or after undoing what it did; it says
	// what it did.
	Fault func(ctx context.Context, d drivers.Driver, topic, group string) (string, error)
	// CatchUp bounds how long after the load the group has to commit up
	// to the partitions' ends. Default 40 s.
	CatchUp time.Duration
}

// GroupFaultResult is what RunGroupFault counted.
type GroupFaultResult struct {
	Acked, Delivered, Distinct int
	Commits                    int // acknowledged commits, one a partition
	// Skipped: acked by the producer, never delivered to the group, at a
	// position below the group's last acknowledged commit or the offset
	// the broker holds for the group, whichever is higher: the group will
	// not be given it.
	Skipped int
	// AcksLost: deliveries at an offset below an acknowledged commit of
	// their partition answered before the poll that gave them began: the
	// group resumed before what it had committed.
	AcksLost int
	// Redelivered: deliveries of a record delivered before.
	Redelivered int
	// CaughtUp: the acknowledged commits reached the partitions' ends
	// within CatchUp.
	CaughtUp bool
	// Committed is the last acknowledged commit per partition, Held what
	// the broker holds for the group (GroupOffsetReader) after the
	// members stopped (asked again for a few seconds until they agree).
	Committed, Held map[int32]int64
	Fault           string
}

// Clean reports, as a test error each, what a run without loss must
// not show: a group that did not catch up, a broker holding other
// offsets than the commits, a record skipped, an acknowledged commit
// lost.
func (r GroupFaultResult) Clean(t *testing.T) {
	t.Helper()
	if r.Acked == 0 || r.Commits == 0 {
		t.Fatalf("nothing to judge: %+v", r)
	}
	if !r.CaughtUp {
		t.Errorf("the group did not commit to the partitions' ends: it committed %s", sorted(r.Committed))
	}
	if sorted(r.Held) != sorted(r.Committed) {
		t.Errorf("the broker holds %s for the group, the acknowledged commits say %s", sorted(r.Held), sorted(r.Committed))
	}
	if r.Skipped != 0 || r.AcksLost != 0 {
		t.Errorf("skipped %d, acks lost %d; want 0 and 0", r.Skipped, r.AcksLost)
	}
}

// RunGroupFault runs a paced load on a new topic and a group of members
// polling and committing beside it, applies the fault during the load,
// lets the group commit to the partitions' ends (at most CatchUp), and
// counts, from what the members were given and what the broker answered
// to each commit, the acknowledged commits lost, and with the read-back's
// positions the records skipped. The caller judges the result
// (GroupFaultResult.Clean for a run that must lose nothing).
func RunGroupFault(t *testing.T, h GroupFaultHarness) GroupFaultResult {
	h = h.withDefaults()
	d := h.NewDriver(t)
	t.Cleanup(func() { d.Close() })
	or := d.(drivers.GroupOffsetReader)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("groupfault-%d", time.Now().UnixNano())
	group := topic + "-g"
	info, startAt := groupFaultTopic(ctx, t, d, h, topic)
	start := startAt.Map()
	w := &groupWatch{committed: map[int32]int64{}}
	mctx, mcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w.join(ctx, mctx, t, d.(drivers.GroupConsumer), &wg, h.Members, drivers.GroupSpec{Group: group, Topic: topic, StartOffsets: start})

	acked, fault := produceUnderFault(ctx, t, d, h, topic, group, info)
	res := GroupFaultResult{Fault: fault}
	t.Logf("fault: %s", res.Fault)

	// The group commits to where the partitions end, or CatchUp passes.
	endAt, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := endAt.Map()
	for deadline := time.Now().Add(h.CatchUp); !w.caughtUp(start, end) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	mcancel()
	wg.Wait()
	res.CaughtUp = w.caughtUp(start, end)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.memberErrs) > 0 {
		t.Logf("member errors (the members went on): %v", w.memberErrs)
	}
	res.Committed = w.committed
	res.Held = heldOffsets(ctx, t, or, group, topic, w.committed)
	where := readPositions(ctx, t, d, drivers.ReadSpec{Topic: topic, From: startAt, To: endAt, IdleTimeout: 10 * time.Second})
	w.count(t, &res, acked, where)
	t.Logf("%d acked, %d deliveries (%d distinct, %d redelivered), %d acknowledged commits, caught up %v; skipped %d, acks lost %d; committed %s, the broker holds %s",
		res.Acked, res.Delivered, res.Distinct, res.Redelivered, res.Commits, res.CaughtUp, res.Skipped, res.AcksLost, sorted(w.committed), sorted(res.Held))
	return res
}
