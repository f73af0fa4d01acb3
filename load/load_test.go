package load

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// stallDriver acks every publish after 1 ms, except while stalled: then it
// holds every answer until the stall ends, as a broker electing a leader
// would.
type stallDriver struct {
	drivers.Driver // unused methods panic: the load only needs producers
	mu             sync.Mutex
	stallUntil     time.Time
	offset         atomic.Int64
	// inFlight counts publishes not yet answered; peak is its highest.
	inFlight, peak atomic.Int64
}

func (d *stallDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return &stallProducer{d: d}, nil
}

type stallProducer struct {
	d  *stallDriver
	wg sync.WaitGroup
}

func (p *stallProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.wg.Add(1)
	if n := p.d.inFlight.Add(1); n > p.d.peak.Load() {
		p.d.peak.Store(n) // racy max: good enough for a bound of 50
	}
	p.d.mu.Lock()
	wait := max(time.Until(p.d.stallUntil), time.Millisecond)
	p.d.mu.Unlock()
	time.AfterFunc(wait, func() {
		p.d.inFlight.Add(-1)
		done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition, Offset: p.d.offset.Add(1)}})
		p.wg.Done()
	})
}

func (p *stallProducer) Close(context.Context) error { p.wg.Wait(); return nil }

func TestStallShowsAsLatencyAndShedNotLowerRate(t *testing.T) {
	d := &stallDriver{}
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := Config{RunID: 1, Topic: "t", Partitions: []int32{0, 1, 2}, Rate: 1000, Duration: 2 * time.Second,
		Producers: 3, MessageSize: 100, MaxInFlight: 300}
	go func() {
		time.Sleep(500 * time.Millisecond)
		d.mu.Lock()
		d.stallUntil = time.Now().Add(time.Second)
		d.mu.Unlock()
	}()
	stats := &Stats{}
	res, err := Run(context.Background(), cfg, d, l, stats)
	if err != nil {
		t.Fatal(err)
	}
	sent, shed, acked := stats.Sent.Load(), stats.Shed.Load(), stats.Acked.Load()
	t.Logf("sent %d shed %d acked %d in %s", sent, shed, acked, res.End.Sub(res.Start))
	if sent+shed != 2000 {
		t.Fatalf("sent %d + shed %d = %d: the offered rate dropped below the 2000 scheduled", sent, shed, sent+shed)
	}
	if shed < 500 || acked != sent || res.Shed != shed {
		t.Fatalf("shed %d (want about 700), acked %d of %d sent", shed, acked, sent)
	}
	// The sends caught in the stall carry it as latency, from their
	// scheduled time.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	var maxLat time.Duration
	n, _ := l.Count(context.Background(), ledger.Outcome, func(e ledger.Event) bool {
		maxLat = max(maxLat, time.Duration(e.Time))
		return true
	})
	if n != acked || maxLat < 900*time.Millisecond {
		t.Fatalf("%d outcomes recorded, max latency %s: the stall is missing", n, maxLat)
	}
}

