package queen

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// retryWait is the pause before a push is sent again.
const retryWait = 200 * time.Millisecond

// producer batches one load producer's messages into HTTP pushes.
//
// Invariant: every message handed to Publish gets exactly one outcome,
// from the push that carried it (item.done is called once, by finish).
// A push without a usable answer is sent again, same items, same
// transactionIds, until PushTimeout from each item's first send; Queen
// answers a transactionId it committed "duplicate", so nothing is stored
// twice.
type producer struct {
	d      *Driver
	topic  string
	parts  int
	prefix string // this producer's transactionId prefix: random, so no run repeats another's

	in      chan *item
	sem     chan struct{} // pushes in flight
	flights sync.WaitGroup
	loop    chan struct{} // closed when the batching loop ended

	mu      sync.Mutex
	next    uint64
	pending map[*item]struct{} // items without an outcome yet

	// inMu guards sends to in against its close: Publish holds it shared
	// while it sends, Close exclusively while it closes. Not mu: a send
	// may wait for the batching loop, which may wait for a push, which
	// takes mu to finish an item.
	inMu   sync.RWMutex
	closed bool
}

// item is one message between Publish and its outcome.
type item struct {
	part  int32
	txID  string
	value string // base64 of the message value: Queen's payload is JSON
	start time.Time
	p     *producer
	once  sync.Once
	done  func(drivers.Outcome)
}

// finish reports the item's outcome, the first time it is called.
func (it *item) finish(o drivers.Outcome) {
	it.once.Do(func() {
		it.p.mu.Lock()
		delete(it.p.pending, it)
		it.p.mu.Unlock()
		it.done(o)
	})
}

// NewProducer implements drivers.Driver.
func (d *Driver) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	n, err := d.partitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 6)
	rand.Read(nonce)
	p := &producer{d: d, topic: topic, parts: n, prefix: fmt.Sprintf("ackcheck-%s-%d-", hex.EncodeToString(nonce), id),
		pending: map[*item]struct{}{},
		in:      make(chan *item, d.cfg.MaxPending), sem: make(chan struct{}, d.cfg.MaxConcurrent), loop: make(chan struct{})}
	go p.batch()
	return p, nil
}

// Publish implements drivers.Producer. It never blocks the paced load: a
// message past MaxPending unanswered ones is rejected at once.
func (p *producer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	part := m.Partition
	if part < 0 {
		h := fnv.New32a()
		h.Write(m.Key)
		part = int32(h.Sum32() % uint32(p.parts))
	}
	p.inMu.RLock()
	defer p.inMu.RUnlock()
	if p.closed {
		done(drivers.Outcome{Status: drivers.Rejected, Err: errors.New("producer closed")})
		return
	}
	p.mu.Lock()
	if len(p.pending) >= p.d.cfg.MaxPending {
		p.mu.Unlock()
		done(drivers.Outcome{Status: drivers.Rejected, Err: fmt.Errorf("%d pushes unanswered (--max-pending)", p.d.cfg.MaxPending)})
		return
	}
	p.next++
	it := &item{part: part, txID: fmt.Sprintf("%s%d", p.prefix, p.next), value: base64.StdEncoding.EncodeToString(m.Value),
		start: time.Now(), done: done, p: p}
	p.pending[it] = struct{}{}
	p.flights.Add(1)
	p.mu.Unlock()
	p.in <- it
}

// batch gathers items into pushes of at most MaxBatch, each waiting at
// most Linger for more, and sends each on its own goroutine (at most
// MaxConcurrent at once).
func (p *producer) batch() {
	defer close(p.loop)
	linger := time.NewTimer(time.Hour)
	defer linger.Stop()
	var pending []*item
	flush := func() {
		if len(pending) == 0 {
			return
		}
		batch := pending
		pending = nil
		p.sem <- struct{}{}
		go func() {
			defer func() { <-p.sem }()
			p.push(batch)
		}()
	}
	for {
		select {
		case it, ok := <-p.in:
			if !ok {
				flush()
				return
			}
			if len(pending) == 0 {
				linger.Reset(p.d.cfg.Linger)
			}
			pending = append(pending, it)
			if len(pending) >= p.d.cfg.MaxBatch {
				flush()
			}
		case <-linger.C:
			flush()
		}
	}
}

// pushItem is one item of a push request.
type pushItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Payload       string `json:"payload"`
	TransactionID string `json:"transactionId"`
}

