// Package load drives an open-loop, paced load through a driver and records
// every send and outcome in the ledger.
//
// Pacing is a fixed schedule: message i (counting across all producers) is
// due at Start + i/Rate. A send that goes out late keeps its scheduled time
// as its intended time, so every latency is measured from the schedule and a
// stalled broker cannot hide its stall by slowing the load (no coordinated
// omission). A send may go up to PacingWindow (1 ms) early, so that a
// producer wakes once per window rather than once per message; it then
// takes its send time as its intended time: a latency is never measured
// from before its message went. Producer k owns the messages i with
// i mod Producers == k; an unkeyed message goes to partition
// i mod len(Partitions), which makes the round-robin exact across
// producers.
//
// In-flight sends are bounded by MaxInFlight. A send due while the bound is
// reached waits for a place, as a client library's full buffer makes a
// send wait, but no longer than ShedAfter past its scheduled time; then it
// is shed: counted, never sent, and it consumes no sequence number.
// So a stall shows up twice, as the latency of the sends caught in it and as
// sends shed, and never as a crash or a silent drop in offered rate.
package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// Config is one load. Its settings are defaulted and validated in one
// place, settings.go (Defaults, WithDefaults, CheckSettings, Validate).
type Config struct {
	RunID       uint64
	Topic       string
	Partitions  []int32       // the topic's partitions, for round-robin
	Rate        float64       // messages per second, all producers together
	Duration    time.Duration // how long sends are scheduled
	Producers   int           // 0: Defaults().Producers
	MessageSize int           // bytes per value, at least message.MinSize
	Keys        int           // > 0: spread messages over this many keys
	Placement   Placement     // unkeyed messages: round-robin (default) or batch:N (placement.go)
	MaxInFlight int           // 0: Defaults().MaxInFlight
	// ShedAfter is how long past its scheduled time a paced send waits
	// for a place under MaxInFlight before it is shed; the wait is in its
	// pacing lag and its latency. A client library blocks its caller at
	// its own buffer's bound instead, and a burst of acks late by a few
	// tens of milliseconds (a GC pause, a batch to a slow leader) then
	// costs nothing; shed at once, the same burst lost sends the bare
	// client made (bench --peer --rates). A stall longer than this still
	// sheds. 0: DefaultShedAfter; negative: shed at once.
	ShedAfter time.Duration
	// DrainTimeout bounds the wait for outstanding outcomes after the last
	// send; what is still outstanding then is recorded Unknown. 0:
	// Defaults().DrainTimeout.
	DrainTimeout time.Duration
	// OutcomeTimeout is the longest ackcheck waits for a send's outcome,
	// from the moment it handed the send to the driver; then it records
	// the outcome Unknown itself, whatever the client library does (see
	// deadline.go). Zero: no deadline of ackcheck's own.
	OutcomeTimeout time.Duration
	// Abort, when closed, ends the drain at once: every send still
	// awaiting its outcome is recorded Unknown (a second Ctrl-C).
	Abort <-chan struct{}
	// LiveRead runs a consumer during the load that records every copy it
	// reads (end-to-end latency). Default on in the CLI.
	LiveRead bool
	// StartOffsets is where the live consumer starts.
	StartOffsets drivers.Offsets
	// Start is when the schedule begins (message 0 is due then). Zero: when
	// Run is called. Set it to start other schedules (faults) in step.
	Start time.Time
	// Unpaced sends the Rate x Duration messages as fast as the in-flight
	// bound lets them go, waiting at the bound instead of shedding, each
	// timed from its actual send. It is for measuring ackcheck's own cost
	// per message (bench --peer), never for a check: a closed loop lets a
	// slow broker slow the load down and hide its stalls.
	Unpaced bool
	// ProducerBase is added to every producer number in message IDs and
	// the ledger: producer k of this load writes IDs of producer
	// ProducerBase+k. A shard of a load spread over processes (runner's
	// Shard) gets its own range, so that no two shards' IDs collide and a
	// read-back tells which shard wrote a message. Default 0.
	ProducerBase uint32

	// PacingWindow is how early a paced send may go: a producer sends
	// every message due within it and sleeps only when its next message
	// is further ahead, so that it wakes at most about once per window
	// instead of once per message (a timer and a scheduler switch each:
	// most of a paced load's own CPU). A send that goes early takes its
	// send time as its intended time, so no latency is ever measured from
	// a time before the message went; a late one keeps its scheduled
	// time. Zero: DefaultPacingWindow; negative: none (a timer per message
	// not yet due, for comparisons).
	PacingWindow time.Duration

	// TimerKick is the period of the scheduler's wake-ups in a paced load
	// (timerKickPeriod); negative: none; zero: none with a PacingWindow,
	// timerKickPeriod without one (a timer per message). For measuring
	// what the kick costs and buys only (BenchmarkPacing50k,
	// BenchmarkShardCPU): with a timer per message and no kick a paced
	// send is up to a millisecond late. With the window only the first
	// message of a wake can be late, as with the reference pacer, which
	// has no kick either.
	TimerKick time.Duration
}

