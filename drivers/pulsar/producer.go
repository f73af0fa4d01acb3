package pulsar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func quietLogger() plog.Logger { return plog.DefaultNopLogger() }

// producer is one load producer: a Pulsar producer per partition.
type producer struct {
	parts []pulsar.Producer

	mu      sync.Mutex
	pending map[uint64]*pendingSend
	next    uint64
}

// pendingSend makes sure done is called exactly once, by the client's
// callback or by Close when it gives up.
type pendingSend struct {
	called atomic.Bool
	done   func(drivers.Outcome)
}

func (p *pendingSend) finish(o drivers.Outcome) bool {
	if p.called.Swap(true) {
		return false
	}
	p.done(o)
	return true
}

// NewProducer implements drivers.Driver.
func (d *Driver) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	tn, partitions, err := d.describe(ctx, topic)
	if err != nil {
		return nil, err
	}
	p := &producer{pending: map[uint64]*pendingSend{}}
	for i := 0; i < partitions; i++ {
		pt, _ := tn.GetPartition(i)
		pp, err := d.client.CreateProducer(pulsar.ProducerOptions{
			Topic:                   pt.String(),
			DisableBatching:         d.cfg.DisableBatching,
			BatchingMaxPublishDelay: d.cfg.BatchingMaxPublishDelay,
			SendTimeout:             d.cfg.SendTimeout,
			MaxPendingMessages:      d.cfg.MaxPendingMessages,
			DisableBlockIfQueueFull: true, // a full queue must not stall the paced load
		})
		if err != nil {
			for _, q := range p.parts {
				q.Close()
			}
			return nil, d.unreachable(fmt.Sprintf("create a producer on %s", pt), err)
		}
		p.parts = append(p.parts, pp)
	}
	return p, nil
}

// Publish implements drivers.Producer.
func (p *producer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	part := int(m.Partition)
	if part < 0 {
		part = partitionFor(m.Key, len(p.parts))
	}
	if part >= len(p.parts) {
		done(drivers.Outcome{Status: drivers.Rejected, Err: fmt.Errorf("partition %d: the topic has %d", part, len(p.parts))})
		return
	}
	ps := &pendingSend{done: done}
	p.mu.Lock()
	p.next++
	key := p.next
	p.pending[key] = ps
	p.mu.Unlock()
	msg := &pulsar.ProducerMessage{Payload: m.Value}
	if len(m.Key) > 0 {
		msg.Key = string(m.Key)
	}
	p.parts[part].SendAsync(ctx, msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		p.mu.Lock()
		delete(p.pending, key)
		p.mu.Unlock()
		ps.finish(outcome(int32(part), id, err))
	})
}

// outcome maps the client's answer to the driver seam. Only errors raised
// in the client before the message left it are Rejected; a timeout or any
// error the broker may have raised after storing is Unknown.
func outcome(part int32, id pulsar.MessageID, err error) drivers.Outcome {
	if err == nil {
		pos, perr := Pack(id.LedgerID(), id.EntryID(), id.BatchIdx())
		if perr != nil {
			pos = -1 // acked, at a position ackcheck cannot represent: the read-back will say so
		}
		return drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: part, Offset: pos}}
	}
	for _, e := range []error{pulsar.ErrSendQueueIsFull, pulsar.ErrMessageTooLarge, pulsar.ErrMetaTooLarge,
		pulsar.ErrProducerClosed, pulsar.ErrMemoryBufferIsFull, pulsar.ErrInvalidMessage, pulsar.ErrSchema} {
		if errors.Is(err, e) {
			return drivers.Outcome{Status: drivers.Rejected, Err: err}
		}
	}
	return drivers.Outcome{Status: drivers.Unknown, Err: err}
}

// Close implements drivers.Producer: it flushes and closes every partition
// producer, which waits for their pending sends. If ctx ends first, what
// is still pending is reported Unknown.
func (p *producer) Close(ctx context.Context) error {
	closed := make(chan struct{})
	go func() {
		for _, pp := range p.parts {
			pp.FlushWithCtx(ctx)
			pp.Close()
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	p.mu.Lock()
	left := p.pending
	p.pending = map[uint64]*pendingSend{}
	p.mu.Unlock()
	for _, ps := range left {
		ps.finish(drivers.Outcome{Status: drivers.Unknown, Err: errors.New("producer closed before the broker answered")})
	}
	return nil
}
