package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// A consumer group beside the load (run --group): N members of one group
// of the broker's, each polling, recording every delivery of this run's
// messages in the ledger, and committing, per partition, the offset after
// the last record of the poll once it is recorded. A commit the broker
// acknowledges is recorded too (ledger.Commit); one it refuses is not.
//
// The members are bounded like every load loop: in time (they stop at
// Stop, which waits at most GroupConfig.CatchUp for them to commit up to
// where the partitions ended), and in count (a member stops after
// maxDeliveries deliveries, which a group that loops on the same records
// would otherwise never stop making).

// GroupConfig is the consumer group of a run.
type GroupConfig struct {
	// Name is the group's name at the broker.
	Name string
	// Members is how many members join it. Default 1.
	Members int
	// CatchUp bounds how long Stop waits, after the load, for the group
	// to commit up to where the partitions ended. Default 10s.
	CatchUp time.Duration
}

// CatchUpOrDefault is CatchUp, or its default when unset.
func (g GroupConfig) CatchUpOrDefault() time.Duration {
	if g.CatchUp <= 0 {
		return DefaultGroupCatchUp
	}
	return g.CatchUp
}

// DefaultGroupCatchUp is GroupConfig.CatchUp's default.
const DefaultGroupCatchUp = 10 * time.Second

// maxMembers bounds --consumers: a member's number is recorded in a byte.
const maxMembers = 255

// Validate refuses a group that cannot run, naming the flag.
func (g GroupConfig) Validate() error {
	switch {
	case g.Name == "":
		return errors.New("--group: give the consumer group a name")
	case g.Members < 0 || g.Members > maxMembers:
		return fmt.Errorf("--consumers %d: give 1 to %d members", g.Members, maxMembers)
	}
	return nil
}

// Group is a run's consumer group while it runs. Its methods may be
// called from any goroutine.
type Group struct {
	cfg    GroupConfig
	run    uint64
	topic  string
	start  map[int32]int64
	pbase  uint32
	nprod  uint32
	gc     drivers.GroupConsumer
	l      *ledger.Ledger
	maxDel int64

	commitSeq  atomic.Uint64
	delivered  atomic.Int64 // deliveries of this run's messages
	commits    atomic.Int64 // acknowledged commits (per partition)
	refused    atomic.Int64 // commits the broker refused or did not answer
	lastCommit atomic.Int64 // Unix ns of the last acknowledged commit that moved a partition on

	// mu guards the membership; the members' loops never take it, so
	// that it may be held while they are waited for.
	mu       sync.Mutex
	ctx      context.Context
	cancel   context.CancelFunc
	members  []*groupMember
	restarts int
	stopped  bool

	state     sync.Mutex      // guards committed and err
	committed map[int32]int64 // highest acknowledged commit per partition
	err       error
}

type groupMember struct {
	n      int
	m      drivers.GroupMember
	cancel context.CancelFunc
	done   chan struct{}
}

// NewGroup is the group of the load cfg on d, recording into l. It
// fails when d has no consumer groups.
func NewGroup(gcfg GroupConfig, cfg Config, d drivers.Driver, l *ledger.Ledger) (*Group, error) {
	if err := gcfg.Validate(); err != nil {
		return nil, err
	}
	gc, ok := d.(drivers.GroupConsumer)
	if !ok {
		return nil, fmt.Errorf("--group: the %s driver has no consumer groups yet", d.Name())
	}
	if gcfg.Members == 0 {
		gcfg.Members = 1
	}
	if gcfg.CatchUp <= 0 {
		gcfg.CatchUp = DefaultGroupCatchUp
	}
	cfg = cfg.WithDefaults()
	return &Group{cfg: gcfg, run: cfg.RunID, topic: cfg.Topic, start: cfg.StartOffsets.Map(), pbase: cfg.ProducerBase,
		nprod: uint32(cfg.Producers), gc: gc, l: l, maxDel: 4*int64(cfg.Scheduled()) + 100_000, committed: map[int32]int64{}}, nil
}

// Start joins every member and starts its loop; they run until Stop.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for n := range g.cfg.Members {
		gm, err := g.join(ctx, n, g.start)
		if err != nil {
			g.stopLocked(context.WithoutCancel(ctx))
			return err
		}
		g.members = append(g.members, gm)
	}
	return nil
}