// Scheduled is how many messages the schedule sends at most (Rate x
// Duration, rounded down as the producers count them).
func (c Config) Scheduled() uint64 { return uint64(c.Rate * c.Duration.Seconds()) }

// ValueCopies is how many copies of each in-flight value MemoryEstimate
// counts: a producer's value ring grows past the in-flight bound, to the
// slots it passed over (219,136 slots at the bound of 100,000 in a 1M
// bench --peer run: 2.2 copies, see valueRing), and a client keeps one more
// of what it has not yet sent or may send again (a request buffer, NATS's
// and Queen's retries). Measured: a run of 500,000-byte values held at
// its bound of 500 in flight (kfake stopped for 4 s) peaked at 564 MiB
// RSS, 2.4 x the 238 MiB in flight, against the estimate's 715 MiB.
const ValueCopies = 3

// MemoryEstimate is the memory the load's values can take at its peak:
// ValueCopies x the sends that can be in flight at once (MaxInFlight, or
// the whole schedule if that is smaller) x MessageSize. It leaves out what
// does not grow with the value (the ledger, histograms), which is small
// beside it once values are large. Callers refuse a load whose estimate
// the machine cannot hold: the kernel would kill the run halfway, leaving
// a half run directory.
func (c Config) MemoryEstimate() uint64 {
	c = c.WithDefaults()
	inFlight := min(uint64(max(c.MaxInFlight, 0)), c.Scheduled())
	size := uint64(max(c.MessageSize, 0))
	if inFlight > 0 && size > math.MaxUint64/ValueCopies/inFlight {
		return math.MaxUint64 // more than any machine: refused all the same
	}
	return ValueCopies * inFlight * size
}

// Stats are live counters, safe to read during the load.
//
// The fields are grouped by who writes them, each group on cache lines of
// its own: the sends' counters, the outcomes', the one both write, and
// the fields written once or seldom that every outcome reads. Sharing a
// line, a write on one core made the other core's next access to any of
// them wait (BenchmarkUnpacedOwnCost: 0.65 against 0.81 CPU-s per 1M
// together with ackTimeGrain and the per-producer windows).
type Stats struct {
	// Written by the sends.
	Sent, Shed atomic.Int64
	_          [64]byte
	// Written by the outcomes. Late counts answers that came after
	// ackcheck's own deadline had already recorded the send Unknown; they
	// are dropped.
	Acked, Rejected, Unknown, Late atomic.Int64
	_                              [64]byte
	// Written by both.
	InFlight atomic.Int64
	_        [64]byte
	// Written by the live read.
	LiveReads atomic.Int64
	_         [64]byte

	// Written seldom (ackTimeGrain), read by every ack.
	lastAckNanos atomic.Int64

	// partLastAck[i] is when partition i last acked (unix ns), for the
	// partitions 0..n-1 of a run; set by Run.
	partLastAck atomic.Pointer[[]atomic.Int64]

	// OnAck and OnLiveRead, when set before Run, receive each ack's
	// publish latency and each live read's end-to-end latency (live
	// metrics). They run on the driver's callback path: keep them cheap.
	OnAck, OnLiveRead func(time.Duration)

	// freed, in an unpaced load, wakes a producer waiting at the
	// in-flight bound when an outcome frees a place.
	freed chan struct{}

	// windows[k] holds producer k's acks since the last progress line.
	windows []*latencyWindow

	mu      sync.Mutex
	errors  map[string]int64
	readErr error
}

