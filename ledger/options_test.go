package ledger

import (
	"testing"
	"time"
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
