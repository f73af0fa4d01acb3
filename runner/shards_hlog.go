package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/verifier"
)

// A shard writes its own latency over time as HdrHistogram interval logs
// (publish.hlog, e2e.hlog in its run directory) when its load ends, from
// its ledger: one histogram per window of the schedule, placed by each
// message's intended send time, with 3 significant figures. The merged
// verify merges the shards' logs window by window (shards-publish.hlog,
// shards-e2e.hlog beside the merged verdict) and checks their percentiles
// over all messages against the ones it computed from the shards' ledgers
// (hlogCheck): the two are computed apart, from the same messages, and
// must agree within the histograms' precision.

// hlogSigFigs is the precision of a shard's interval histograms: a value
// is kept within 10^-3 of itself, so percentiles merged from them agree
// with the ledgers' within hlogTolerance.
const hlogSigFigs = 3

// hlogTolerance is how far a percentile merged from the shards' logs may
// lie from the ledgers' (relative), beyond 1 µs: the rounding of two
// histograms of 3 significant figures each.
const hlogTolerance = 0.002

// hlogNames are the shard's interval logs: publish and end-to-end.
var hlogNames = [2]string{"publish.hlog", "e2e.hlog"}

// stream is one kind's events in (producer, seq) order, one at a time.
type stream struct {
	c   *ledger.Cursor
	run []ledger.Event
	i   int
}

func (s *stream) peek() (ledger.Event, bool) {
	for s.i >= len(s.run) {
		run, ok := s.c.NextRun()
		if !ok {
			return ledger.Event{}, false
		}
		s.run, s.i = run, 0
	}
	return s.run[s.i], true
}

func before(a, b ledger.Event) bool {
	return a.Producer < b.Producer || (a.Producer == b.Producer && a.Seq < b.Seq)
}