// Intended send times follow the schedule: producer k's j-th message is
// global message j*P+k, due at start + (j*P+k)/rate, and goes round-robin
// to partition (j*P+k) mod partitions. A send within the pacing window
// before its time goes early and is timed from its send: its intended
// time is never after its due time nor more than the window before it.
func TestScheduleIsExact(t *testing.T) {
	d := &stallDriver{}
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := Config{RunID: 1, Topic: "t", Partitions: []int32{0, 1, 2, 3, 4}, Rate: 2000, Duration: time.Second, Producers: 3, MessageSize: 64}
	res, err := Run(context.Background(), cfg, d, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Flush()
	c, _ := l.Scan(ledger.Send)
	defer c.Close()
	n, onTime := 0, 0
	for {
		e, ok := c.Next()
		if !ok {
			break
		}
		n++
		i := int64(e.Seq)*3 + int64(e.Producer)
		want := res.Start.Add(time.Duration(i) * time.Second / 2000).UnixNano()
		if d := e.Time - want; d < -int64(DefaultPacingWindow)-1000 || d > 1000 {
			t.Fatalf("message %d intended at %d, want %d, or up to %s earlier", i, e.Time, want, DefaultPacingWindow)
		}
		if e.Time == want {
			onTime++
		}
		if e.Partition != int32(i%5) {
			t.Fatalf("message %d to partition %d, want %d", i, e.Partition, i%5)
		}
	}
	if n != 2000 {
		t.Fatalf("%d sends, want 2000", n)
	}
	// At 2,000 msg/s a message is due every 500 µs: a producer sleeps to
	// one and sends the next within the window early, so some go at
	// their time exactly.
	if onTime == 0 {
		t.Fatalf("no send intended at its scheduled time: every one went early")
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Partitions: []int32{0}, Rate: 1, Duration: time.Second, MessageSize: 64}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*Config){
		"rate":       func(c *Config) { c.Rate = 0 },
		"duration":   func(c *Config) { c.Duration = 0 },
		"size":       func(c *Config) { c.MessageSize = 10 },
		"producers":  func(c *Config) { c.Producers = -1 },
		"keys":       func(c *Config) { c.Keys = -1 },
		"partitions": func(c *Config) { c.Partitions = nil },
		"too many":   func(c *Config) { c.Rate = 1e9; c.Duration = time.Hour },
		// --rate 1e-9 once created the topic and the run directory and then
		// failed "nothing was sent".
		"less than one message": func(c *Config) { c.Rate = 1e-9 },
		"0.99 messages":         func(c *Config) { c.Rate = 0.99 },
	}
	for name, mut := range tests {
		c := ok
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// MemoryEstimate counts ValueCopies values per send that can be in flight:
// the in-flight bound, or the whole schedule when it is shorter.
func TestMemoryEstimate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want uint64
	}{
		{"bound below the schedule", Config{Rate: 1000, Duration: time.Minute, MessageSize: 1024, MaxInFlight: 100}, ValueCopies * 100 * 1024},
		{"default bound", Config{Rate: 1e6, Duration: time.Minute, MessageSize: 1024}, ValueCopies * 100_000 * 1024},
		{"schedule below the bound", Config{Rate: 10, Duration: time.Second, MessageSize: 1 << 20}, ValueCopies * 10 << 20},
		{"2 GiB values", Config{Rate: 1000, Duration: time.Minute, MessageSize: 1 << 31}, ValueCopies * 60_000 << 31},
		{"saturates", Config{Rate: 1e6, Duration: time.Hour, MessageSize: math.MaxInt, MaxInFlight: math.MaxInt}, math.MaxUint64},
		// Nothing scheduled: nothing in flight, and no division by it.
		{"empty schedule", Config{Rate: 0, Duration: time.Minute, MessageSize: 1024}, 0},
		// The largest size whose product still fits is counted exactly,
		// not saturated: the guard trips only on a real overflow.
		{"largest exact", Config{Rate: 2, Duration: time.Second, MessageSize: math.MaxUint64 / ValueCopies / 2, MaxInFlight: 2}, ValueCopies * 2 * (math.MaxUint64 / ValueCopies / 2)},
	} {
		if got := tc.c.MemoryEstimate(); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}

// Issue 12's probe: a broker that holds every answer (SIGSTOP) for longer
// than the delivery deadline. ackcheck records each send Unknown at its own
// deadline, exactly once, and the drain ends with it, not 60 s later; the
// answers that come after are counted late and dropped. A clean run with
// the same deadline records every ack.
func TestOutcomeDeadlineEnforcedByAckcheck(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stall          time.Duration
		acked, unknown int64
	}{
		{"broker holds every answer", 3 * time.Second, 0, 100},
		{"broker answers in time", 0, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &stallDriver{stallUntil: time.Now().Add(tc.stall)}
			l, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cfg := Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 500 * time.Millisecond,
				Producers: 2, MessageSize: 100, OutcomeTimeout: 400 * time.Millisecond}
			stats := &Stats{}
			start := time.Now()
			res, err := Run(context.Background(), cfg, d, l, stats)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if stats.Acked.Load() != tc.acked || stats.Unknown.Load() != tc.unknown || stats.InFlight.Load() != 0 {
				t.Fatalf("acked %d, unknown %d, in flight %d; want %d acked, %d unknown", stats.Acked.Load(), stats.Unknown.Load(), stats.InFlight.Load(), tc.acked, tc.unknown)
			}
			if tc.stall > 0 {
				if took > 2*time.Second {
					t.Fatalf("the load took %s: the drain waited for the broker, not for ackcheck's 400 ms deadline", took)
				}
				if len(res.Errors) != 1 {
					t.Fatalf("errors %v", res.Errors)
				}
			}
			l.Flush()
			n, _ := l.Count(context.Background(), ledger.Outcome, nil)
			if n != 100 {
				t.Fatalf("%d outcomes recorded for 100 sends: exactly one each", n)
			}
			if tc.stall > 0 {
				time.Sleep(tc.stall) // the held answers arrive now
				if late := stats.Late.Load(); late != 100 {
					t.Fatalf("%d late answers counted, want 100", late)
				}
				l.Flush()
				if n, _ := l.Count(context.Background(), ledger.Outcome, nil); n != 100 {
					t.Fatalf("a late answer was recorded: %d outcomes", n)
				}
			}
		})
	}
}