// maxTrackedPartition bounds the per-partition last-ack table.
const maxTrackedPartition = 1 << 16

// PartitionLastAck returns, for each partition of the run, when it last
// acked, to ackTimeGrain (the zero time before its first ack).
func (s *Stats) PartitionLastAck() map[int32]time.Time {
	out := map[int32]time.Time{}
	p := s.partLastAck.Load()
	if p == nil {
		return out
	}
	for i := range *p {
		out[int32(i)] = unixNanoTime(&(*p)[i])
	}
	return out
}

// TrackPartitions sizes the per-partition last-ack table for parts; Run
// calls it with the run's partitions.
func (s *Stats) TrackPartitions(parts []int32) {
	n := 0
	for _, p := range parts {
		if p >= 0 && p < maxTrackedPartition {
			n = max(n, int(p)+1)
		}
	}
	t := make([]atomic.Int64, n)
	s.partLastAck.Store(&t)
}

// ackTimeGrain is how exact LastAck and PartitionLastAck are: an ack
// within it of the time already held is not written. They feed progress
// lines and gauges in milliseconds; written on every ack, the shared
// times were a contended cache line between the producers' callbacks.
const ackTimeGrain = int64(time.Millisecond)

// LastAck is when the latest ack arrived, to ackTimeGrain (zero before
// the first).
func (s *Stats) LastAck() time.Time { return unixNanoTime(&s.lastAckNanos) }

// unixNanoTime is the time a holds in Unix nanoseconds: the zero time
// while it holds 0 (never set).
func unixNanoTime(a *atomic.Int64) time.Time {
	if n := a.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Errors returns failed outcomes counted by error text.
func (s *Stats) Errors() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errors)
}

// WindowP99 returns the publish latency p99 and count of acks since the
// previous call, for progress lines.
func (s *Stats) WindowP99() (time.Duration, int64) {
	return rotate(s.windows)
}

// Result is what the load did.
type Result struct {
	Start, End time.Time
	Errors     map[string]int64
	// Sent and Shed are how many of the schedule's sends were handed to
	// the driver and dropped at the in-flight bound; together, how far the
	// load got through its schedule (all of it unless ctx ended it).
	Sent, Shed int64
	// LiveReadErr is why the live consumer stopped early, if it did.
	LiveReadErr error
	// PacingLag is, over every send, how late ackcheck handed it to the
	// driver after its scheduled time (µs histogram): the part of every
	// reported latency that is ackcheck's own, not the broker's.
	PacingLag *hdrhistogram.Histogram
	// CallbackTime is how long ackcheck's callback ran (µs histogram,
	// one outcome in 16 that the driver gave, each producer's first
	// included): the client library calls outcomes one after another, so
	// every later ack of that producer waited this long behind it.
	CallbackTime *hdrhistogram.Histogram
	// StealPct is the share of the machine's CPU time, while the load
	// sent, that the hypervisor gave to something else (StealPct); -1
	// where it could not be read. Pacing lag and latencies include the
	// waits it caused, which are neither ackcheck's nor the broker's.
	StealPct float64
}

