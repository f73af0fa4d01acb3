package verifier

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// A commit call is timed from its poll's return (the time of the
// deliveries of the records it covers last) to the broker's answer, once
// per call (its commits share a member and an answer time), from the
// latest delivery of the covered record to the same member that came no
// later than the answer. A call none of whose last records is this run's
// delivery to that member is counted untimed, not guessed.
func TestGroupCommitLatency(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) int64 { return start.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	type del struct {
		seq    uint64
		part   int32
		offset int64
		atMs   int
		member uint8
	}
	type commit struct {
		part   int32
		offset int64
		atMs   int
		member uint8
	}
	for _, tc := range []struct {
		name    string
		dels    []del
		commits []commit
		// calls timed, their latencies' max in ms, untimed calls
		calls   int64
		maxMs   float64
		untimed int64
		// byWindow: the timed calls in each 500 ms window of
		// res.Hist.Commit, by poll time (nil: not checked)
		byWindow []int64
	}{
		{"one call, two partitions: one sample",
			[]del{{0, 0, 0, 100, 0}, {1, 0, 1, 100, 0}, {2, 1, 0, 100, 0}},
			[]commit{{0, 2, 130, 0}, {1, 1, 130, 0}}, 1, 30, 0, nil},
		{"two calls of two members",
			[]del{{0, 0, 0, 100, 0}, {1, 1, 0, 200, 1}},
			[]commit{{0, 1, 110, 0}, {1, 1, 250, 1}}, 2, 50, 0, nil},
		{"redelivered record: the latest delivery before the answer",
			[]del{{0, 0, 0, 100, 0}, {0, 0, 0, 900, 0}, {0, 0, 0, 400, 0}},
			[]commit{{0, 1, 420, 0}, {0, 1, 950, 0}}, 2, 50, 0, nil},
		{"the record went to another member: untimed",
			[]del{{0, 0, 0, 100, 1}},
			[]commit{{0, 1, 120, 0}}, 0, 0, 1, nil},
		{"one timed partition times the call",
			[]del{{0, 0, 0, 100, 0}},
			[]commit{{0, 1, 160, 0}, {1, 7, 160, 0}}, 1, 60, 0, nil},
		{"delivered after the answer: untimed",
			[]del{{0, 0, 0, 300, 0}},
			[]commit{{0, 1, 200, 0}}, 0, 0, 1, nil},
		{"windows by the poll's time, not the answer's",
			[]del{{0, 0, 0, 400, 0}, {1, 1, 0, 1100, 1}},
			[]commit{{0, 1, 700, 0}, {1, 1, 1200, 1}}, 2, 300, 0, []int64{1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			reads, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer reads.Close()
			sent := map[uint64]bool{}
			for _, d := range tc.dels {
				if !sent[d.seq] {
					sent[d.seq] = true
					run.Record(ledger.Send, ledger.Event{Producer: 0, Seq: d.seq, Time: start.UnixNano()})
					run.Record(ledger.Outcome, ledger.Event{Producer: 0, Seq: d.seq, Status: ledger.OutcomeAcked, Partition: d.part, Offset: d.offset, Time: 1})
					reads.Record(ledger.Read, ledger.Event{Producer: 0, Seq: d.seq, Status: uint8(message.Valid), Partition: d.part, Offset: d.offset, Time: start.UnixNano()})
				}
				run.Record(ledger.Delivery, ledger.Event{Producer: 0, Seq: d.seq, Partition: d.part, Offset: d.offset, Time: at(d.atMs), Status: d.member})
			}
			for i, c := range tc.commits {
				run.Record(ledger.Commit, ledger.Event{Producer: ledger.CommitProducer, Seq: uint64(i), Partition: c.part, Offset: c.offset, Time: at(c.atMs), Status: c.member})
			}
			for _, l := range []*ledger.Ledger{run, reads} {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			info := ledger.RunInfo{RunID: 1, LoadStart: start, LoadEnd: start.Add(2 * time.Second), Group: &ledger.GroupInfo{Name: "g", Members: 2}}
			res := &Result{Hist: &Histograms{Start: start, Window: 500 * time.Millisecond}}
			if err := judgeGroup(context.Background(), run, reads, info, nil, Options{}, res); err != nil {
				t.Fatal(err)
			}
			g := res.Group
			// HdrHistogram keeps 3 significant figures.
			if g.CommitLatency.Count != tc.calls || g.CommitLatency.Max < tc.maxMs || g.CommitLatency.Max > tc.maxMs*1.001 || g.CommitsUntimed != tc.untimed {
				t.Fatalf("commit latency %+v, untimed %d; want %d calls, max %.0f ms, %d untimed", g.CommitLatency, g.CommitsUntimed, tc.calls, tc.maxMs, tc.untimed)
			}
			if tc.byWindow != nil {
				var got []int64
				for _, w := range res.Hist.Commit {
					got = append(got, w.TotalCount())
				}
				if !slices.Equal(got, tc.byWindow) || res.Hist.CommitAll.TotalCount() != tc.calls {
					t.Fatalf("calls by window %v (all %d), want %v", got, res.Hist.CommitAll.TotalCount(), tc.byWindow)
				}
			}
		})
	}
}

// CommitLatencyBetween merges the windows wholly inside the span, like
// LatencyBetween: the commits that followed polls before a fault.
func TestCommitLatencyBetween(t *testing.T) {
	h := &Histograms{Window: time.Second, CommitAll: latency.New(3)}
	for _, ms := range []int{10, 20, 1000, 5000} { // one commit a window, by poll time
		w := latency.New(2)
		latency.Record(w, time.Duration(ms)*time.Millisecond)
		latency.Record(h.CommitAll, time.Duration(ms)*time.Millisecond)
		h.Commit = append(h.Commit, w)
	}
	r := &Result{Hist: h}
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		ok       bool
		count    int64
		maxMs    float64
	}{
		{"first two windows", 0, 2 * time.Second, true, 2, 20},
		{"a window cut by the span is left out", 0, 2500 * time.Millisecond, true, 2, 20},
		{"all", 0, 4 * time.Second, true, 4, 5000},
		{"none inside", 500 * time.Millisecond, 1500 * time.Millisecond, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := r.CommitLatencyBetween(tc.from, tc.to)
			if ok != tc.ok || l.Count != tc.count || (ok && (l.Max < tc.maxMs*0.99 || l.Max > tc.maxMs*1.01)) {
				t.Fatalf("%+v ok %v; want %d commits, max %.0f ms, ok %v", l, ok, tc.count, tc.maxMs, tc.ok)
			}
		})
	}
	if _, ok := (&Result{Hist: &Histograms{Window: time.Second}}).CommitLatencyBetween(0, time.Hour); ok {
		t.Fatal("a run without a group has no commit latency")
	}
}
