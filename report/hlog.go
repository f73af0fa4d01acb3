package report

import (
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/verifier"
)

// WriteHlog writes one interval histogram per window in HdrHistogram's
// interval log format (values in microseconds), with absolute start times
// so that logs from several load machines can be merged by time.
func WriteHlog(w io.Writer, h *verifier.Histograms, publish bool) error {
	hists := h.E2E
	tag := "e2e"
	if publish {
		hists, tag = h.Publish, "publish"
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	start := h.Start.UnixMilli()
	if err := lw.OutputStartTime(start); err != nil {
		return err
	}
	if err := lw.OutputComment("ackcheck " + tag + " latency in microseconds, one histogram per " + h.Window.String() + " of the schedule"); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	for i, src := range hists {
		c := hdrhistogram.Import(src.Export())
		from := h.Start.Add(time.Duration(i) * h.Window)
		c.SetStartTimeMs(from.UnixMilli())
		c.SetEndTimeMs(from.Add(h.Window).UnixMilli())
		c.SetTag(tag)
		if err := lw.OutputIntervalHistogram(c); err != nil {
			return err
		}
	}
	return nil
}
