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