// Run sends the load described by cfg through d, recording into l, and
// returns when every send has an outcome (or DrainTimeout passed). stats,
// if non-nil, is updated as it goes. Cancelling ctx stops scheduling new
// sends at once; outstanding ones still drain.
func Run(ctx context.Context, cfg Config, d drivers.Driver, l *ledger.Ledger, stats *Stats) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.WithDefaults()
	if stats == nil {
		stats = &Stats{}
	}
	stats.prepare(cfg)
	producers, err := startProducers(ctx, cfg, d)
	if err != nil {
		return Result{}, err
	}

	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan error, 1)
	if cfg.LiveRead {
		go func() { liveDone <- tail(liveCtx, cfg, d, l, stats) }()
	} else {
		liveDone <- nil
	}

	res := Result{Start: cfg.Start}
	if res.Start.IsZero() {
		res.Start = time.Now()
	}
	snd := &sender{pubCtx: context.WithoutCancel(ctx), cfg: cfg, start: res.Start, startNs: res.Start.UnixNano(), l: l, stats: stats, enc: message.NewEncoder(cfg.MessageSize)}
	states, fls := newProducerStates(cfg, d, producers)
	sweepStop, sweepDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sweepDone)
		sweep(cfg, fls, l, stats, sweepStop)
	}()
	kickCtx, stopKick := context.WithCancel(ctx)
	kickStopped := startTimerKick(kickCtx, cfg.timerKick())
	cpu0, cpuOK := ReadCPUTimes()
	var ledgerErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for _, ps := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := snd.produce(ctx, ps); err != nil {
				ledgerErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	res.StealPct = stealSince(cpu0, cpuOK)
	stopKick()
	<-kickStopped
	res.PacingLag = latency.New(3)
	for _, ps := range states {
		res.PacingLag.Merge(ps.lag)
	}

	drainProducers(ctx, cfg, producers)
	close(sweepStop)
	<-sweepDone
	res.End = time.Now()
	// Let the live consumer catch up with the last acks, briefly.
	if cfg.LiveRead {
		time.Sleep(min(time.Second, cfg.Duration/10))
	}
	stopLive()
	if err := <-liveDone; err != nil && !errors.Is(err, context.Canceled) {
		res.LiveReadErr = err
	}
	res.CallbackTime = callbackTimes(states)
	res.Errors = stats.Errors()
	res.Sent, res.Shed = stats.Sent.Load(), stats.Shed.Load()
	if p := ledgerErr.Load(); p != nil {
		return res, *p
	}
	return res, nil
}

// prepare readies s for a run of cfg: its error counts, a latency window
// per producer, a last-ack slot per partition, and, unpaced, the channel
// that wakes a producer waiting for a place.
func (s *Stats) prepare(cfg Config) {
	s.errors = make(map[string]int64)
	s.windows = make([]*latencyWindow, cfg.Producers)
	for k := range s.windows {
		s.windows[k] = newLatencyWindow()
	}
	s.TrackPartitions(cfg.Partitions)
	if cfg.Unpaced {
		s.freed = make(chan struct{}, 1)
	}
}

// startProducers opens cfg.Producers producers on d, numbered from
// cfg.ProducerBase. When one fails, those already open are closed.
func startProducers(ctx context.Context, cfg Config, d drivers.Driver) ([]drivers.Producer, error) {
	producers := make([]drivers.Producer, cfg.Producers)
	for k := range producers {
		p, err := d.NewProducer(ctx, cfg.Topic, cfg.ProducerBase+uint32(k))
		if err != nil {
			for _, q := range producers[:k] {
				q.Close(context.Background())
			}
			return nil, fmt.Errorf("start producer %d: %w", k, err)
		}
		producers[k] = p
	}
	return producers, nil
}

// newProducerStates is each producer's state, and its flights (the
// sweep's view of the same), with value buffers to reuse when d allows
// it (drivers.ValueReuser).
func newProducerStates(cfg Config, d drivers.Driver, producers []drivers.Producer) ([]*producerState, []*flights) {
	_, reuse := d.(drivers.ValueReuser)
	states := make([]*producerState, len(producers))
	fls := make([]*flights, len(producers))
	for k, p := range producers {
		fls[k] = &flights{}
		states[k] = &producerState{k: uint32(k), p: p, fl: fls[k], lag: latency.New(3), cb: &callbackClock{h: latency.New(3)}}
		if reuse {
			states[k].values = newValueRing(cfg.MessageSize)
		}
	}
	return states, fls
}

