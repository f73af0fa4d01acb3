package load

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// TrackPartitions tracks partitions 0 to maxTrackedPartition-1, and no
// table is made for a partition outside them (a negative one, or one
// beyond the bound, which would size the table by it).
func TestTrackPartitionsBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []int32
		want  int
	}{
		{"partition 0", []int32{0}, 1},
		{"the highest tracked", []int32{maxTrackedPartition - 1}, maxTrackedPartition},
		{"one beyond the bound", []int32{maxTrackedPartition}, 0},
		{"negative", []int32{-1}, 0},
		{"none", nil, 0},
	} {
		s := &Stats{}
		s.TrackPartitions(tc.parts)
		if got := len(s.PartitionLastAck()); got != tc.want {
			t.Errorf("%s: %d partitions tracked, want %d", tc.name, got, tc.want)
		}
	}
}

// idDriver acks at once and notes the producer numbers it was asked for.
type idDriver struct {
	ackDriver
	mu  sync.Mutex
	ids []uint32
}

func (d *idDriver) NewProducer(_ context.Context, _ string, id uint32) (drivers.Producer, error) {
	d.mu.Lock()
	d.ids = append(d.ids, id)
	d.mu.Unlock()
	return ackProducer{}, nil
}

// A shard's producers are ProducerBase+k, for the driver as in the
// ledger: two shards of one run never share a producer number.
func TestProducerBaseNumbersTheProducers(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &idDriver{}
	if _, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 300, Duration: 100 * time.Millisecond,
		Producers: 3, ProducerBase: 10, MessageSize: 100}, d, l, &Stats{}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(d.ids)
	if !slices.Equal(d.ids, []uint32{10, 11, 12}) {
		t.Fatalf("the driver was asked for producers %v, want [10 11 12]", d.ids)
	}
	c, err := l.Scan(ledger.Send)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		e, ok := c.Next()
		if !ok {
			break
		}
		if e.Producer < 10 || e.Producer > 12 {
			t.Fatalf("the ledger holds a send of producer %d, want 10 to 12", e.Producer)
		}
	}
}

// A ledger that refuses the sends stops the load, and Run says so: the
// run must not go on as if its sends were recorded.
func TestRunReturnsTheLedgersError(t *testing.T) {
	dir := t.TempDir()
	w, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.OpenReadOnly(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 100 * time.Millisecond,
		Producers: 2, MessageSize: 100}, ackDriver{}, l, &Stats{})
	if !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("Run over a ledger that refuses every send: %v, want its error", err)
	}
}

// liveDriver acks at once, and its live read delivers copies of the
// shards' messages on either side of producers 10 and 11 (3 and 12), one
// of another run's, one of this shard's first producer, and a value that
// is no message, then ends with end(ctx).
type liveDriver struct {
	ackDriver
	end func(ctx context.Context) error
}

func (d liveDriver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	intended := time.Now().Add(-5 * time.Millisecond)
	for i, id := range []message.ID{{Run: 7, Producer: 3, Seq: 1}, {Run: 8, Producer: 10, Seq: 1}, {Run: 7, Producer: 12, Seq: 1}, {Run: 7, Producer: 10, Seq: 4}} {
		if err := fn(drivers.Record{Pos: drivers.Position{Partition: 0, Offset: int64(i)}, Value: message.Encode(nil, id, intended, 100)}); err != nil {
			return drivers.ReadReport{}, err
		}
	}
	if err := fn(drivers.Record{Pos: drivers.Position{Offset: 4}, Value: []byte("not a message")}); err != nil {
		return drivers.ReadReport{}, err
	}
	return drivers.ReadReport{}, d.end(ctx)
}

