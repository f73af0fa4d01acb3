package verifier

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// The classify stage alone: histories in, counts out, no ledger needed.
func TestClassifierAlone(t *testing.T) {
	valid := func(part int32, off int64) ledger.Event {
		return ledger.Event{Partition: part, Offset: off, Status: uint8(message.Valid)}
	}
	res := &Result{Samples: map[string][]Sample{}}
	c := newClassifier(res, ledger.RunInfo{RunID: 1, Producers: 1, Clean: true}, nil, 10)
	for _, h := range []history{
		{producer: 0, seq: 0, sent: true, acked: true, ack: ledger.Event{Partition: 0, Offset: 5}, reads: []ledger.Event{valid(0, 5)}},
		{producer: 0, seq: 1, sent: true, acked: true, ack: ledger.Event{Partition: 0, Offset: 4}, reads: []ledger.Event{valid(0, 4)}}, // reordered
		{producer: 0, seq: 2, sent: true, acked: true},                                                                     // lost
		{producer: 0, seq: 3, sent: true, outcome: ledger.OutcomeUnknown, reads: []ledger.Event{valid(0, 7), valid(0, 9)}}, // indeterminate, duplicate
		{producer: 0, seq: 9, reads: []ledger.Event{valid(0, 8)}},                                                          // phantom
	} {
		c.add(&h)
	}
	want := map[string]int64{"sent": 4, "acked": 3, "lost": 1, "read": 3, "reordered": 1, "indeterminate": 1, "duplicates": 1, "phantom": 1, "unknown": 1}
	got := map[string]int64{"sent": res.Sent, "acked": res.Acked, "lost": res.Lost, "read": res.Read, "reordered": res.Reordered,
		"indeterminate": res.Indeterminate, "duplicates": res.Duplicates, "phantom": res.Phantom, "unknown": res.Unknown}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

// The verdict stage alone: each rule fires on its count and stays quiet
// without it. A read-back that did not finish proves no loss: alone it is
// Incomplete (never Pass), and a failure proven by what was read is still
// Fail; a topic the broker says is gone is Fail.
func TestVerdictRulesAlone(t *testing.T) {
	base := func() *Result { return &Result{Sent: 100, Acked: 100, Read: 100, ReadBackComplete: true} }
	unfinished := func(r *Result) {
		r.ReadBackComplete, r.Read, r.Lost, r.Unread = false, 60, 0, 40
		r.ReadBackError = "reading t back: fetch refused"
		r.ReadBackNotes = map[int32]string{1: "stopped at offset 3 of 9: fetch refused"}
	}
	tests := []struct {
		name    string
		mut     func(*Result)
		opts    Options
		checks  []string
		verdict string
	}{
		{"clean", func(*Result) {}, Options{}, nil, Pass},
		{"lost", func(r *Result) { r.Lost = 1 }, Options{}, []string{CheckLost}, Fail},
		{"corrupt", func(r *Result) { r.Corrupt = 1 }, Options{}, []string{CheckCorrupt}, Fail},
		{"phantom", func(r *Result) { r.Phantom = 1 }, Options{}, []string{CheckPhantom}, Fail},
		{"duplicates allowed", func(r *Result) { r.Duplicates = 1 }, Options{}, nil, Pass},
		{"duplicates refused", func(r *Result) { r.Duplicates = 1 }, Options{NoDuplicates: true}, []string{CheckDuplicates}, Fail},
		{"reordered refused", func(r *Result) { r.Reordered = 1 }, Options{Ordered: true}, []string{CheckReordered}, Fail},
		{"nothing acked", func(r *Result) { r.Acked = 0 }, Options{}, []string{CheckAcked}, Fail},
		{"read-back short", func(r *Result) { r.ReadBackComplete = false }, Options{}, []string{CheckReadBack}, Incomplete},
		{"read-back failed, lost not proven", unfinished, Options{}, []string{CheckReadBack}, Incomplete},
		{"read-back failed, a corrupt copy proven", func(r *Result) { unfinished(r); r.Corrupt = 1 }, Options{},
			[]string{CheckCorrupt, CheckReadBack}, Fail},
		{"read-back failed, a deadline missed", func(r *Result) { unfinished(r); r.LongestNoAckMs = 500 }, Options{MaxNoAck: time.Millisecond},
			[]string{CheckReadBack, CheckMaxNoAck}, Fail},
		{"read-back failed, a loss in a partition read to its end", func(r *Result) { unfinished(r); r.Lost = 10 }, Options{},
			[]string{CheckLost, CheckReadBack}, Fail},
		{"topic gone", func(r *Result) { r.ReadBackComplete, r.TopicGone, r.Read, r.Lost = false, true, 0, 100 }, Options{},
			[]string{CheckLost, CheckReadBack}, Fail},
		{"ledger proven whole", func(r *Result) { r.Ledger = &ledger.Proof{Whole: true} }, Options{}, nil, Pass},
		{"ledger not proven whole", func(r *Result) { r.Ledger = &ledger.Proof{Reason: "older"} }, Options{}, []string{CheckLedgerWhole}, Unproven},
		{"ledger not proven whole, phantoms not blamed", func(r *Result) { r.Ledger = &ledger.Proof{Reason: "older"}; r.Phantom = 5 }, Options{},
			[]string{CheckLedgerWhole}, Unproven},
		{"ledger not proven whole, a loss it holds", func(r *Result) { r.Ledger = &ledger.Proof{Reason: "older"}; r.Lost = 2 }, Options{},
			[]string{CheckLost, CheckLedgerWhole}, Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.mut(r)
			applyVerdict(r, tc.opts)
			var got []string
			for _, f := range r.Failures {
				got = append(got, f.Check)
			}
			if r.Verdict != tc.verdict || !slices.Equal(got, tc.checks) {
				t.Fatalf("verdict %s, failures %+v; want %s with %q", r.Verdict, r.Failures, tc.verdict, tc.checks)
			}
			if r.Checks == nil || *r.Checks != ChecksOf(tc.opts) {
				t.Fatalf("checks recorded %+v, want %+v", r.Checks, ChecksOf(tc.opts))
			}
		})
	}
	// The reason names the request and the partition that stopped it.
	r := base()
	unfinished(r)
	applyVerdict(r, Options{})
	if want := "the read-back did not finish: reading t back: fetch refused; partition 1: stopped at offset 3 of 9"; !strings.HasPrefix(r.Reasons[0], want) {
		t.Fatalf("reason %q, want it to start %q", r.Reasons[0], want)
	}
}
