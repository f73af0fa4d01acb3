package nats

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KeyHeader carries a message's key, base64 (NATS has no record key and
// header values are text).
const KeyHeader = "Ackcheck-Key"

// retryWait is the pause before a publish is sent again.
const retryWait = 250 * time.Millisecond

// producer is one load producer: a connection of its own and its
// JetStream async publisher.
//
// Invariant: every message handed to Publish is in pending until its
// outcome is reported, and is reported exactly once (pendingPub.finish).
// A message is sent again, with the same Nats-Msg-Id, only after an
// attempt ended without an answer from the stream; the stream's duplicate
// window makes a second copy impossible while PublishTimeout (checked to
// be shorter) lasts.
type producer struct {
	d      *Driver
	nc     *nats.Conn
	js     jetstream.JetStream
	topic  string
	parts  int
	prefix string // this producer's Nats-Msg-Id prefix: random, so no run repeats another's IDs

	mu      sync.Mutex
	next    uint64
	pending map[*nats.Msg]*pendingPub
	closing bool
	drained chan struct{} // closed when closing and pending is empty
}

// pendingPub is one message between Publish and its outcome.
type pendingPub struct {
	part     int32
	stream   string
	start    time.Time
	attempts int
	done     func(drivers.Outcome)
}

// NewProducer implements drivers.Driver.
func (d *Driver) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s: %w", topic, drivers.ErrTopicMissing)
	}
	nonce := make([]byte, 6)
	rand.Read(nonce)
	p := &producer{d: d, topic: topic, parts: len(parts), pending: map[*nats.Msg]*pendingPub{},
		prefix: fmt.Sprintf("%s-%d", hex.EncodeToString(nonce), id), drained: make(chan struct{})}
	p.nc, err = d.cfg.connect(fmt.Sprintf("ackcheck-producer-%d", id))
	if err != nil {
		return nil, d.unreachable(fmt.Sprintf("connect producer %d", id), err)
	}
	p.js, err = jetstream.New(p.nc,
		jetstream.WithPublishAsyncMaxPending(d.cfg.MaxPending),
		jetstream.WithPublishAsyncTimeout(d.cfg.AckTimeout),
		jetstream.WithPublishAsyncAckHandler(p.onAck),
		jetstream.WithPublishAsyncErrHandler(p.onErr))
	if err != nil {
		p.nc.Close()
		return nil, err
	}
	return p, nil
}

// Publish implements drivers.Producer.
func (p *producer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	part := m.Partition
	if part < 0 {
		part = partitionFor(m.Key, p.parts)
	}
	if int(part) >= p.parts {
		done(drivers.Outcome{Status: drivers.Rejected, Err: fmt.Errorf("partition %d: the topic has %d", part, p.parts)})
		return
	}
	msg := &nats.Msg{Subject: Subject(p.topic, part), Data: m.Value, Header: nats.Header{}}
	if len(m.Key) > 0 {
		msg.Header.Set(KeyHeader, base64.StdEncoding.EncodeToString(m.Key))
	}
	pp := &pendingPub{part: part, stream: StreamName(p.topic, part), start: time.Now(), done: done}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		done(drivers.Outcome{Status: drivers.Rejected, Err: errors.New("producer closed")})
		return
	}
	p.next++
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-%d", p.prefix, p.next))
	p.pending[msg] = pp
	p.mu.Unlock()
	p.send(msg, pp)
}

// send makes one attempt. A send that fails at once never reached the
// server: on the first attempt that is a rejection; after an earlier
// attempt that may have been stored, the outcome stays open and the
// message is retried while time allows.
func (p *producer) send(msg *nats.Msg, pp *pendingPub) {
	p.mu.Lock()
	pp.attempts++
	p.mu.Unlock()
	_, err := p.js.PublishMsgAsync(msg, jetstream.WithExpectStream(pp.stream),
		jetstream.WithStallWait(time.Millisecond), jetstream.WithRetryWait(retryWait))
	if err == nil {
		return
	}
	p.onErr(p.js, msg, err)
}