// A second interrupt (Abort) ends the drain at once and records every
// outstanding send Unknown.
func TestAbortEndsDrain(t *testing.T) {
	d := &stallDriver{stallUntil: time.Now().Add(5 * time.Second)}
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	abort := make(chan struct{})
	cfg := Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 300 * time.Millisecond,
		Producers: 1, MessageSize: 100, OutcomeTimeout: time.Minute, Abort: abort}
	time.AfterFunc(600*time.Millisecond, func() { close(abort) })
	stats := &Stats{}
	start := time.Now()
	if _, err := Run(context.Background(), cfg, d, l, stats); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second || stats.Unknown.Load() != 60 || stats.InFlight.Load() != 0 {
		t.Fatalf("took %s, unknown %d of 60, in flight %d", took, stats.Unknown.Load(), stats.InFlight.Load())
	}
}

// Every send's pacing lag is recorded: ackcheck's own share of the
// latencies it reports.
func TestPacingLagRecorded(t *testing.T) {
	d := &stallDriver{}
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stats := &Stats{}
	res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 500, Duration: 500 * time.Millisecond,
		Producers: 2, MessageSize: 100}, d, l, stats)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacingLag == nil || res.PacingLag.TotalCount() != stats.Sent.Load() || stats.Sent.Load() != 250 {
		t.Fatalf("pacing lag of %v sends recorded for %d sent", res.PacingLag.TotalCount(), stats.Sent.Load())
	}
	t.Logf("pacing lag p50 %d µs, p99 %d µs, max %d µs", res.PacingLag.ValueAtQuantile(50), res.PacingLag.ValueAtQuantile(99), res.PacingLag.Max())
}

// slowDriver's Publish blocks its caller for 20 ms, as a client without an
// asynchronous send would: the pacer falls behind its schedule.
type slowDriver struct{ stallDriver }

func (d *slowDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return slowProducer{&stallProducer{d: &d.stallDriver}}, nil
}

type slowProducer struct{ *stallProducer }

func (p slowProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	time.Sleep(20 * time.Millisecond)
	p.stallProducer.Publish(ctx, m, done)
}

// The pacing lag fires when ackcheck itself falls behind: 100 sends due
// 5 ms apart through a Publish that takes 20 ms end about 1.5 s late.
func TestPacingLagFiresWhenThePacerFallsBehind(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 500 * time.Millisecond,
		Producers: 1, MessageSize: 100}, &slowDriver{}, l, &Stats{})
	if err != nil {
		t.Fatal(err)
	}
	if max := time.Duration(res.PacingLag.Max()) * time.Microsecond; max < time.Second {
		t.Fatalf("pacing lag max %s: a pacer 15 ms behind per send for 100 sends was not seen", max)
	}
}

// Unpaced (bench --peer only) sends every message, never sheds, and
// waits at the in-flight bound instead: 2000 messages through a broker
// that holds every answer for 100 ms, at most 50 in flight.
func TestUnpacedWaitsAtTheBound(t *testing.T) {
	d := &stallDriver{}
	d.stallUntil = time.Now().Add(100 * time.Millisecond)
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stats := &Stats{}
	_, err = Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0, 1}, Rate: 2000, Duration: time.Second,
		Producers: 2, MessageSize: 100, MaxInFlight: 50, Unpaced: true}, d, l, stats)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sent.Load() != 2000 || stats.Acked.Load() != 2000 || stats.Shed.Load() != 0 {
		t.Fatalf("sent %d acked %d shed %d, want 2000, 2000, 0", stats.Sent.Load(), stats.Acked.Load(), stats.Shed.Load())
	}
	if p := d.peak.Load(); p > 50 || p < 40 {
		t.Fatalf("the driver had at most %d publishes unanswered, want the bound, 50", p)
	}
}