// timerKick is the timer kick's period for cfg (0: none): TimerKick when
// set; with a timer per message (a negative PacingWindow),
// timerKickPeriod, so that each fires on time; none for an unpaced load,
// where nothing sleeps to a schedule.
func (cfg Config) timerKick() time.Duration {
	if cfg.Unpaced {
		return 0
	}
	if cfg.TimerKick == 0 && cfg.PacingWindow < 0 {
		return timerKickPeriod
	}
	return cfg.TimerKick
}

// stealSince is StealPct from cpu0 (read when ok) to now; -1 when either
// reading is missing.
func stealSince(cpu0 CPUTimes, ok bool) float64 {
	if cpu1, ok1 := ReadCPUTimes(); ok && ok1 {
		if pct, ok := StealPct(cpu0, cpu1); ok {
			return pct
		}
	}
	return -1
}

// callbackTimes merges every producer's callback clock.
func callbackTimes(states []*producerState) *hdrhistogram.Histogram {
	h := latency.New(3)
	for _, ps := range states {
		ps.cb.mu.Lock()
		h.Merge(ps.cb.h)
		ps.cb.mu.Unlock()
	}
	return h
}

// drainProducers waits until every send has its outcome, or Unknown at
// the deadline: the driver's, ackcheck's own (OutcomeTimeout), or at once
// on Abort. A client library may not return from Close when asked to (a
// broker holding its connection): ackcheck waits for it until the drain's
// deadline and no longer; the sweep then records what is left.
func drainProducers(ctx context.Context, cfg Config, producers []drivers.Producer) {
	drain := cfg.DrainTimeout
	if cfg.OutcomeTimeout > 0 {
		drain = min(drain, cfg.OutcomeTimeout+2*sweepEvery)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	go func() {
		select {
		case <-cfg.Abort:
			cancel()
		case <-dctx.Done():
		}
	}()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for _, p := range producers {
			p.Close(dctx)
		}
	}()
	select {
	case <-closed:
	case <-dctx.Done():
		select {
		case <-closed:
		case <-time.After(2 * sweepEvery):
		}
	}
}

// sender is what every producer of one load shares.
type sender struct {
	// pubCtx is the publishes' context: the load's, without its
	// cancellation (a send handed over is answered, interrupt or not).
	pubCtx context.Context
	cfg    Config
	start  time.Time
	// startNs is start in Unix ns: the hot path keeps times as Unix ns,
	// not time.Time, whose arithmetic was a fifth of ackcheck's own CPU
	// per message (BenchmarkUnpacedOwnCost's profile).
	startNs int64
	l       *ledger.Ledger
	stats   *Stats
	enc     *message.Encoder
}

// now is the time as the load's clock gives it, in Unix ns: Start plus
// the monotonic time since, the frame the schedule's intended times are
// in. It reads only the monotonic clock: time.Now reads the wall clock as
// well, 75 ns against 35 here, and the load reads the clock twice per
// message (the send and its outcome). A step of the wall clock during the
// run does not move it; its drift from the wall clock is the monotonic
// clock's (parts per million).
func (s *sender) now() int64 { return s.startNs + int64(time.Since(s.start)) }

// DefaultPacingWindow is Config.PacingWindow's default. At 50,000 msg/s
// from 4 producers a producer's next message is 80 µs ahead: a timer per
// message woke each producer 12,500 times a second. With the window it
// wakes about once per millisecond and sends some 12 messages, the first
// up to a wake-up's lateness late and the rest early: the precision of the
// cheapest bare pacer (drivers.PaceWindow), the reference bench --peer
// measures ackcheck against.
const DefaultPacingWindow = time.Millisecond