// shardHistograms computes a shard's latency histograms from its ledger,
// as the merged verify does from every shard's: publish latency for every
// acked send, end-to-end for the earliest live read of a sent message,
// each in the window of its intended send time.
func shardHistograms(l *ledger.Ledger, run ledger.RunInfo) (*verifier.Histograms, error) {
	h := &verifier.Histograms{Start: run.LoadStart, Window: verifier.WindowFor(run.LoadEnd.Sub(run.LoadStart)),
		PublishAll: latency.New(hlogSigFigs), E2EAll: latency.New(hlogSigFigs)}
	at := func(intended int64) int {
		i := int((intended - run.LoadStart.UnixNano()) / int64(h.Window))
		if i < 0 || i > 100000 {
			return -1
		}
		for len(h.Publish) <= i {
			h.Publish = append(h.Publish, latency.New(hlogSigFigs))
			h.E2E = append(h.E2E, latency.New(hlogSigFigs))
		}
		return i
	}
	var ss [3]*stream
	for i, k := range []ledger.Kind{ledger.Send, ledger.Outcome, ledger.LiveRead} {
		c, err := l.Scan(k)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ss[i] = &stream{c: c}
	}
	sends, outs, lives := ss[0], ss[1], ss[2]
	for {
		s, ok := sends.peek()
		if !ok {
			break
		}
		sends.i++
		w := at(s.Time)
		// Outcomes and live reads of messages never sent are skipped, as
		// the verdict skips them.
		for o, ok := outs.peek(); ok && !before(s, o); o, ok = outs.peek() {
			outs.i++
			if o.Producer == s.Producer && o.Seq == s.Seq && o.Status == ledger.OutcomeAcked {
				latency.Record(h.PublishAll, time.Duration(o.Time))
				if w >= 0 {
					latency.Record(h.Publish[w], time.Duration(o.Time))
				}
			}
		}
		e2e := int64(-1)
		for r, ok := lives.peek(); ok && !before(s, r); r, ok = lives.peek() {
			lives.i++
			if r.Producer == s.Producer && r.Seq == s.Seq && (e2e < 0 || r.Time < e2e) {
				e2e = r.Time
			}
		}
		if e2e >= 0 {
			latency.Record(h.E2EAll, time.Duration(e2e))
			if w >= 0 {
				latency.Record(h.E2E[w], time.Duration(e2e))
			}
		}
	}
	for _, s := range ss {
		if err := s.c.Err(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// writeShardHlogs writes a shard's publish.hlog and e2e.hlog into its run
// directory out, from its ledger (complete: flushed).
func writeShardHlogs(out string, l *ledger.Ledger, run ledger.RunInfo) error {
	h, err := shardHistograms(l, run)
	if err != nil {
		return fmt.Errorf("the shard's latency histograms: %w", err)
	}
	for i, name := range hlogNames {
		var b bytes.Buffer
		if err := report.WriteHlog(&b, h, i == 0); err != nil {
			return err
		}
		if err := writeFileSynced(filepath.Join(out, name), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func writeFileSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// MergedHlog is one kind of latency merged from the shards' interval
// logs: one histogram per window start (Unix ms), and the whole run's.
type MergedHlog struct {
	Starts  []int64
	Windows []*hdrhistogram.Histogram
	All     *hdrhistogram.Histogram
	// Window is the logs' window length (every shard's must be one).
	Window time.Duration
}

// MergeHlogs merges interval logs (one per shard) window by window: the
// histograms that start at one instant are added together. Shards of one
// load start at one instant and share the window length, so their
// windows line up; logs whose windows do not are refused.
func MergeHlogs(readers []io.Reader) (*MergedHlog, error) {
	m := &MergedHlog{All: latency.New(hlogSigFigs)}
	by := map[int64]*hdrhistogram.Histogram{}
	for n, r := range readers {
		lr := hdrhistogram.NewHistogramLogReader(r)
		for {
			h, err := lr.NextIntervalHistogram()
			if err != nil {
				return nil, fmt.Errorf("log %d: %w", n, err)
			}
			if h == nil {
				break
			}
			// Window bounds are whole ms of a start that need not be:
			// a window may be 1 ms shorter or longer than the next.
			w := time.Duration(h.EndTimeMs()-h.StartTimeMs()) * time.Millisecond
			switch {
			case m.Window == 0:
				m.Window = w
			case w-m.Window > time.Millisecond || m.Window-w > time.Millisecond:
				return nil, fmt.Errorf("log %d has windows of %s, another of %s: they are not one load's", n, w, m.Window)
			case w > m.Window:
				m.Window = w
			}
			cur := by[h.StartTimeMs()]
			if cur == nil {
				cur = latency.New(hlogSigFigs)
				by[h.StartTimeMs()] = cur
			}
			cur.Merge(h)
			m.All.Merge(h)
		}
	}
	for s := range by {
		m.Starts = append(m.Starts, s)
	}
	slices.Sort(m.Starts)
	for _, s := range m.Starts {
		m.Windows = append(m.Windows, by[s])
	}
	return m, nil
}

// write writes the merged windows as an interval log.
func (m *MergedHlog) write(path, tag string, start time.Time) error {
	var b bytes.Buffer
	lw := hdrhistogram.NewHistogramLogWriter(&b)
	lw.OutputLogFormatVersion()
	lw.OutputStartTime(start.UnixMilli())
	lw.OutputComment("ackcheck " + tag + " latency in microseconds, merged from the shards' interval logs, one histogram per " + m.Window.String())
	lw.OutputLegend()
	for i, h := range m.Windows {
		h.SetStartTimeMs(m.Starts[i])
		h.SetEndTimeMs(m.Starts[i] + m.Window.Milliseconds())
		h.SetTag(tag)
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return err
		}
	}
	return writeFileSynced(path, b.Bytes())
}

// hlogCheck merges the shards' interval logs into out (shards-*.hlog) and
// compares their percentiles over all messages with the verdict's, which
// came from the ledgers. It notes the agreement in res.Notes, and warns
// (res.Warnings) where they disagree beyond hlogTolerance: the two were
// computed apart from one set of messages, and a disagreement means one
// of them did not see them all. Counts that disagree make the ledgers
// unproven (Result.MarkUnproven): no PASS rests on them. A shard without its logs (killed before
// its load ended) is noted; nothing is compared then. dirs are the run
// directories of the shards whose ledgers were judged.
func hlogCheck(out string, dirs []string, res *verifier.Result) error {
	for i, name := range hlogNames {
		var readers []io.Reader
		var missing []string
		for _, d := range dirs {
			data, err := os.ReadFile(filepath.Join(d, name))
			if errors.Is(err, os.ErrNotExist) {
				missing = append(missing, d)
				continue
			}
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("the shard's %s cannot be read: %v", name, err))
				missing = append(missing, d)
				continue
			}
			readers = append(readers, bytes.NewReader(data))
		}
		kind, want := "publish", res.Publish
		if i == 1 {
			kind, want = "e2e", res.E2E
		}
		if len(missing) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s latency: no %s in %v (shards that did not finish their load): not merged from the shards' logs", kind, name, missing))
			continue
		}
		m, err := MergeHlogs(readers)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the shards' %s files cannot be merged: %v", name, err))
			continue
		}
		if err := m.write(filepath.Join(out, "shards-"+name), kind, res.LoadStart); err != nil {
			return err
		}
		got := verifier.Latency{Count: m.All.TotalCount()}
		if got.Count > 0 {
			ms := func(us int64) float64 { return float64(us) / 1000 }
			got.P50, got.P99, got.P999, got.Max = ms(m.All.ValueAtQuantile(50)), ms(m.All.ValueAtQuantile(99)), ms(m.All.ValueAtQuantile(99.9)), ms(m.All.Max())
		}
		if got.Count != want.Count {
			// The logs and the ledgers were written apart from one set of
			// messages: counting others, one of them lacks messages, and
			// the ledgers may be the one (cut back consistently).
			res.MarkUnproven(fmt.Sprintf("the shards' %s files count %d %s latencies and their ledgers %d: one of them lacks messages, so the ledgers cannot be taken as the whole load",
				name, got.Count, kind, want.Count))
			continue
		}
		if why := latencyDisagrees(got, want); why != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s latency merged from the shards' %s files disagrees with the ledgers': %s", kind, name, why))
			continue
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s latency merged from %d shards' %s files (shards-%s): %d messages, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms; the ledgers give the same within %.1f%%",
			kind, len(readers), name, name, got.Count, got.P50, got.P99, got.P999, got.Max, hlogTolerance*100))
	}
	return nil
}

// latencyDisagrees says how got and want differ beyond hlogTolerance; ""
// when they agree. Latencies are in ms.
func latencyDisagrees(got, want verifier.Latency) string {
	if got.Count != want.Count {
		return fmt.Sprintf("%d messages in the logs, %d in the ledgers", got.Count, want.Count)
	}
	for _, v := range []struct {
		name string
		a, b float64
	}{{"p50", got.P50, want.P50}, {"p99", got.P99, want.P99}, {"p99.9", got.P999, want.P999}, {"max", got.Max, want.Max}} {
		if d := v.a - v.b; d > 0.001+hlogTolerance*max(v.a, v.b) || -d > 0.001+hlogTolerance*max(v.a, v.b) {
			return fmt.Sprintf("%s %.3f ms in the logs, %.3f ms in the ledgers", v.name, v.a, v.b)
		}
	}
	return ""
}
