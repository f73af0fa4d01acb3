// Package drivertest holds what every driver's tests share: a wrapper that
// makes a real driver misbehave on purpose, and a conformance suite that
// runs ackcheck's whole pipeline through a driver and checks that every
// verdict class fires when it should and stays quiet when it should not.
package drivertest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/message"
)

// Misbehavior is what a Faulty driver does wrong.
type Misbehavior int

const (
	// Honest passes everything through.
	Honest Misbehavior = iota
	// DropAfterAck reports the message acked and never sends it: lost.
	DropAfterAck
	// Duplicate sends the message twice: one duplicate.
	Duplicate
	// Corrupt sends, after the message, a copy with one byte flipped.
	Corrupt
	// Phantom sends, after the message, one carrying this run's ID prefix
	// and a sequence number that was never sent.
	Phantom
	// Reorder holds the message back until HoldFor later messages of the
	// same producer have been handed over, then sends it.
	Reorder
)

func (m Misbehavior) String() string {
	return [...]string{"honest", "drop-after-ack", "duplicate", "corrupt", "phantom", "reorder"}[m]
}

// HoldFor is how many later publishes a Reorder holds a message back for.
// It exceeds the partition counts the suite uses, so the held message lands
// behind later sequences in its own partition.
const HoldFor = 64

// Faulty wraps a driver. Every Every-th publish of each producer (the
// first included) misbehaves as Mode says; Done counts how many did.
type Faulty struct {
	drivers.Driver
	Mode  Misbehavior
	Every int
	done  atomic.Int64
}

// Done is how many publishes misbehaved so far.
func (f *Faulty) Done() int64 { return f.done.Load() }

// NewProducer wraps the inner driver's producer.
func (f *Faulty) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := f.Driver.NewProducer(ctx, topic, id)
	if err != nil {
		return nil, err
	}
	return &faultyProducer{Producer: p, f: f}, nil
}

type held struct {
	ctx  context.Context
	m    drivers.Message
	done func(drivers.Outcome)
	left int
}

type faultyProducer struct {
	drivers.Producer
	f     *Faulty
	n     int
	mu    sync.Mutex
	held  []*held
	extra sync.WaitGroup // side publishes whose outcome nobody else awaits
}

func (p *faultyProducer) side(ctx context.Context, m drivers.Message) {
	p.extra.Add(1)
	p.Producer.Publish(ctx, m, func(drivers.Outcome) { p.extra.Done() })
}

func (p *faultyProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.mu.Lock()
	hit := p.f.Mode != Honest && p.n%max(1, p.f.Every) == 0
	p.n++
	var release []*held
	kept := p.held[:0]
	for _, h := range p.held {
		if h.left--; h.left <= 0 {
			release = append(release, h)
		} else {
			kept = append(kept, h)
		}
	}
	p.held = kept
	if hit && p.f.Mode == Reorder {
		p.held = append(p.held, &held{ctx: ctx, m: m, done: done, left: HoldFor})
	}
	p.mu.Unlock()

	if hit {
		p.f.done.Add(1)
	}
	switch {
	case !hit:
		p.Producer.Publish(ctx, m, done)
	case p.f.Mode == DropAfterAck:
		done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition, Offset: -1}})
	case p.f.Mode == Duplicate:
		p.Producer.Publish(ctx, m, done)
		p.side(ctx, m)
	case p.f.Mode == Corrupt:
		p.Producer.Publish(ctx, m, done)
		bad := m
		bad.Value = append([]byte(nil), m.Value...)
		bad.Value[len(bad.Value)/2] ^= 0x40
		p.side(ctx, bad)
	case p.f.Mode == Phantom:
		p.Producer.Publish(ctx, m, done)
		d := message.Decode(m.Value, 0)
		ghost := m
		ghost.Value = message.Encode(nil, message.ID{Run: d.ID.Run, Producer: d.ID.Producer, Seq: d.ID.Seq + 1<<40}, d.Intended, len(m.Value))
		p.side(ctx, ghost)
	}
	for _, h := range release {
		p.Producer.Publish(h.ctx, h.m, h.done)
	}
}

func (p *faultyProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	rest := p.held
	p.held = nil
	p.mu.Unlock()
	for _, h := range rest {
		p.Producer.Publish(h.ctx, h.m, h.done)
	}
	_ = drivers.Within(ctx, p.extra.Wait) // its side publishes, at most until ctx ends
	return p.Producer.Close(ctx)
}
