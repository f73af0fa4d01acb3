package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to one hour, so that no
// stall a run can contain is clipped.
const (
	minLatencyUs = 1
	maxLatencyUs = int64(time.Hour / time.Microsecond)
)

// NewHistogram returns a latency histogram in microseconds with the given
// significant figures (2 for per-window, 3 for whole-run histograms).
func NewHistogram(sigfigs int) *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyUs, maxLatencyUs, sigfigs)
}

// RecordLatency adds d to h, clamping to the histogram's range.
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	us = max(minLatencyUs, min(us, maxLatencyUs))
	_ = h.RecordValue(us) // cannot fail within the range
}

// latencyWindow holds the acks since the last progress line.
type latencyWindow struct{ h *hdrhistogram.Histogram }

func newLatencyWindow() *latencyWindow { return &latencyWindow{h: NewHistogram(2)} }

func (w *latencyWindow) record(d time.Duration) { RecordLatency(w.h, d) }

func (w *latencyWindow) rotate() (time.Duration, int64) {
	p99 := time.Duration(w.h.ValueAtQuantile(99)) * time.Microsecond
	n := w.h.TotalCount()
	w.h.Reset()
	return p99, n
}
