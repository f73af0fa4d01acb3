package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/latency"
)

// latencyWindow holds the acks since the last progress line.
type latencyWindow struct{ h *hdrhistogram.Histogram }

func newLatencyWindow() *latencyWindow { return &latencyWindow{h: latency.New(2)} }

func (w *latencyWindow) record(d time.Duration) { latency.Record(w.h, d) }

func (w *latencyWindow) rotate() (time.Duration, int64) {
	p99 := time.Duration(w.h.ValueAtQuantile(99)) * time.Microsecond
	n := w.h.TotalCount()
	w.h.Reset()
	return p99, n
}