// producerState is one producer of the load and what it measures.
type producerState struct {
	k  uint32
	p  drivers.Producer
	fl *flights
	// lag receives, per send, how late it was handed to the driver.
	lag *hdrhistogram.Histogram
	cb  *callbackClock
	// values, when not nil, holds value buffers to reuse: the driver keeps
	// no reference to a value once it has called done (drivers.ValueReuser).
	values *valueRing
}

// produce runs producer ps's share of the schedule.
func (s *sender) produce(ctx context.Context, ps *producerState) error {
	cfg := s.cfg
	P := uint64(cfg.Producers)
	nparts := uint64(len(cfg.Partitions))
	interval := float64(time.Second) / cfg.Rate
	total := uint64(cfg.Rate * cfg.Duration.Seconds())
	window := int64(cmp.Or(cfg.PacingWindow, DefaultPacingWindow))
	shedAfter := int64(max(cmp.Or(cfg.ShedAfter, DefaultShedAfter), 0))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var seq uint64
	var keyBuf []byte
	for i := uint64(ps.k); i < total; i += P {
		if cfg.Unpaced && !s.waitForPlace(ctx) {
			return nil
		}
		// One clock read per send where it can be: at 1 KiB a read costs
		// about a tenth of the bare client's CPU per message.
		intended := s.startNs + int64(float64(i)*interval)
		sentAt := s.now()
		if cfg.Unpaced {
			intended = sentAt
		} else if ahead := intended - sentAt; ahead > max(window, 0) {
			// Sleep to its time; the messages due within the window
			// after it go with it when it wakes.
			timer.Reset(time.Duration(ahead))
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
			sentAt = s.now()
		} else if ctx.Err() != nil {
			return nil
		}
		// Early (within the window): timed from its send, never from a
		// time before it went.
		intended = min(intended, sentAt)
		if !cfg.Unpaced && s.stats.InFlight.Add(1) > int64(cfg.MaxInFlight) {
			s.stats.InFlight.Add(-1)
			if !s.waitForPlaceUntil(ctx, intended+shedAfter) {
				s.stats.Shed.Add(1)
				continue
			}
			sentAt = s.now() // the wait is in its lag
		}
		id := message.ID{Run: cfg.RunID, Producer: cfg.ProducerBase + ps.k, Seq: seq}
		seq++
		var buf []byte
		var inFlight *atomic.Bool
		if ps.values != nil {
			buf, inFlight = ps.values.get()
		}
		m := drivers.Message{
			Value:     s.enc.Encode(buf, id, intended),
			Partition: cfg.Partitions[cfg.Placement.partition(i, P, nparts)],
			SentAt:    time.Unix(0, sentAt),
		}
		if cfg.Keys > 0 {
			keyBuf = message.Key(keyBuf, id, cfg.Keys)
			m.Key = append([]byte(nil), keyBuf...)
			m.Partition = -1
		}
		if err := s.send(ps, id, m, intended, sentAt, inFlight); err != nil {
			return err
		}
	}
	return nil
}

// DefaultShedAfter is Config.ShedAfter's default.
const DefaultShedAfter = 100 * time.Millisecond

// shedPoll is how often a paced send waiting at the bound looks for a
// place: the wait is rare (the bound reached), and an outcome does not
// signal it, which would cost every outcome of a paced load a channel send.
const shedPoll = time.Millisecond

// waitForPlaceUntil takes a place in flight for a paced send, waiting at
// the bound until deadline (Unix ns, the load's clock). It is false when
// the deadline passed or ctx ended without a place.
func (s *sender) waitForPlaceUntil(ctx context.Context, deadline int64) bool {
	for {
		left := time.Duration(deadline - s.now())
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		time.Sleep(min(left, shedPoll))
		if s.stats.InFlight.Add(1) <= int64(s.cfg.MaxInFlight) {
			return true
		}
		s.stats.InFlight.Add(-1)
	}
}

