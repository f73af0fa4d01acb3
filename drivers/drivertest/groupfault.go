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
	d := h.NewDriver(t)
	t.Cleanup(func() { d.Close() })
	gc := d.(drivers.GroupConsumer)
	or := d.(drivers.GroupOffsetReader)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("groupfault-%d", time.Now().UnixNano())
	group := topic + "-g"
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
	start := startAt.Map()

	type delivery struct {
		value  string
		pos    drivers.Position
		polled time.Time // when the poll that gave it began
	}
	type commit struct {
		p   int32
		off int64
		at  time.Time // when the answer came
	}
	var (
		mu         sync.Mutex
		deliveries []delivery
		commits    []commit
		committed  = map[int32]int64{}
		memberErrs []error
	)
	mctx, mcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for n := range h.Members {
		m, err := gc.JoinGroup(ctx, drivers.GroupSpec{Group: group, Topic: topic, Member: n, StartOffsets: start})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Close(context.Background())
			for mctx.Err() == nil {
				began := time.Now()
				ds, err := m.Poll(mctx)
				if err != nil {
					if mctx.Err() == nil {
						mu.Lock()
						memberErrs = append(memberErrs, fmt.Errorf("member %d: poll: %w", n, err))
						mu.Unlock()
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				next := map[int32]int64{}
				mu.Lock()
				for _, dl := range ds {
					deliveries = append(deliveries, delivery{string(dl.Value), dl.Pos, began})
					next[dl.Pos.Partition] = max(next[dl.Pos.Partition], dl.Pos.Offset+1)
				}
				mu.Unlock()
				cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
				answers, err := m.Commit(cctx, next)
				ccancel()
				now := time.Now()
				if err != nil {
					continue // no answer: nothing was acknowledged
				}
				mu.Lock()
				for _, a := range answers {
					if a.Err == nil {
						commits = append(commits, commit{a.Partition, a.Offset, now})
						committed[a.Partition] = max(committed[a.Partition], a.Offset)
					}
				}
				mu.Unlock()
			}
		}()
	}

	// The load, paced, every outcome kept.
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
	res := GroupFaultResult{Fault: <-faultDone}
	t.Logf("fault: %s", res.Fault)

	// The group commits to where the partitions end, or CatchUp passes.
	endAt, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := endAt.Map()
	caughtUp := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for p, e := range end {
			if e > start[p] && committed[p] < e {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(h.CatchUp); !caughtUp() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	mcancel()
	wg.Wait()
	res.CaughtUp = caughtUp()
	mu.Lock()
	defer mu.Unlock()
	if len(memberErrs) > 0 {
		t.Logf("member errors (the members went on): %v", memberErrs)
	}
	res.Committed = committed
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		res.Held, err = or.CommittedOffsets(ctx, group, topic)
		if err != nil {
			t.Fatalf("read the group's offsets: %v", err)
		}
		if sorted(res.Held) == sorted(committed) || time.Now().After(deadline) {
			break
		}
	}
	// Where each record is, from the read-back.
	where := map[string]drivers.Position{}
	if _, err := d.Read(ctx, drivers.ReadSpec{Topic: topic, From: startAt, To: endAt, IdleTimeout: 10 * time.Second}, func(r drivers.Record) error {
		where[string(r.Value)] = r.Pos
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// Count.
	seen := map[string]int{}
	for _, dl := range deliveries {
		seen[dl.value]++
		if seen[dl.value] > 1 {
			res.Redelivered++
		}
		for _, c := range commits {
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
		if ok && (pos.Offset < committed[pos.Partition] || pos.Offset < res.Held[pos.Partition]) {
			res.Skipped++
			if res.Skipped <= 3 {
				t.Logf("skipped: %q at %v, never delivered, below the commit %d (the broker holds %d)", k, pos, committed[pos.Partition], res.Held[pos.Partition])
			}
		}
		return true
	})
	res.Delivered, res.Distinct, res.Commits = len(deliveries), len(seen), len(commits)
	t.Logf("%d acked, %d deliveries (%d distinct, %d redelivered), %d acknowledged commits, caught up %v; skipped %d, acks lost %d; committed %s, the broker holds %s",
		res.Acked, res.Delivered, res.Distinct, res.Redelivered, res.Commits, res.CaughtUp, res.Skipped, res.AcksLost, sorted(committed), sorted(res.Held))
	return res
}
