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