// waitForPlace takes a place in flight for an unpaced load, waiting at
// the bound for an outcome to free one. It is false when ctx ended.
func (s *sender) waitForPlace(ctx context.Context) bool {
	for s.stats.InFlight.Add(1) > int64(s.cfg.MaxInFlight) {
		s.stats.InFlight.Add(-1)
		select {
		case <-ctx.Done():
			return false
		case <-s.stats.freed:
		case <-time.After(10 * time.Millisecond): // a wake-up taken by another producer
		}
	}
	return true
}

// send records m's send, hands it to the driver, and records its outcome
// when the driver gives it. The send is recorded before the publish, so
// an outcome can never be committed without its send (see the ledger
// package doc). valueInFlight, when not nil, is the flag of m.Value's slot
// in the producer's valueRing, cleared once the driver is done with it.
func (s *sender) send(ps *producerState, id message.ID, m drivers.Message, intended, sentAt int64, valueInFlight *atomic.Bool) error {
	if err := s.l.Record(ledger.Send, ledger.Event{Producer: id.Producer, Seq: id.Seq, Time: intended, Partition: m.Partition}); err != nil {
		s.stats.InFlight.Add(-1)
		if valueInFlight != nil {
			valueInFlight.Store(false)
		}
		return fmt.Errorf("ledger failed, stopping the load: %w", err)
	}
	s.stats.Sent.Add(1)
	latency.Record(ps.lag, time.Duration(sentAt-intended))
	var f *flight
	if s.cfg.OutcomeTimeout > 0 {
		f = ps.fl.add(id.Seq, intended, sentAt)
	}
	ps.p.Publish(s.pubCtx, m, func(o drivers.Outcome) {
		if valueInFlight != nil {
			// The driver is done with the value (ValueReuser): its slot
			// is free again. It is not read here: the ledger keeps IDs,
			// not values.
			defer valueInFlight.Store(false)
		}
		if f != nil && !f.claim(flightAnswered) {
			s.stats.Late.Add(1) // ackcheck's deadline recorded it Unknown
			return
		}
		now := s.now()
		timed := ps.cb.sample()
		recordOutcome(s.l, s.stats, ps.k, id.Producer, id.Seq, intended, now, o)
		if timed {
			ps.cb.record(time.Duration(s.now() - now))
		}
	})
	return nil
}

// callbackClock times one producer's outcome callbacks, one in
// callbackSample (a clock read per ack is a cost of its own). The mutex
// is uncontended but for the read at the end: a client library calls one
// producer's outcomes one at a time.
type callbackClock struct {
	n  atomic.Uint64
	mu sync.Mutex
	h  *hdrhistogram.Histogram
	// Each producer's clock is allocated on its own, and n, written per
	// outcome, shared a cache line with another producer's.
	_ [64]byte
}

// callbackSample: every callbackSample-th outcome is timed.
const callbackSample = 16

func (c *callbackClock) sample() bool { return c.n.Add(1)%callbackSample == 1 }

func (c *callbackClock) record(d time.Duration) {
	c.mu.Lock()
	latency.Record(c.h, d)
	c.mu.Unlock()
}

// sweep records Unknown, every sweepEvery, for each send still unanswered
// OutcomeTimeout after it was sent, until stop closes; then, and at once
// on Abort, for every send still unanswered.
func sweep(cfg Config, fls []*flights, l *ledger.Ledger, stats *Stats, stop <-chan struct{}) {
	if cfg.OutcomeTimeout <= 0 {
		<-stop
		return
	}
	reason := fmt.Errorf("no outcome within %s of the send: ackcheck's own deadline (the client library had not answered)", cfg.OutcomeTimeout)
	aborted := fmt.Errorf("no outcome yet when the run was stopped (second interrupt)")
	expire := func(cutoff int64, why error) {
		now := time.Now().UnixNano()
		for k, fl := range fls {
			fl.expire(cutoff, func(f *flight) {
				recordOutcome(l, stats, uint32(k), cfg.ProducerBase+uint32(k), f.seq, f.intended, now, drivers.Outcome{Status: drivers.Unknown, Err: why})
			})
		}
	}
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			expire(time.Now().Add(-cfg.OutcomeTimeout).UnixNano(), reason)
			return
		case <-cfg.Abort:
			expire(math.MaxInt64, aborted)
			<-stop
			return
		case now := <-tick.C:
			expire(now.Add(-cfg.OutcomeTimeout).UnixNano(), reason)
		}
	}
}

