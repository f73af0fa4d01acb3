package drivertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// GroupHarness is what RunGroup needs of a driver with consumer groups.
type GroupHarness struct {
	// NewDriver returns a fresh driver; it must implement
	// drivers.GroupConsumer and drivers.GroupOffsetReader.
	NewDriver         func(t *testing.T) drivers.Driver
	Partitions        int
	ReplicationFactor int
	// Records is how many records are produced, spread evenly over the
	// partitions. Default 60.
	Records int
	// Redelivery bounds how long the broker takes to give the records of
	// a member that left without committing to another member (a lease,
	// an ack wait); the test waits that long and 15 s more.
	Redelivery time.Duration
}

// RunGroup checks a driver's group consumption through the seam on a
// real broker, in two subtests:
//
//   - poll-commit: a member polls a small produced topic to its end,
//     committing after each poll; every record is delivered at the
//     position the read-back gives it, each commit is acknowledged, and
//     the offsets the broker holds for the group (GroupOffsetReader,
//     an account ackcheck did not compute) are the last commits, which
//     are the partitions' ends.
//   - redelivery: a member polls once and leaves without committing;
//     another member of the group is given those records again (a
//     redelivery that really happens), commits everything, and the
//     broker's offsets are then its commits.
//
// It returns the topic; the groups were named <topic>-a and <topic>-b.
func RunGroup(t *testing.T, h GroupHarness) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := prepareGroupSuite(ctx, t, h)
	t.Run("poll-commit", g.pollCommit)
	t.Run("redelivery", g.redelivery)
	return g.topic
}

// groupSuite is RunGroup's produced topic, as the read-back gives it,
// shared by its subtests.
type groupSuite struct {
	ctx        context.Context
	h          GroupHarness
	gc         drivers.GroupConsumer
	or         drivers.GroupOffsetReader
	topic      string
	partitions []int32
	start, end map[int32]int64
	// want is where the read-back puts each value: what a delivery must
	// say.
	want map[string]drivers.Position
}