// join starts member n; start seeds a group with no commit yet (nil:
// none). REQUIRES: g.mu held.
func (g *Group) join(ctx context.Context, n int, start map[int32]int64) (*groupMember, error) {
	m, err := g.gc.JoinGroup(ctx, drivers.GroupSpec{Group: g.cfg.Name, Topic: g.topic, Member: n, StartOffsets: start})
	if err != nil {
		return nil, fmt.Errorf("group %s: member %d could not join: %w", g.cfg.Name, n, err)
	}
	mctx, cancel := context.WithCancel(g.ctx)
	gm := &groupMember{n: n, m: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(gm.done)
		g.consume(mctx, gm)
	}()
	return gm, nil
}

// restartJoinTimeout bounds restart-consumers' joins.
const restartJoinTimeout = 30 * time.Second

// groupCommitTimeout bounds one commit: a coordinator that does not
// answer holds the member no longer than this.
const groupCommitTimeout = 15 * time.Second

// consume is one member's loop: poll, record the deliveries, commit what
// the poll delivered, record what the broker acknowledged.
func (g *Group) consume(ctx context.Context, gm *groupMember) {
	for ctx.Err() == nil {
		ds, err := gm.m.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			g.fail(fmt.Errorf("member %d: poll: %w", gm.n, err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		next := make(map[int32]int64)
		for _, d := range ds {
			if d.Pos.Offset+1 > next[d.Pos.Partition] {
				next[d.Pos.Partition] = d.Pos.Offset + 1
			}
			dm := message.Decode(d.Value, g.run)
			if dm.Status != message.Valid || dm.ID.Run != g.run || dm.ID.Producer-g.pbase >= g.nprod || dm.ID.Producer < g.pbase {
				continue // another run's or shard's, or damaged: the read-back judges those
			}
			if err := g.l.Record(ledger.Delivery, ledger.Event{Producer: dm.ID.Producer, Seq: dm.ID.Seq,
				Partition: d.Pos.Partition, Offset: d.Pos.Offset, Time: d.At.UnixNano(), Status: uint8(gm.n)}); err != nil {
				g.fail(fmt.Errorf("member %d: record a delivery: %w", gm.n, err))
				return
			}
			if g.delivered.Add(1) > g.maxDel {
				g.fail(fmt.Errorf("member %d stopped after %d deliveries, more than the load could need: the group is delivering the same records again and again", gm.n, g.maxDel))
				return
			}
		}
		// Every delivery of the poll is recorded before its commit goes. A
		// commit cut short by Stop or RestartMembers has no answer and is
		// not recorded: it promised nothing (restart-consumers must not
		// wait for a coordinator that does not answer).
		cctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
		answers, err := gm.m.Commit(cctx, next)
		cancel()
		now := time.Now()
		if err != nil {
			g.refused.Add(int64(len(next)))
			continue
		}
		for _, a := range answers {
			if a.Err != nil {
				g.refused.Add(1)
				continue
			}
			seq := g.commitSeq.Add(1) - 1
			if err := g.l.Record(ledger.Commit, ledger.Event{Producer: ledger.CommitProducer, Seq: seq,
				Partition: a.Partition, Offset: a.Offset, Time: now.UnixNano(), Status: uint8(gm.n)}); err != nil {
				g.fail(fmt.Errorf("member %d: record a commit: %w", gm.n, err))
				return
			}
			g.commits.Add(1)
			g.state.Lock()
			if a.Offset > g.committed[a.Partition] {
				g.committed[a.Partition] = a.Offset
				g.lastCommit.Store(now.UnixNano())
			}
			g.state.Unlock()
		}
	}
}

// fail keeps the group's first error.
func (g *Group) fail(err error) {
	g.state.Lock()
	defer g.state.Unlock()
	if g.err == nil {
		g.err = err
	}
}

// RestartMembers stops every member without committing what it was
// delivered since its last acknowledged commit, then joins each again
// (restart-consumers): the group must resume at its last acknowledged
// commits. It returns what it did, for the progress line.
func (g *Group) RestartMembers(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.ctx == nil {
		return "", errors.New("the consumer group is not running")
	}
	olds := g.members
	g.members = nil
	for _, gm := range olds {
		gm.cancel()
		<-gm.done
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		gm.m.Close(cctx)
		cancel()
	}
	// The joins are not cut short by the end of the load (the fault's ctx
	// ends with it), only bounded: after a fault the cluster may take
	// seconds to name a coordinator (a JetStream meta leader, a Kafka
	// offsets partition's new leader), and the group outlives the load by
	// its catch-up. Cut by the load's end, restart-consumers failed on
	// NATS and Kafka in the CI rehearsal ("could not join: ... context
	// canceled") and the run was aborted. A rejoin seeds nothing: the group
	// had its start offsets when it first joined.
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restartJoinTimeout)
	defer cancel()
	for _, gm := range olds {
		ngm, err := g.join(jctx, gm.n, nil)
		if err != nil {
			return "", err
		}
		g.members = append(g.members, ngm)
	}
	g.restarts++
	return fmt.Sprintf("%d members of group %s left without committing and joined again", len(olds), g.cfg.Name), nil
}

// Delivered, Commits and Refused count the group's deliveries of this
// run's messages, its acknowledged commits (one a partition), and the
// commits the broker refused or did not answer.
func (g *Group) Delivered() int64 { return g.delivered.Load() }
func (g *Group) Commits() int64   { return g.commits.Load() }
func (g *Group) Refused() int64   { return g.refused.Load() }

// LastProgress is when an acknowledged commit last moved a partition on
// (zero before the first).
func (g *Group) LastProgress() time.Time { return unixNanoTime(&g.lastCommit) }

// Committed is the highest acknowledged commit per partition so far.
func (g *Group) Committed() map[int32]int64 {
	g.state.Lock()
	defer g.state.Unlock()
	out := make(map[int32]int64, len(g.committed))
	for p, o := range g.committed {
		out[p] = o
	}
	return out
}

// Stop lets the members go on until they have committed up to end (the
// partitions' end offsets after the load) or CatchUp passed, then stops
// every member without committing more. It returns the group's info for
// the ledger (restarts, the first error). With end unknown (empty) it
// cannot tell that the group caught up: it lets the members go on for
// the whole of CatchUp and says so in the info's Err.
func (g *Group) Stop(ctx context.Context, end map[int32]int64) ledger.GroupInfo {
	deadline := time.Now().Add(g.cfg.CatchUp)
	for time.Now().Before(deadline) && ctx.Err() == nil && (len(end) == 0 || !g.caughtUp(end)) {
		time.Sleep(50 * time.Millisecond)
	}
	g.mu.Lock()
	g.stopLocked(context.WithoutCancel(ctx))
	info := ledger.GroupInfo{Name: g.cfg.Name, Members: g.cfg.Members, Restarts: g.restarts}
	g.mu.Unlock()
	g.state.Lock()
	defer g.state.Unlock()
	if g.err != nil {
		info.Err = g.err.Error()
	}
	if len(end) == 0 {
		note := fmt.Sprintf("the partitions' ends were not known: the group ran %s after the load and may not have committed up to them", g.cfg.CatchUp)
		if info.Err == "" {
			info.Err = note
		} else {
			info.Err += "; " + note
		}
	} else if !g.caughtUpLocked(end) {
		behind := ""
		for p, e := range end {
			if s := g.start[p]; e > s && g.committed[p] < e {
				behind += fmt.Sprintf(" %d:%d<%d", p, g.committed[p], e)
			}
		}
		note := fmt.Sprintf("the group had not committed up to the partitions' ends %s after the load (partition:committed<end%s)", g.cfg.CatchUp, behind)
		if info.Err == "" {
			info.Err = note
		} else {
			info.Err += "; " + note
		}
	}
	return info
}

func (g *Group) caughtUp(end map[int32]int64) bool {
	g.state.Lock()
	defer g.state.Unlock()
	return g.caughtUpLocked(end)
}

// caughtUpLocked: every partition that grew since the start has its
// commit at its end. REQUIRES: g.state held.
func (g *Group) caughtUpLocked(end map[int32]int64) bool {
	for p, e := range end {
		if e > g.start[p] && g.committed[p] < e {
			return false
		}
	}
	return true
}

// stopLocked stops every member. REQUIRES: g.mu held.
func (g *Group) stopLocked(ctx context.Context) {
	if g.stopped {
		return
	}
	g.stopped = true
	if g.cancel != nil {
		g.cancel()
	}
	for _, gm := range g.members {
		<-gm.done
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		gm.m.Close(cctx)
		cancel()
	}
}
