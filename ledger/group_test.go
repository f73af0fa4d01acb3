package ledger

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
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

// A member records a poll's deliveries before the commit that covers
// them, from another goroutine than the flush's: here both are recorded
// while a flush is between two takes, at each point. A commit must never
// be committed without the delivery recorded before it (a crash would
// then make the message look skipped). Taking the commits' shard after a
// producer's (map order, as before) fails this.
func TestNoCommitWithoutItsDeliveries(t *testing.T) {
	for after := range 2 * len(kinds) {
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// Both shards exist before the flush.
			l.Record(Delivery, Event{Producer: 1, Seq: 0, Offset: 0})
			l.Record(Commit, Event{Producer: CommitProducer, Seq: 0, Offset: 1})
			taken := 0
			l.tookKind = func() {
				if taken++; taken == after+1 {
					l.Record(Delivery, Event{Producer: 1, Seq: 1, Offset: 1})
					l.Record(Commit, Event{Producer: CommitProducer, Seq: 1, Offset: 2})
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			l.tookKind = nil
			dels := scanAll(t, l, Delivery)
			for _, c := range scanAll(t, l, Commit) {
				if int64(len(dels)) < c.Offset {
					t.Fatalf("commit to offset %d committed with %d deliveries", c.Offset, len(dels))
				}
			}
		})
	}
}
