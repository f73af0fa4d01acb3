// Package latency holds the one histogram shape every latency in ackcheck
// is recorded in, so that the load's progress lines, the verifier's
// figures and the reports' HdrHistogram logs agree: microseconds from 1 µs
// to one hour, nothing a run can contain clipped.
package latency

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const (
	minUs = 1
	maxUs = int64(time.Hour / time.Microsecond)
)

// New returns a latency histogram in microseconds with the given
// significant figures (2 for per-window, 3 for whole-run histograms).
func New(sigfigs int) *hdrhistogram.Histogram {
	return hdrhistogram.New(minUs, maxUs, sigfigs)
}

// Record adds d to h, clamped to the histogram's range.
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	us = max(minUs, min(us, maxUs))
	_ = h.RecordValue(us) // cannot fail within the range
}