// prepareGroupSuite opens a driver, produces h.Records records to a new
// topic and reads them back.
func prepareGroupSuite(ctx context.Context, t *testing.T, h GroupHarness) *groupSuite {
	if h.Records == 0 {
		h.Records = 60
	}
	d := h.NewDriver(t)
	t.Cleanup(func() { d.Close() })
	g := &groupSuite{ctx: ctx, h: h, topic: fmt.Sprintf("groupsuite-%d", time.Now().UnixNano())}
	var ok bool
	if g.gc, ok = d.(drivers.GroupConsumer); !ok {
		t.Fatalf("the %s driver is not a drivers.GroupConsumer", d.Name())
	}
	if g.or, ok = d.(drivers.GroupOffsetReader); !ok {
		t.Fatalf("the %s driver is not a drivers.GroupOffsetReader", d.Name())
	}
	info, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: g.topic, Partitions: h.Partitions, ReplicationFactor: h.ReplicationFactor})
	if err != nil {
		t.Fatal(err)
	}
	g.partitions = info.Partitions
	g.start = map[int32]int64{}
	if ls, ok := d.(drivers.LogStarter); ok {
		startAt, err := ls.StartOffsets(ctx, g.topic)
		if err != nil {
			t.Fatal(err)
		}
		g.start = startAt.Map()
	}
	produce(ctx, t, d, g.topic, info.Partitions, h.Records)
	endAt, err := d.EndOffsets(ctx, g.topic)
	if err != nil {
		t.Fatal(err)
	}
	g.end = endAt.Map()
	g.want = map[string]drivers.Position{}
	from := map[int32]int64{}
	for _, p := range info.Partitions {
		from[p] = g.start[p]
	}
	if _, err := d.Read(ctx, drivers.ReadSpec{Topic: g.topic, From: drivers.OffsetsOf(from), To: endAt, IdleTimeout: 10 * time.Second}, func(r drivers.Record) error {
		g.want[string(r.Value)] = r.Pos
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(g.want) != h.Records {
		t.Fatalf("the read-back found %d records, %d were produced", len(g.want), h.Records)
	}
	promise, err := g.gc.CommitPromise(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("commit promise: %+v", promise)
	return g
}

// pollCommit: a member polls the topic to its end, committing as it goes;
// the broker's offsets follow the commits.
func (g *groupSuite) pollCommit(t *testing.T) {
	ctx, want := g.ctx, g.want
	group := g.topic + "-a"
	m, err := g.gc.JoinGroup(ctx, drivers.GroupSpec{Group: group, Topic: g.topic, Member: 0, StartOffsets: g.start})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// The first poll is committed in two steps, the first half way:
	// the broker's account must follow the commits, not the ends.
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	first, err := m.Poll(pctx)
	pcancel()
	if err != nil || len(first) == 0 {
		t.Fatalf("the first poll: %d deliveries, %v", len(first), err)
	}
	half, hi := halfWay(t, first, want)
	checkOffsets(ctx, t, g.or, group, g.topic, commitAll(ctx, t, m, half, want, g.end))
	committed := commitAll(ctx, t, m, hi, want, g.end)
	got := map[string]bool{}
	for _, dl := range first {
		got[string(dl.Value)] = true
	}
	more := pollAll(ctx, t, m, want, got, g.end, 30*time.Second)
	for p, o := range more {
		committed[p] = max(committed[p], o)
	}
	if len(got) != len(want) {
		t.Fatalf("the member was delivered %d distinct records of %d", len(got), len(want))
	}
	for _, p := range g.partitions {
		if g.end[p] > g.start[p] && committed[p] != g.end[p] {
			t.Errorf("partition %d: last acknowledged commit %d, the partition ends at %d", p, committed[p], g.end[p])
		}
	}
	checkOffsets(ctx, t, g.or, group, g.topic, committed)
}

// halfWay checks that each delivery of a first poll is where the
// read-back has it, and returns, per partition, an offset half way
// through what the poll delivered and the offset after its last.
func halfWay(t *testing.T, first []drivers.Delivery, want map[string]drivers.Position) (half, hi map[int32]int64) {
	t.Helper()
	lo := map[int32]int64{}
	hi = map[int32]int64{}
	for _, dl := range first {
		if pos := want[string(dl.Value)]; pos != dl.Pos {
			t.Fatalf("delivered %q at %v, the read-back has it at %v", dl.Value, dl.Pos, pos)
		}
		if o, ok := lo[dl.Pos.Partition]; !ok || dl.Pos.Offset < o {
			lo[dl.Pos.Partition] = dl.Pos.Offset
		}
		hi[dl.Pos.Partition] = max(hi[dl.Pos.Partition], dl.Pos.Offset+1)
	}
	half = map[int32]int64{}
	for p := range hi {
		if mid := (lo[p] + hi[p]) / 2; mid > lo[p] {
			half[p] = mid
		}
	}
	if len(half) == 0 {
		t.Fatalf("the first poll delivered one record per partition (%v): give more records", hi)
	}
	return half, hi
}

// redelivery: a member polls once and leaves without committing; another
// member is given those records again and commits everything.
func (g *groupSuite) redelivery(t *testing.T) {
	ctx := g.ctx
	group := g.topic + "-b"
	a, err := g.gc.JoinGroup(ctx, drivers.GroupSpec{Group: group, Topic: g.topic, Member: 0, StartOffsets: g.start})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	first, err := a.Poll(pctx)
	pcancel()
	if err != nil || len(first) == 0 {
		t.Fatalf("member 0's first poll: %d deliveries, %v", len(first), err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	b, err := g.gc.JoinGroup(ctx, drivers.GroupSpec{Group: group, Topic: g.topic, Member: 1, StartOffsets: g.start})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	got := map[string]bool{}
	committed := pollAll(ctx, t, b, g.want, got, g.end, g.h.Redelivery+15*time.Second)
	for _, dl := range first {
		if _, ok := got[string(dl.Value)]; !ok {
			t.Errorf("record at %v, delivered to member 0 which left without committing, was not delivered again to member 1", dl.Pos)
		}
	}
	if len(got) != len(g.want) {
		t.Errorf("member 1 was delivered %d distinct records of %d", len(got), len(g.want))
	}
	t.Logf("member 0 was delivered %d records and left; member 1 had all %d %s later", len(first), len(got), time.Since(left).Round(time.Millisecond))
	checkOffsets(ctx, t, g.or, group, g.topic, committed)
}

// produce publishes n records spread over parts and waits for every ack.
func produce(ctx context.Context, t *testing.T, d drivers.Driver, topic string, parts []int32, n int) {
	t.Helper()
	p, err := d.NewProducer(ctx, topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	outs := make(chan drivers.Outcome, n)
	for i := range n {
		p.Publish(ctx, drivers.Message{Value: []byte(fmt.Sprintf("group-record-%04d", i)), Partition: parts[i%len(parts)], SentAt: time.Now()},
			func(o drivers.Outcome) { outs <- o })
	}
	for range n {
		if o := <-outs; o.Status != drivers.Acked {
			t.Fatalf("a produce was not acked: %v %v", o.Status, o.Err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// pollAll polls m until every record of want is in got or limit
// passed, committing after each poll. It checks each delivery's position
// against want and each commit's answer, adds what was delivered to got,
// and returns the last acknowledged commit per partition.
func pollAll(ctx context.Context, t *testing.T, m drivers.GroupMember, want map[string]drivers.Position, got map[string]bool, end map[int32]int64, limit time.Duration) map[int32]int64 {
	t.Helper()
	committed := map[int32]int64{}
	deadline := time.Now().Add(limit)
	for len(got) < len(want) && time.Now().Before(deadline) {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		ds, err := m.Poll(pctx)
		cancel()
		if err != nil {
			if pctx.Err() != nil {
				break
			}
			t.Fatalf("poll: %v", err)
		}
		next := map[int32]int64{}
		for _, dl := range ds {
			pos, ok := want[string(dl.Value)]
			switch {
			case !ok:
				t.Fatalf("delivered %q at %v, which was not produced", dl.Value, dl.Pos)
			case pos != dl.Pos:
				t.Fatalf("delivered %q at %v, the read-back has it at %v", dl.Value, dl.Pos, pos)
			}
			got[string(dl.Value)] = true
			next[dl.Pos.Partition] = max(next[dl.Pos.Partition], dl.Pos.Offset+1)
		}
		if len(next) == 0 {
			continue
		}
		for p, o := range commitAll(ctx, t, m, next, want, end) {
			committed[p] = max(committed[p], o)
		}
	}
	return committed
}

// commitAll commits next and fails the test unless every partition's
// commit is acknowledged at the offset asked, or at another that covers
// the same records of want (the read-back's positions): no record lies
// between the two. A broker whose offsets are not dense may name the
// commit its own way (Pulsar: the position after the last entry acked,
// where the member asked for the position after its last message), but
// never past the partition's end. It returns the answers' offsets.
func commitAll(ctx context.Context, t *testing.T, m drivers.GroupMember, next map[int32]int64, want map[string]drivers.Position, end map[int32]int64) map[int32]int64 {
	t.Helper()
	answers, err := m.Commit(ctx, next)
	if err != nil {
		t.Fatalf("commit %v: %v", next, err)
	}
	out := map[int32]int64{}
	for _, a := range answers {
		if a.Err != nil {
			t.Fatalf("commit of partition %d at %d refused: %v", a.Partition, a.Offset, a.Err)
		}
		if e, ok := end[a.Partition]; ok && a.Offset > e {
			t.Fatalf("commit of partition %d at %d answered offset %d, past the partition's end %d", a.Partition, next[a.Partition], a.Offset, e)
		}
		if between := recordsBetween(want, a.Partition, a.Offset, next[a.Partition]); between > 0 {
			t.Fatalf("commit of partition %d at %d answered offset %d, %d records apart", a.Partition, next[a.Partition], a.Offset, between)
		}
		out[a.Partition] = a.Offset
	}
	if len(out) != len(next) {
		t.Fatalf("commit of %v: answers for %v", next, out)
	}
	return out
}

// recordsBetween counts the records of want on partition p at or past
// the lower of a and b and below the higher.
func recordsBetween(want map[string]drivers.Position, p int32, a, b int64) int {
	lo, hi := min(a, b), max(a, b)
	n := 0
	for _, pos := range want {
		if pos.Partition == p && pos.Offset >= lo && pos.Offset < hi {
			n++
		}
	}
	return n
}

// checkOffsets compares what the broker holds for group with the
// acknowledged commits; it asks again for a few seconds, as a broker may
// apply an acknowledged commit to what it reports a little later.
func checkOffsets(ctx context.Context, t *testing.T, or drivers.GroupOffsetReader, group, topic string, committed map[int32]int64) {
	t.Helper()
	var held map[int32]int64
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		held, err = or.CommittedOffsets(ctx, group, topic)
		if err == nil && fmt.Sprint(sorted(held)) == fmt.Sprint(sorted(committed)) {
			t.Logf("the broker holds the group's commits: %s", sorted(held))
			return
		}
	}
	if err != nil {
		t.Fatalf("read the group's offsets: %v", err)
	}
	t.Errorf("the broker holds %s for group %s, the acknowledged commits say %s", sorted(held), group, sorted(committed))
}

func sorted(m map[int32]int64) string {
	var parts []string
	for p, o := range m {
		parts = append(parts, fmt.Sprintf("%d:%d", p, o))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
