package load

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/latency"
)

// latencyWindow holds one producer's acks since the last progress line.
// Its lock is taken by that producer's outcomes, one at a time, and by
// the progress line: one window under one lock for every producer was
// contended by all their callbacks (lockSlow in BenchmarkUnpacedOwnCost's
// profile).
type latencyWindow struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatencyWindow() *latencyWindow { return &latencyWindow{h: latency.New(2)} }

func (w *latencyWindow) record(d time.Duration) {
	w.mu.Lock()
	latency.Record(w.h, d)
	w.mu.Unlock()
}

// rotate returns the p99 and count of the acks in ws since the last
// rotate, and empties them.
func rotate(ws []*latencyWindow) (time.Duration, int64) {
	all := latency.New(2)
	for _, w := range ws {
		w.mu.Lock()
		all.Merge(w.h)
		w.h.Reset()
		w.mu.Unlock()
	}
	return time.Duration(all.ValueAtQuantile(99)) * time.Microsecond, all.TotalCount()
}