// recordOutcome records send (k, seq)'s outcome o, which came at now, and
// counts it: the one place an outcome is recorded, whether the driver gave
// it or ackcheck's own deadline did (sweep).
// intended and now are Unix ns.
func recordOutcome(l *ledger.Ledger, stats *Stats, k, producer uint32, seq uint64, intended, now int64, o drivers.Outcome) {
	lat := time.Duration(now - intended)
	e := ledger.Event{Producer: producer, Seq: seq, Time: int64(lat), Partition: o.Pos.Partition, Offset: o.Pos.Offset}
	switch o.Status {
	case drivers.Acked:
		e.Status = ledger.OutcomeAcked
		stats.Acked.Add(1)
		for {
			last := stats.lastAckNanos.Load()
			if now < last+ackTimeGrain || stats.lastAckNanos.CompareAndSwap(last, now) {
				break
			}
		}
		if t := stats.partLastAck.Load(); t != nil && o.Pos.Partition >= 0 && int(o.Pos.Partition) < len(*t) {
			if pl := &(*t)[o.Pos.Partition]; now >= pl.Load()+ackTimeGrain {
				pl.Store(now)
			}
		}
		stats.windows[k].record(lat) // Run made one per producer
		if stats.OnAck != nil {
			stats.OnAck(lat)
		}
	case drivers.Rejected:
		e.Status = ledger.OutcomeRejected
		e.Partition, e.Offset = -1, -1
		stats.Rejected.Add(1)
		stats.countError(o.Err)
	default:
		e.Status = ledger.OutcomeUnknown
		e.Partition, e.Offset = -1, -1
		stats.Unknown.Add(1)
		stats.countError(o.Err)
	}
	l.Record(ledger.Outcome, e) // a failure surfaces at the next send's Record
	stats.InFlight.Add(-1)
	// A full channel already wakes a waiter: its length, read without
	// the channel's lock, spares every other outcome taking it.
	if stats.freed != nil && len(stats.freed) == 0 {
		select {
		case stats.freed <- struct{}{}:
		default:
		}
	}
}

func (s *Stats) countError(err error) {
	text := "unknown error"
	if err != nil {
		text = err.Error()
	}
	if len(text) > 200 {
		text = text[:200]
	}
	s.mu.Lock()
	s.errors[text]++
	s.mu.Unlock()
}

// tail reads the topic while the load runs and records each copy of this
// run's messages as a LiveRead with its end-to-end latency.
func tail(ctx context.Context, cfg Config, d drivers.Driver, l *ledger.Ledger, stats *Stats) error {
	_, err := d.Read(ctx, drivers.ReadSpec{Topic: cfg.Topic, From: cfg.StartOffsets}, func(r drivers.Record) error {
		now := time.Now()
		dm := message.Decode(r.Value, cfg.RunID)
		if r.Damaged || dm.Status != message.Valid || dm.ID.Run != cfg.RunID {
			return nil // the read-back classifies these
		}
		if p := dm.ID.Producer; p < cfg.ProducerBase || p-cfg.ProducerBase >= uint32(cfg.Producers) {
			// Another shard's message: that shard records it. A shard's
			// ledger holds only its own producers, which is what lets a
			// merged verify chain the shards' sorted streams.
			return nil
		}
		stats.LiveReads.Add(1)
		if stats.OnLiveRead != nil {
			stats.OnLiveRead(now.Sub(dm.Intended))
		}
		return l.Record(ledger.LiveRead, ledger.Event{
			Producer: dm.ID.Producer, Seq: dm.ID.Seq, Time: int64(now.Sub(dm.Intended)),
			Partition: r.Pos.Partition, Offset: r.Pos.Offset,
		})
	})
	return err
}
