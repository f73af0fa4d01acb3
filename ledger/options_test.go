package ledger

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FlushEvents flushes early: a kind of one producer that reaches it is
// committed without waiting for FlushInterval (here an hour), and the
// zero value means its default, 65536, not "never".
func TestFlushEventsFlushesEarly(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flushEvents int
		record      int
	}{
		{"set", 1000, 1000},
		{"default", 0, 1 << 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour, FlushEvents: tc.flushEvents})
			must(t, err)
			defer l.Close()
			for s := 0; s < tc.record; s++ {
				l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				n, err := l.Count(t.Context(), Send, nil)
				must(t, err)
				if n == int64(tc.record) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d events committed 20 s after FlushEvents was reached", n, tc.record)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// Any producer number is recorded, on either side of the 1,024 shards
// found without a lock, and each event comes back under its own producer.
func TestProducersBeyondTheFastShards(t *testing.T) {
	l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
	must(t, err)
	defer l.Close()
	producers := []uint32{0, 1023, 1024, 1025, 70000, 1<<32 - 1}
	for _, p := range producers {
		for s := range uint64(3) {
			must(t, l.Record(Send, Event{Producer: p, Seq: s}))
		}
	}
	must(t, l.Flush())
	got := map[uint32]int{}
	for _, e := range scanAll(t, l, Send) {
		got[e.Producer]++
	}
	for _, p := range producers {
		if got[p] != 3 {
			t.Errorf("producer %d: %d events back, want 3 (all: %v)", p, got[p], got)
		}
	}
	if len(got) != len(producers) {
		t.Errorf("events came back under %d producers, want %d: %v", len(got), len(producers), got)
	}
}

// A flush the background flusher could not make is not forgotten: Record
// returns its error from then on, so the load stops instead of recording
// into a ledger that is no longer complete.
func TestRecordReturnsABackgroundFlushError(t *testing.T) {
	var full atomic.Bool
	l, err := Open("ledger", Options{FS: fullDisk{FS: vfs.NewMem(), full: &full}, FlushInterval: 5 * time.Millisecond})
	must(t, err)
	defer l.Close()
	full.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for s := uint64(0); ; s++ {
		err := l.Record(Send, Event{Producer: 1, Seq: s})
		if errors.Is(err, ErrDiskFull) {
			return
		}
		if err != nil {
			t.Fatalf("Record after a failed background flush: %v, want ErrDiskFull", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("Record still returns nil 20 s after the disk filled")
		}
		time.Sleep(time.Millisecond)
	}
}

// SentThrough counts sends only: a read or an outcome of a higher sequence
// number (a phantom, a late answer) does not move it.
func TestSentThroughCountsSendsOnly(t *testing.T) {
	l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
	must(t, err)
	defer l.Close()
	for s := range uint64(10) {
		must(t, l.Record(Send, Event{Producer: 1, Seq: s}))
	}
	must(t, l.Record(Outcome, Event{Producer: 1, Seq: 40}))
	must(t, l.Record(Read, Event{Producer: 1, Seq: 50}))
	must(t, l.Record(LiveRead, Event{Producer: 2, Seq: 60}))
	must(t, l.Flush())
	if st := l.SentThrough(); len(st) != 1 || st[1] != 10 {
		t.Fatalf("SentThrough = %v, want map[1:10]", st)
	}
}

// A flush splits a kind's events into fragments of at most fragmentMax:
// a count that fills its last fragment exactly, or spills one event over,
// comes back whole.
func TestFlushOfWholeFragments(t *testing.T) {
	for _, n := range []int{fragmentMax, 2 * fragmentMax, 2*fragmentMax + 1} {
		l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
		must(t, err)
		for s := range n {
			l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
		}
		must(t, l.Flush())
		if got, err := l.Count(t.Context(), Send, nil); err != nil || got != int64(n) {
			t.Errorf("%d sends flushed: %d back, %v", n, got, err)
		}
		must(t, l.Close())
	}
}

// Open refuses to start replaying write-ahead logs it has no room for,
// and does not ask when there are none or they are small.
func TestRoomToOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		walBytes int64
		refused  bool
	}{
		{0, false},
		{1, false},
		{1 << 60, true},
	} {
		if err := roomToOpen(dir, tc.walBytes); (err != nil) != tc.refused {
			t.Errorf("roomToOpen with %d bytes of WAL: %v, want refused %v", tc.walBytes, err, tc.refused)
		}
	}
}
