package ledger

import (
	"path/filepath"
	"testing"
)

// A run's group deliveries and acknowledged commits are recorded beside
// its sends and acks: they come back after a reopen, each kind its own
// stream with every field, and the ledger holding them is proven whole.
func TestGroupEventsKeptAndProven(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sends := []Event{{Producer: 0, Seq: 0, Time: 10}, {Producer: 0, Seq: 1, Time: 20}}
	dels := []Event{
		{Producer: 0, Seq: 1, Partition: 2, Offset: 41, Time: 1_000, Status: 3},
		{Producer: 0, Seq: 0, Partition: 2, Offset: 40, Time: 900, Status: 3},
		{Producer: 0, Seq: 0, Partition: 2, Offset: 40, Time: 2_000, Status: 1}, // delivered again
	}
	commits := []Event{
		{Producer: CommitProducer, Seq: 0, Partition: 2, Offset: 42, Time: 1_100, Status: 3},
		{Producer: CommitProducer, Seq: 1, Partition: 5, Offset: 7, Time: 1_200, Status: 1},
	}
	for _, e := range sends {
		l.Record(Send, e)
	}
	for _, e := range dels {
		l.Record(Delivery, e)
	}
	for _, e := range commits {
		l.Record(Commit, e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, Options{})
	if err != nil {
		t.Fatalf("a ledger with group events is not proven whole: %v", err)
	}
	defer ro.Close()
	if p := ro.Proof(); !p.Whole {
		t.Fatalf("proof: %+v", p)
	}
	got := scanAll(t, ro, Delivery)
	if len(got) != 3 || got[0].Seq != 0 || got[2].Seq != 1 || got[2].Offset != 41 || got[2].Status != 3 {
		t.Fatalf("deliveries back: %+v", got)
	}
	if got[0].Time+got[1].Time != 2_900 {
		t.Fatalf("both deliveries of seq 0 must come back: %+v", got)
	}
	gc := scanAll(t, ro, Commit)
	if len(gc) != 2 || gc[0] != commits[0] || gc[1] != commits[1] {
		t.Fatalf("commits back: %+v, want %+v", gc, commits)
	}
	if s := scanAll(t, ro, Send); len(s) != 2 {
		t.Fatalf("sends: %+v", s)
	}
	if st := ro.SentThrough(); st[CommitProducer] != 0 {
		t.Fatalf("commits are no sends: sent-through %v", st)
	}
}
