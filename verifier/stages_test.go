package verifier

import (
	"testing"

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
// without it.
func TestVerdictRulesAlone(t *testing.T) {
	base := func() *Result { return &Result{Sent: 100, Acked: 100, Read: 100, ReadBackComplete: true} }
	tests := []struct {
		name  string
		mut   func(*Result)
		opts  Options
		check string
	}{
		{"clean", func(*Result) {}, Options{}, ""},
		{"lost", func(r *Result) { r.Lost = 1 }, Options{}, CheckLost},
		{"corrupt", func(r *Result) { r.Corrupt = 1 }, Options{}, CheckCorrupt},
		{"phantom", func(r *Result) { r.Phantom = 1 }, Options{}, CheckPhantom},
		{"duplicates allowed", func(r *Result) { r.Duplicates = 1 }, Options{}, ""},
		{"duplicates refused", func(r *Result) { r.Duplicates = 1 }, Options{NoDuplicates: true}, CheckDuplicates},
		{"reordered refused", func(r *Result) { r.Reordered = 1 }, Options{Ordered: true}, CheckReordered},
		{"read-back short", func(r *Result) { r.ReadBackComplete = false }, Options{}, CheckReadBack},
		{"nothing acked", func(r *Result) { r.Acked = 0 }, Options{}, CheckAcked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.mut(r)
			applyVerdict(r, tc.opts)
			if tc.check == "" {
				if r.Verdict != Pass {
					t.Fatalf("verdict %s: %v", r.Verdict, r.Reasons)
				}
				return
			}
			if r.Verdict != Fail || len(r.Failures) != 1 || r.Failures[0].Check != tc.check {
				t.Fatalf("verdict %s, failures %+v; want one %q", r.Verdict, r.Failures, tc.check)
			}
		})
	}
}