// The live read records this shard's copies only, with their position
// and end-to-end latency, and its failure is the run's LiveReadErr; its
// end when the load stops it (context.Canceled) is not.
func TestLiveReadRecordsThisShardsCopies(t *testing.T) {
	boom := errors.New("consumer lost its connection")
	for _, tc := range []struct {
		name    string
		end     func(ctx context.Context) error
		wantErr error
	}{
		{"stopped by the load", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, nil},
		{"failed", func(context.Context) error { return boom }, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			stats := &Stats{}
			res, err := Run(context.Background(), Config{RunID: 7, Topic: "t", Partitions: []int32{0}, Rate: 100, Duration: 100 * time.Millisecond,
				Producers: 2, ProducerBase: 10, MessageSize: 100, LiveRead: true}, liveDriver{end: tc.end}, l, stats)
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(res.LiveReadErr, tc.wantErr) || (tc.wantErr == nil) != (res.LiveReadErr == nil) {
				t.Errorf("LiveReadErr %v, want %v", res.LiveReadErr, tc.wantErr)
			}
			if n := stats.LiveReads.Load(); n != 1 {
				t.Errorf("%d live reads counted, want 1 (this shard's copy only)", n)
			}
			must(t, l.Flush())
			c, err := l.Scan(ledger.LiveRead)
			must(t, err)
			defer c.Close()
			var got []ledger.Event
			for {
				e, ok := c.Next()
				if !ok {
					break
				}
				got = append(got, e)
			}
			if len(got) != 1 || got[0].Producer != 10 || got[0].Seq != 4 || got[0].Offset != 3 || got[0].Time < int64(5*time.Millisecond) {
				t.Fatalf("live reads in the ledger %+v, want producer 10 seq 4 at offset 3, at least 5ms after its intended time", got)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// closeProducer's Close returns after hold, or when its context ends.
type closeProducer struct {
	ackProducer
	hold time.Duration
}

func (p closeProducer) Close(ctx context.Context) error {
	select {
	case <-time.After(p.hold):
	case <-ctx.Done():
	}
	return nil
}

// The drain waits for the producers' Close (their last outcomes) up to
// DrainTimeout; with ackcheck's own OutcomeTimeout, up to that timeout and
// two sweeps, so that the sweep records what is left Unknown; never less.
func TestDrainWaitsForItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		hold     time.Duration
		min, max time.Duration
	}{
		{"the driver's own deadline: Close is waited for", Config{DrainTimeout: 10 * time.Second}, 600 * time.Millisecond,
			600 * time.Millisecond, 5 * time.Second},
		{"ackcheck's deadline: OutcomeTimeout and two sweeps", Config{DrainTimeout: 10 * time.Second, OutcomeTimeout: 300 * time.Millisecond}, time.Hour,
			300*time.Millisecond + 2*sweepEvery, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			drainProducers(context.Background(), tc.cfg, []drivers.Producer{closeProducer{hold: tc.hold}})
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Fatalf("the drain took %v, want %v to %v", d, tc.min, tc.max)
			}
		})
	}
}

// The in-flight bound is exact: with every answer held, a producer has
// exactly MaxInFlight sends out, and sheds the rest of its schedule.
func TestInFlightBoundIsExact(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Held for 2 s, 20 times the schedule: no answer comes back before
	// the last send, even on a busy machine.
	d := &stallDriver{stallUntil: time.Now().Add(2 * time.Second)}
	stats := &Stats{}
	if _, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 1000, Duration: 100 * time.Millisecond,
		Producers: 1, MessageSize: 100, MaxInFlight: 5}, d, l, stats); err != nil {
		t.Fatal(err)
	}
	if p := d.peak.Load(); p != 5 {
		t.Errorf("at most %d sends in flight, want the bound, 5", p)
	}
	if sent, shed := stats.Sent.Load(), stats.Shed.Load(); sent != 5 || shed != 95 {
		t.Errorf("%d sent and %d shed of 100 scheduled, want 5 and 95", sent, shed)
	}
	// A shed send was never in flight: after the drain, nothing is.
	if n := stats.InFlight.Load(); n != 0 {
		t.Errorf("%d in flight after the drain, want 0", n)
	}
}

// An unpaced load keeps exactly MaxInFlight sends out while the answers
// are held, and sends the whole schedule once they come.
func TestUnpacedInFlightBoundIsExact(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &stallDriver{stallUntil: time.Now().Add(time.Second)}
	stats := &Stats{}
	if _, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 200, Duration: 100 * time.Millisecond,
		Producers: 1, MessageSize: 100, MaxInFlight: 5, Unpaced: true}, d, l, stats); err != nil {
		t.Fatal(err)
	}
	if p := d.peak.Load(); p != 5 {
		t.Errorf("at most %d sends in flight, want the bound, 5", p)
	}
	if sent, shed := stats.Sent.Load(), stats.Shed.Load(); sent != 20 || shed != 0 {
		t.Errorf("%d sent and %d shed of 20 scheduled, want 20 and 0", sent, shed)
	}
}
