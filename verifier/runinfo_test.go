package verifier

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// What Check carries over from the run's description: what an ack meant
// from the start and from each applied fsync toggle on (never from a
// toggle that did not apply, never before the load), and the load's own
// figures converted from microseconds to milliseconds.
func TestCheckCarriesRunFigures(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(ledger.Send, ledger.Event{Time: t0.UnixNano()})
	l.Record(ledger.Outcome, ledger.Event{Status: ledger.OutcomeAcked, Time: int64(time.Millisecond)})
	l.Record(ledger.Read, ledger.Event{Status: uint8(message.Valid)})
	steal := 3.5
	l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * time.Second), Clean: true,
		AckMeaning: "in memory of 3", AckClasses: map[string]int64{"disk": 1}, StealPct: &steal,
		PacingLag:    &ledger.LagSummary{Count: 4, P50Us: 1500, P99Us: 2500, MaxUs: 9000},
		CallbackTime: &ledger.LagSummary{Count: 2, P50Us: 20, P99Us: 40, MaxUs: 60}})
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	l.PutMeta(faults.MetaKey, []faults.Record{
		{Action: faults.FsyncOn, Target: "all", Result: faults.Applied, At: t0.Add(-time.Second), AckMeaning: "on disk before"},
		{Action: faults.FsyncOff, Target: "all", Result: faults.Failed, At: t0.Add(2 * time.Second), AckMeaning: "never"},
		{Action: faults.FsyncOn, Target: "all", Result: faults.Applied, At: t0.Add(3 * time.Second), AckMeaning: "on disk of 3"},
		{Action: faults.FsyncOff, Target: "all", Result: faults.Applied, At: t0.Add(4 * time.Second)},
	})
	r, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(r.AckMeanings)
	want := "[{0 the start in memory of 3} {0 fsync-on all on disk before} {3 fsync-on all on disk of 3}]"
	if got != want {
		t.Errorf("ack meanings %s\nwant          %s", got, want)
	}
	if p := r.PacingLag; p.Count != 4 || p.P50 != 1.5 || p.P99 != 2.5 || p.Max != 9 {
		t.Errorf("pacing lag %+v", p)
	}
	if c := r.CallbackTime; c.Count != 2 || c.P50 != 0.02 || c.P99 != 0.04 || c.Max != 0.06 {
		t.Errorf("callback time %+v", c)
	}
	if r.StealPct == nil || *r.StealPct != 3.5 || r.AckedByClass["disk"] != 1 {
		t.Errorf("steal %v, ack classes %v", r.StealPct, r.AckedByClass)
	}
}
