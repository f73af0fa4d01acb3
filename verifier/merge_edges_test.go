package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// The merge takes the smallest ID over every stream: a phantom copy whose
// sequence is below the producer's next send is judged on its own, before
// that send, and the send still finds its own copy.
func TestMergePhantomBelowASend(t *testing.T) {
	ms := time.Millisecond
	r := judge(t, true, true, Options{},
		send(0, 5, 0), ack(0, 5, 0, 1, ms), read(0, 5, 0, 1),
		read(0, 3, 0, 0), // never sent
		send(1, 0, 0), ack(1, 0, 1, 0, ms), read(1, 0, 1, 0),
		read(0, 9, 1, 1)) // never sent, after producer 0's last send
	if r.Sent != 2 || r.Read != 2 || r.Phantom != 2 || r.Lost != 0 {
		t.Fatalf("sent %d, read %d, phantom %d, lost %d; want 2, 2, 2, 0", r.Sent, r.Read, r.Phantom, r.Lost)
	}
}

// Check closes every scan it opened: the ledger closes cleanly after it
// (Pebble refuses to close with an iterator left open).
func TestCheckClosesItsScans(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(ledger.Send, ledger.Event{Time: t0.UnixNano()})
	l.Record(ledger.Outcome, ledger.Event{Status: ledger.OutcomeAcked, Time: int64(time.Millisecond)})
	l.Record(ledger.Read, ledger.Event{Status: uint8(message.Valid)})
	l.Record(ledger.LiveRead, ledger.Event{Time: int64(3 * time.Millisecond)})
	l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Producers: 1, LoadStart: t0, LoadEnd: t0.Add(time.Second), Clean: true})
	l.PutMeta(MetaReadBack, ReadBackReport{Complete: true})
	if _, err := Check(context.Background(), l, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("closing the ledger after Check: %v", err)
	}
}

// A first live read with a latency of 0 is the earliest: a later one does
// not replace it. The window's e2e histogram gets it too.
func TestE2EZeroThenLater(t *testing.T) {
	ms := time.Millisecond
	live := func(lat time.Duration) ev {
		return ev{ledger.LiveRead, ledger.Event{Producer: 0, Seq: 0, Time: int64(lat), Status: uint8(message.Valid)}}
	}
	r := judge(t, true, true, Options{Window: time.Second}, send(0, 0, 0), ack(0, 0, 0, 0, ms), read(0, 0, 0, 0), live(0), live(5*ms))
	if r.E2E.Count != 1 || r.E2E.Max > 0.001 { // histograms start at 1 µs
		t.Fatalf("e2e %+v, want one value of 0 (1 µs, the histograms' least)", r.E2E)
	}
	if len(r.Windows) != 1 || r.Windows[0].E2E.Count != 1 || r.Hist.E2E[0].TotalCount() != 1 {
		t.Fatalf("window e2e %+v, want one value", r.Windows)
	}
}

// ReadBack stores what it found, for Check and for a later verify.
func TestReadBackStoresItsReport(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &spyTopic{ends: map[int32]int64{0: 9, 1: 2}}
	rep, err := ReadBack(context.Background(), d, l, ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 5, 1: 4})}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stored ReadBackReport
	if err := l.GetMeta(MetaReadBack, &stored); err != nil {
		t.Fatalf("no read-back report stored: %v", err)
	}
	if !stored.Complete || stored.Ends.Map()[0] != 9 || stored.Ends.Map()[1] != 2 || stored.Notes[1] != rep.Notes[1] || rep.Notes[1] == "" {
		t.Fatalf("stored %+v, returned %+v", stored, rep)
	}
}