// ackcheck's own callback time is recorded for one outcome in 16 the
// driver gave, and shows a slow callback: an OnAck hook that takes 2 ms.
func TestCallbackTimeRecorded(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stats := &Stats{OnAck: func(time.Duration) { time.Sleep(2 * time.Millisecond) }}
	res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 500 * time.Millisecond,
		Producers: 2, MessageSize: 100}, &stallDriver{}, l, stats)
	if err != nil {
		t.Fatal(err)
	}
	// 50 outcomes per producer, one in 16 timed from the first: 4 each.
	if res.CallbackTime == nil || res.CallbackTime.TotalCount() != 8 {
		t.Fatalf("callback time of %v outcomes, want 8 (one in 16 of 100, per producer)", res.CallbackTime.TotalCount())
	}
	if p50 := time.Duration(res.CallbackTime.ValueAtQuantile(50)) * time.Microsecond; p50 < 2*time.Millisecond {
		t.Fatalf("callback p50 %s with a 2 ms hook in it", p50)
	}
}

// The timer kick stops when its context ends, and gives its timerfd back.
func TestTimerKickStops(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	before := fds()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := startTimerKick(ctx, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the timer kick did not stop within 5 s of its context's end")
	}
	if after := fds(); after != before {
		t.Fatalf("%d open descriptors after the kick stopped, %d before", after, before)
	}
	select {
	case <-startTimerKick(context.Background(), 0):
	default:
		t.Fatal("a period of 0 started a kick")
	}
}

// The load's clock (sender.now) reads the wall clock's time, from Start
// plus the monotonic clock, and still does when Start carries no
// monotonic reading (then time.Since reads the wall clock).
func TestLoadClockIsTheWallClock(t *testing.T) {
	for _, start := range []time.Time{time.Now(), time.Now().Round(0)} {
		s := &sender{start: start, startNs: start.UnixNano()}
		time.Sleep(20 * time.Millisecond)
		before := time.Now()
		got := s.now()
		after := time.Now()
		// UnixNano: compare the wall clock's readings, not the monotonic.
		if got < before.Add(-2*time.Millisecond).UnixNano() || got > after.Add(2*time.Millisecond).UnixNano() {
			t.Errorf("start %v: the load's clock says %v, the wall clock %v to %v", start, time.Unix(0, got), before, after)
		}
		if d := time.Duration(got - start.UnixNano()); d < 20*time.Millisecond {
			t.Errorf("start %v: %v since the start, after a sleep of 20ms", start, d)
		}
	}
}

// lastAckDriver acks at once, noting when it acked last, per partition
// and overall: the account LastAck and PartitionLastAck are checked
// against.
type lastAckDriver struct {
	ackDriver
	mu     sync.Mutex
	last   time.Time
	byPart map[int32]time.Time
}

func (d *lastAckDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return lastAckProducer{d}, nil
}

type lastAckProducer struct{ d *lastAckDriver }

func (p lastAckProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.d.mu.Lock()
	p.d.last = time.Now()
	p.d.byPart[m.Partition] = p.d.last
	p.d.mu.Unlock()
	done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition}})
}

func (lastAckProducer) Close(context.Context) error { return nil }

// The progress line's figures, kept per producer and written only when
// they move by ackTimeGrain: the window counts every producer's acks
// once, and the last-ack times are the driver's own to within the grain.
func TestProgressFiguresFromEveryProducer(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &lastAckDriver{byPart: map[int32]time.Time{}}
	stats := &Stats{}
	parts := []int32{0, 1, 2, 3, 4}
	if _, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: parts, Rate: 4000, Duration: 500 * time.Millisecond,
		Producers: 3, MessageSize: 100}, d, l, stats); err != nil {
		t.Fatal(err)
	}
	if _, n := stats.WindowP99(); n != stats.Acked.Load() || n != 2000 {
		t.Errorf("the window holds %d acks, %d were acked of 2000 sent", n, stats.Acked.Load())
	}
	if _, n := stats.WindowP99(); n != 0 {
		t.Errorf("the window holds %d acks after it was read", n)
	}
	near := func(what string, got, want time.Time) {
		// Progress lines and gauges give milliseconds: ackcheck's time
		// may be older than the driver's by the grain, 1 ms, and not by
		// more than 3 ms. It is later by the time from the driver's
		// clock read to ackcheck's, longer when the goroutine is
		// preempted between them.
		if d := got.Sub(want); d < -3*time.Millisecond || d > 100*time.Millisecond {
			t.Errorf("%s: ackcheck says %v, the driver acked last at %v (%v apart)", what, got.Format(time.StampMicro), want.Format(time.StampMicro), d)
		}
	}
	near("last ack", stats.LastAck(), d.last)
	got := stats.PartitionLastAck()
	for _, p := range parts {
		near(fmt.Sprintf("partition %d", p), got[p], d.byPart[p])
	}
}

// timingDriver acks at once and keeps, per send, when it was handed over
// and the intended time its value carries.
type timingDriver struct {
	drivers.Driver
	mu    sync.Mutex
	sends []timedSend
}