// pushAnswer is one item of a push answer. Queen 0.15 answers an array of
// them; other releases wrap it in an object ({"messages": [...]}, with
// status "pushed" for a committed item) or add fields (an offset), which
// the driver does not need.
type pushAnswer struct {
	Index         *int   `json:"index"`
	TransactionID string `json:"transaction_id"`
	Status        string `json:"status"`
	MessageID     string `json:"message_id"`
	Error         any    `json:"error"`
}

// pushAnswers reads a push answer's items, in either form.
type pushAnswers []pushAnswer

func (a *pushAnswers) UnmarshalJSON(data []byte) error {
	var list []pushAnswer
	if err := json.Unmarshal(data, &list); err == nil {
		*a = list
		return nil
	}
	var wrapped struct {
		Messages []pushAnswer `json:"messages"`
		Items    []pushAnswer `json:"items"`
	}
	if err := json.Unmarshal(data, &wrapped); err != nil {
		return err
	}
	*a = append(wrapped.Messages, wrapped.Items...)
	return nil
}

// push sends one batch until every item has its outcome.
func (p *producer) push(batch []*item) {
	defer func() {
		for range batch {
			p.flights.Done()
		}
	}()
	req := struct {
		Items []pushItem `json:"items"`
	}{}
	for _, it := range batch {
		req.Items = append(req.Items, pushItem{Queue: p.topic, Partition: partitionName(it.part), Payload: it.value, TransactionID: it.txID})
	}
	deadline := batch[0].start.Add(p.d.cfg.PushTimeout)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), min(p.d.cfg.AttemptTimeout, max(time.Until(deadline), time.Millisecond)))
		var answers pushAnswers
		err := p.d.call(ctx, http.MethodPost, "/api/v1/push", req, &answers)
		cancel()
		if err == nil {
			err = p.settle(batch, answers)
		}
		if err == nil {
			return
		}
		if time.Now().Add(retryWait).After(deadline) {
			for _, it := range batch {
				it.finish(drivers.Outcome{Status: drivers.Unknown, Err: fmt.Errorf("no usable answer to %d pushes within %s: %w", attempt, p.d.cfg.PushTimeout, err)})
			}
			return
		}
		time.Sleep(retryWait)
	}
}

// settle gives each item the outcome its answer says. An answer that does
// not account for every item is an error: the push is sent again.
func (p *producer) settle(batch []*item, answers []pushAnswer) error {
	if len(answers) != len(batch) {
		return fmt.Errorf("push of %d items answered for %d", len(batch), len(answers))
	}
	byTx := make(map[string]pushAnswer, len(answers))
	for _, a := range answers {
		byTx[a.TransactionID] = a
	}
	for i, it := range batch {
		a, ok := byTx[it.txID]
		if !ok {
			a = answers[i] // answers come in input order
			if a.TransactionID != "" && a.TransactionID != it.txID {
				return fmt.Errorf("push answer %d is for transaction %q, not %q", i, a.TransactionID, it.txID)
			}
		}
		switch a.Status {
		case "queued", "pushed", "duplicate", "buffered":
		case "error", "failed":
		default:
			return fmt.Errorf("push answer %d: status %q, which Queen does not document", i, a.Status)
		}
	}
	for i, it := range batch {
		a, ok := byTx[it.txID]
		if !ok {
			a = answers[i]
		}
		switch a.Status {
		case "queued", "pushed":
			p.d.queued.Add(1)
			it.finish(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: it.part, Offset: -1}})
		case "duplicate":
			p.d.duplicate.Add(1)
			it.finish(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: it.part, Offset: -1}})
		case "buffered":
			p.d.buffered.Add(1)
			it.finish(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: it.part, Offset: -1}})
		default:
			it.finish(drivers.Outcome{Status: drivers.Rejected, Err: fmt.Errorf("Queen: %s: %v", a.Status, a.Error)})
		}
	}
	return nil
}

// Close implements drivers.Producer: no new messages; it waits for every
// outcome until ctx ends, then reports what is left Unknown.
func (p *producer) Close(ctx context.Context) error {
	p.inMu.Lock()
	if !p.closed {
		p.closed = true
		close(p.in)
	}
	p.inMu.Unlock()
	if drivers.Within(ctx, p.flights.Wait) == nil {
		return nil
	}
	p.mu.Lock()
	left := make([]*item, 0, len(p.pending))
	for it := range p.pending {
		left = append(left, it)
	}
	p.mu.Unlock()
	for _, it := range left {
		it.finish(drivers.Outcome{Status: drivers.Unknown, Err: fmt.Errorf("abandoned at close: %w", ctx.Err())})
	}
	return ctx.Err()
}
