package drivertest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ackcheck/ackcheck/drivers"
)

// GroupMisbehavior is what a FaultyGroup's consumer group does wrong.
type GroupMisbehavior int

const (
	// GroupHonest passes everything through.
	GroupHonest GroupMisbehavior = iota
	// GroupSkip hides every Every-th delivery from the member: it never
	// sees the record, and the commit after the poll goes past it.
	GroupSkip
	// GroupForget answers every commit after the Every-th as acknowledged
	// without sending it: the broker keeps only the first ones, and a
	// member that joins again resumes there.
	GroupForget
	// GroupRedeliver delivers every Every-th record twice, the second
	// copy in the same poll (before any commit covers it).
	GroupRedeliver
)

func (m GroupMisbehavior) String() string {
	return [...]string{"honest", "skip", "forget", "redeliver"}[m]
}

// FaultyGroup wraps a driver that has consumer groups (drivers.
// GroupConsumer) and makes its group misbehave on purpose, as Faulty does
// its producers; Done counts the misdeeds. The driver it wraps must be
// one: a FaultyGroup over another is a test's mistake and panics.
type FaultyGroup struct {
	drivers.Driver
	Mode  GroupMisbehavior
	Every int
	done  atomic.Int64
	n     atomic.Int64
}

// Done is how many deliveries or commits misbehaved so far.
func (f *FaultyGroup) Done() int64 { return f.done.Load() }

func (f *FaultyGroup) inner() drivers.GroupConsumer {
	gc, ok := f.Driver.(drivers.GroupConsumer)
	if !ok {
		panic(fmt.Sprintf("drivertest.FaultyGroup: the %s driver has no consumer groups", f.Driver.Name()))
	}
	return gc
}

// JoinGroup wraps the inner driver's member.
func (f *FaultyGroup) JoinGroup(ctx context.Context, spec drivers.GroupSpec) (drivers.GroupMember, error) {
	m, err := f.inner().JoinGroup(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &faultyMember{GroupMember: m, f: f}, nil
}

// CommitPromise is the inner driver's, said durable: a forgotten commit
// then fails the verdict.
func (f *FaultyGroup) CommitPromise(ctx context.Context, group string) (drivers.CommitPromise, error) {
	p, _ := f.inner().CommitPromise(ctx, group)
	p.Durable = true
	if p.Meaning == "" {
		p.Meaning = "durable (drivertest.FaultyGroup says so)"
	}
	return p, nil
}

type faultyMember struct {
	drivers.GroupMember
	f       *FaultyGroup
	commits atomic.Int64
}

func (m *faultyMember) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	ds, err := m.GroupMember.Poll(ctx)
	if err != nil || (m.f.Mode != GroupSkip && m.f.Mode != GroupRedeliver) {
		return ds, err
	}
	out := ds[:0:0]
	for _, d := range ds {
		bad := m.f.n.Add(1)%int64(m.f.Every) == 0
		switch {
		case bad && m.f.Mode == GroupSkip:
			m.f.done.Add(1)
			continue
		case bad && m.f.Mode == GroupRedeliver:
			m.f.done.Add(1)
			out = append(out, d, d) // the same poll: no commit is before the copy
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

func (m *faultyMember) Commit(ctx context.Context, next map[int32]int64) ([]drivers.CommitAnswer, error) {
	if m.f.Mode != GroupForget || len(next) == 0 || m.f.n.Add(1) <= int64(m.f.Every) {
		return m.GroupMember.Commit(ctx, next)
	}
	// Forgotten: nothing reaches the broker, yet the member is told yes.
	if _, err := m.GroupMember.Commit(ctx, nil); err != nil {
		return nil, err
	}
	m.f.done.Add(1)
	var out []drivers.CommitAnswer
	for p, o := range next {
		out = append(out, drivers.CommitAnswer{Partition: p, Offset: o})
	}
	return out, nil
}