// onAck is the publisher's ack callback.
func (p *producer) onAck(_ jetstream.JetStream, msg *nats.Msg, ack *jetstream.PubAck) {
	pp := p.take(msg)
	if pp == nil {
		return
	}
	if ack.Stream != pp.stream {
		pp.done(drivers.Outcome{Status: drivers.Unknown, Err: fmt.Errorf("acked by stream %s, not %s", ack.Stream, pp.stream)})
		return
	}
	pp.done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: pp.part, Offset: int64(ack.Sequence)}})
}

// onErr is the publisher's error callback, and send's for errors raised
// before anything was sent.
func (p *producer) onErr(_ jetstream.JetStream, msg *nats.Msg, err error) {
	p.mu.Lock()
	pp := p.pending[msg]
	var attempts int
	if pp != nil {
		attempts = pp.attempts
	}
	p.mu.Unlock()
	if pp == nil {
		return
	}
	if retryable(err) && time.Since(pp.start)+retryWait < p.d.cfg.PublishTimeout {
		time.AfterFunc(retryWait, func() {
			p.mu.Lock()
			_, still := p.pending[msg]
			p.mu.Unlock()
			if still {
				p.send(msg, pp)
			}
		})
		return
	}
	if pp = p.take(msg); pp != nil {
		pp.done(classify(err, attempts))
	}
}

// take removes msg from pending; nil if its outcome was reported already.
func (p *producer) take(msg *nats.Msg) *pendingPub {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.pending[msg]
	delete(p.pending, msg)
	if p.closing && len(p.pending) == 0 {
		select {
		case <-p.drained:
		default:
			close(p.drained)
		}
	}
	return pp
}

// retryable reports whether err leaves the message's fate open and a new
// attempt may settle it: no answer in time, a lost connection, no stream
// leader yet.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503 // JetStream temporarily unavailable (no leader)
	}
	for _, e := range []error{jetstream.ErrAsyncPublishTimeout, jetstream.ErrNoStreamResponse, nats.ErrDisconnected,
		nats.ErrNoResponders, nats.ErrTimeout, nats.ErrReconnectBufExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// classify maps a final error to the driver seam. The stream's refusal
// (an API error) and a refusal by the client before sending are Rejected,
// but only on the first attempt: after an attempt whose answer never came,
// that attempt may have been stored, so the outcome is Unknown.
func classify(err error, attempts int) drivers.Outcome {
	if attempts <= 1 {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.Code != 503 {
			return drivers.Outcome{Status: drivers.Rejected, Err: err}
		}
		for _, e := range []error{jetstream.ErrTooManyStalledMsgs, nats.ErrConnectionClosed, nats.ErrMaxPayload,
			nats.ErrBadSubject, nats.ErrInvalidMsg} {
			if errors.Is(err, e) {
				return drivers.Outcome{Status: drivers.Rejected, Err: err}
			}
		}
	}
	return drivers.Outcome{Status: drivers.Unknown, Err: err}
}

// Close implements drivers.Producer: it waits for every pending outcome,
// retries included, or for ctx; what is left is reported Unknown.
func (p *producer) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	if len(p.pending) == 0 {
		select {
		case <-p.drained:
		default:
			close(p.drained)
		}
	}
	p.mu.Unlock()
	select {
	case <-p.drained:
	case <-ctx.Done():
	}
	p.mu.Lock()
	left := p.pending
	p.pending = map[*nats.Msg]*pendingPub{}
	p.mu.Unlock()
	for _, pp := range left {
		pp.done(drivers.Outcome{Status: drivers.Unknown, Err: errors.New("producer closed before the stream answered")})
	}
	p.nc.Close()
	return nil
}

// partitionFor picks a partition for an unpinned message by its key.
func partitionFor(key []byte, n int) int32 {
	h := fnv.New32a()
	h.Write(key)
	return int32(h.Sum32() % uint32(n))
}