type timedSend struct {
	id             message.ID
	handed, intent time.Time
}

func (d *timingDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return timingProducer{d}, nil
}

type timingProducer struct{ d *timingDriver }

func (p timingProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	now := time.Now()
	dm := message.Decode(m.Value, 1)
	p.d.mu.Lock()
	p.d.sends = append(p.d.sends, timedSend{id: dm.ID, handed: now, intent: dm.Intended})
	p.d.mu.Unlock()
	done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition}})
}

func (timingProducer) Close(context.Context) error { return nil }

// The pacing window: with it, sends go up to the window before their
// time, and each such send carries its send time as its intended time, so
// that no latency is measured from before its message went; without it
// (PacingWindow < 0) none goes early. Every intended time is at most the
// window before the schedule's and never after the send.
func TestPacingWindowSendsEarlyAndTimesFromTheSend(t *testing.T) {
	for _, c := range []struct {
		name      string
		window    time.Duration
		wantEarly bool
	}{{"window", 0, true}, {"none", -1, false}} {
		t.Run(c.name, func(t *testing.T) {
			d := &timingDriver{}
			l, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			const rate, producers = 4000, 2
			res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: rate, Duration: 500 * time.Millisecond,
				Producers: producers, MessageSize: 64, PacingWindow: c.window}, d, l, nil)
			if err != nil {
				t.Fatal(err)
			}
			early := 0
			for _, s := range d.sends {
				due := res.Start.Add(time.Duration(int64(s.id.Seq)*producers+int64(s.id.Producer)) * time.Second / rate)
				if s.intent.After(s.handed) {
					t.Fatalf("send %+v intended at %s, after it was handed over at %s", s.id, s.intent, s.handed)
				}
				if s.intent.Before(due.Add(-DefaultPacingWindow - time.Microsecond)) {
					t.Fatalf("send %+v intended %s before its time: more than the window", s.id, due.Sub(s.intent))
				}
				if s.handed.Before(due) {
					early++
				}
			}
			if len(d.sends) != rate/2 {
				t.Fatalf("%d sends, want %d", len(d.sends), rate/2)
			}
			if (early > 0) != c.wantEarly {
				t.Fatalf("%d of %d sends went before their time; want some: %v", early, len(d.sends), c.wantEarly)
			}
			t.Logf("%d of %d sends early", early, len(d.sends))
		})
	}
}

// ShedAfter: at the in-flight bound a paced send waits for a place up to
// ShedAfter past its time. A stall shorter than that sheds nothing (its
// sends carry it as lag); shedding at once (negative) sheds in the same
// stall; a stall longer than the wait still sheds. The bound holds
// throughout, and every scheduled send is sent or shed.
func TestShedAfterWaitsAtTheBound(t *testing.T) {
	for _, c := range []struct {
		name      string
		shedAfter time.Duration
		stall     time.Duration
		wantShed  bool
	}{
		{"short stall waited out", 500 * time.Millisecond, 50 * time.Millisecond, false},
		{"shed at once", -1, 50 * time.Millisecond, true},
		{"long stall sheds", 50 * time.Millisecond, 400 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// 20 in flight at 1,000 msg/s: the bound is reached 20 ms
			// into the stall.
			d := &stallDriver{stallUntil: time.Now().Add(c.stall)}
			stats := &Stats{}
			res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 1000, Duration: 600 * time.Millisecond,
				Producers: 1, MessageSize: 100, MaxInFlight: 20, ShedAfter: c.shedAfter}, d, l, stats)
			if err != nil {
				t.Fatal(err)
			}
			sent, shed := stats.Sent.Load(), stats.Shed.Load()
			if sent+shed != 600 {
				t.Fatalf("%d sent + %d shed, want the 600 scheduled", sent, shed)
			}
			if p := d.peak.Load(); p > 20 {
				t.Fatalf("%d in flight at the peak, over the bound of 20", p)
			}
			if (shed > 0) != c.wantShed {
				t.Fatalf("%d shed in a %s stall with ShedAfter %s; want some: %v", shed, c.stall, c.shedAfter, c.wantShed)
			}
			if !c.wantShed && time.Duration(res.PacingLag.Max())*time.Microsecond < c.stall/2 {
				t.Fatalf("pacing lag max %d µs: the wait at the bound is not in the lag", res.PacingLag.Max())
			}
			t.Logf("sent %d shed %d, lag max %d µs", sent, shed, res.PacingLag.Max())
		})
	}
}
