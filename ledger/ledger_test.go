package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func scanAll(t *testing.T, l *Ledger, k Kind) []Event {
	t.Helper()
	c, err := l.Scan(k)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []Event
	for {
		e, ok := c.Next()
		if !ok {
			break
		}
		out = append(out, e)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scanRuns is scanAll by NextRun, each run copied before the next call
// (as the merge reads it), with the number of runs.
func scanRuns(t *testing.T, l *Ledger, k Kind) (out []Event, runs int) {
	t.Helper()
	c, err := l.Scan(k)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		run, ok := c.NextRun()
		if !ok {
			break
		}
		if len(run) == 0 {
			t.Fatal("NextRun returned an empty run")
		}
		out = append(out, run...)
		runs++
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	return out, runs
}

func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int {
		if a.Producer != b.Producer {
			return int(a.Producer) - int(b.Producer)
		}
		return cmpSeq(a, b)
	})
}

// Events recorded out of order, across many flushes, come back sorted by
// (producer, seq) with every field intact: the merge over overlapping
// fragments is what every verdict relies on.
func TestScanMergesOverlappingFragments(t *testing.T) {
	tests := []struct {
		name       string
		producers  int
		perProd    int
		flushEvery int
		disorder   int // how far an outcome may straggle behind
	}{
		{"in order, one flush", 3, 10000, 0, 0},
		{"in order, many flushes", 2, 20000, 997, 0},
		{"stragglers across flushes", 4, 20000, 1500, 5000},
		{"heavy disorder", 1, 30000, 300, 30000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			var want []Event
			for p := 0; p < tc.producers; p++ {
				for s := 0; s < tc.perProd; s++ {
					want = append(want, Event{
						Producer:  uint32(p),
						Seq:       uint64(s),
						Partition: int32(rng.IntN(16)),
						Offset:    rng.Int64N(1 << 40),
						Time:      rng.Int64() - 1<<62,
						Status:    uint8(rng.IntN(4)),
					})
				}
			}
			order := slices.Clone(want)
			// Displace each event by up to tc.disorder positions.
			for i := range order {
				if tc.disorder > 0 {
					j := min(len(order)-1, i+rng.IntN(tc.disorder))
					order[i], order[j] = order[j], order[i]
				}
			}
			for i, e := range order {
				if err := l.Record(Outcome, e); err != nil {
					t.Fatal(err)
				}
				if tc.flushEvery > 0 && i%tc.flushEvery == 0 {
					if err := l.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			sortEvents(want)
			byRuns, runs := scanRuns(t, l, Outcome)
			for how, got := range map[string][]Event{"Next": scanAll(t, l, Outcome), "NextRun": byRuns} {
				if len(got) != len(want) {
					t.Fatalf("%s: got %d events, want %d", how, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: event %d: got %+v, want %+v", how, i, got[i], want[i])
					}
				}
			}
			// In order, a run is the rest of a fragment: NextRun must
			// not fall back to one event at a time where nothing
			// overlaps.
			if tc.disorder == 0 {
				if fragments := tc.producers * (1 + tc.perProd/max(1, tc.flushEvery)) * 2; runs > fragments {
					t.Errorf("%d runs for %d events in order, in at most %d fragments", runs, len(want), fragments)
				}
			}
			t.Logf("%d events in %d runs", len(want), runs)
			if n := len(scanAll(t, l, Send)); n != 0 {
				t.Fatalf("kinds leak: %d sends", n)
			}
		})
	}
}

// Copies of one ID (a duplicate read back twice) spread over overlapping
// fragments all come back, by Next and by NextRun, next to each other in
// (producer, seq) order: the verdict counts duplicates from them.
func TestScanKeepsEveryCopy(t *testing.T) {
	l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var want []Event
	for p := range 3 {
		for s := range 5000 {
			for c := range 1 + rng.IntN(3) {
				want = append(want, Event{Producer: uint32(p), Seq: uint64(s), Offset: int64(c), Partition: int32(rng.IntN(16))})
			}
		}
	}
	order := slices.Clone(want)
	rng.Shuffle(len(order), func(i, j int) {
		if j-i < 2000 && i-j < 2000 { // stragglers, not a full shuffle
			order[i], order[j] = order[j], order[i]
		}
	})
	for i, e := range order {
		l.Record(Read, e)
		if i%700 == 0 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	byRuns, _ := scanRuns(t, l, Read)
	cmp := func(a, b Event) int {
		if a.Producer != b.Producer {
			return int(a.Producer) - int(b.Producer)
		}
		if a.Seq != b.Seq {
			return cmpSeq(a, b)
		}
		return int(a.Offset - b.Offset)
	}
	for how, got := range map[string][]Event{"Next": scanAll(t, l, Read), "NextRun": byRuns} {
		for i := 1; i < len(got); i++ {
			if a, b := got[i-1], got[i]; a.Producer > b.Producer || (a.Producer == b.Producer && a.Seq > b.Seq) {
				t.Fatalf("%s: event %d (%d/%d) after (%d/%d)", how, i, b.Producer, b.Seq, a.Producer, a.Seq)
			}
		}
		got = slices.Clone(got)
		slices.SortFunc(got, cmp)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d events came back, %d recorded, or not the same ones", how, len(got), len(want))
		}
	}
}

// The durability contract of the package doc: after a crash that keeps only
// synced data, every event of a completed Flush is there, and nothing else
// is half there.
func TestCrashKeepsExactlyTheFlushedEvents(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l, err := Open("ledger", Options{FS: fs, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for s := uint64(0); s < 5000; s++ {
		l.Record(Send, Event{Producer: 1, Seq: s, Time: int64(s)})
		l.Record(Outcome, Event{Producer: 1, Seq: s, Status: OutcomeAcked, Offset: int64(s)})
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for s := uint64(5000); s < 6000; s++ { // recorded, never flushed
		l.Record(Send, Event{Producer: 1, Seq: s})
		l.Record(Outcome, Event{Producer: 1, Seq: s, Status: OutcomeAcked})
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	l.Close()

	l2, err := Open("ledger", Options{FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for _, k := range []Kind{Send, Outcome} {
		evs := scanAll(t, l2, k)
		if len(evs) != 5000 || evs[len(evs)-1].Seq != 4999 {
			t.Fatalf("kind %c after crash: %d events", k, len(evs))
		}
	}
	if st := l2.SentThrough(); st[1] != 5000 {
		t.Fatalf("SentThrough after crash = %v, want 5000", st)
	}
}

func TestBackgroundFlushAndMeta(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(Read, Event{Producer: 7, Seq: 3, Partition: 2, Offset: 9})
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := l.Count(context.Background(), Read, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("background flush never committed the event")
		}
		time.Sleep(5 * time.Millisecond)
	}
	type info struct{ A string }
	if err := l.PutMeta("x", info{"b"}); err != nil {
		t.Fatal(err)
	}
	var got info
	if err := l.GetMeta("x", &got); err != nil || got.A != "b" {
		t.Fatalf("GetMeta = %+v, %v", got, err)
	}
	if err := l.GetMeta("missing", &got); err != ErrNoMeta {
		t.Fatalf("missing meta: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening continues fragment numbering: new fragments never overwrite.
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(Read, Event{Producer: 7, Seq: 3})
	l.Record(Read, Event{Producer: 7, Seq: 3})
	l.Flush()
	l.Record(Read, Event{Producer: 7, Seq: 3})
	l.Flush()
	if n, _ := l.Count(context.Background(), Read, nil); n != 4 {
		t.Fatalf("%d reads, want the first session's and these 3", n)
	}
}

func TestOpenBusyDirSaysWhy(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("second Open of a ledger in use succeeded")
	}
}

// A committed outcome always has its send committed, although sends and
// outcomes are recorded by different goroutines (the load's and the client
// library's) and a flush takes one kind at a time: here a message is sent
// and acked while a flush is between two takes, at each point. Taking sends
// before outcomes (as flushOrder{0, 1, 2, 3} would) commits the outcome
// without its send, and this fails.
func TestNoOutcomeCommittedWithoutItsSend(t *testing.T) {
	for after := range len(kinds) {
		t.Run(strconv.Itoa(after), func(t *testing.T) {
			l, err := Open(t.TempDir(), Options{FlushInterval: time.Hour, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			l.Record(Send, Event{Producer: 1, Seq: 0}) // the shard exists before the flush
			taken := 0
			l.tookKind = func() {
				if taken++; taken == after+1 {
					l.Record(Send, Event{Producer: 1, Seq: 1})
					l.Record(Outcome, Event{Producer: 1, Seq: 1, Status: OutcomeAcked})
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			l.tookKind = nil
			sent := make(map[uint64]bool)
			for _, e := range scanAll(t, l, Send) {
				sent[e.Seq] = true
			}
			for _, e := range scanAll(t, l, Outcome) {
				if !sent[e.Seq] {
					t.Fatalf("outcome of seq %d committed without its send", e.Seq)
				}
			}
		})
	}
}

// TestLedgerIsNotRewritten: a ledger of many memtables' worth of events
// stays as the tables its flushes wrote (writeOnce): Pebble's defaults
// compact level 0 at 4 tables, and each compaction rewrote much of the
// ledger written so far (this test fails with them). Reopened, a scan of the many overlapping tables gives
// every event back, in order, with its fields.
func TestLedgerIsNotRewritten(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{FlushInterval: time.Hour, NoSync: true, memTableSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const producers, perProducer = 4, 150_000
	for seq := uint64(0); seq < perProducer; seq++ {
		for p := uint32(0); p < producers; p++ {
			if err := l.Record(Outcome, Event{Producer: p, Seq: seq, Status: OutcomeAcked, Partition: int32(seq % 16),
				Offset: int64(seq / 16), Time: int64(seq*7919%1_000_003) + int64(p)}); err != nil {
				t.Fatal(err)
			}
		}
		if seq%10_000 == 9_999 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, Options{NoSync: true, memTableSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := l.db.Metrics()
	if m.Levels[0].TablesCount < 8 {
		t.Fatalf("level 0 holds %d tables: too few memtables were flushed for this test to mean anything", m.Levels[0].TablesCount)
	}
	if m.Compact.Count != 0 {
		t.Errorf("%d compactions rewrote the ledger (level 0 holds %d tables)", m.Compact.Count, m.Levels[0].TablesCount)
	}
	c, err := l.Scan(Outcome)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for p := uint32(0); p < producers; p++ {
		for seq := uint64(0); seq < perProducer; seq++ {
			e, ok := c.Next()
			want := Event{Producer: p, Seq: seq, Status: OutcomeAcked, Partition: int32(seq % 16),
				Offset: int64(seq / 16), Time: int64(seq*7919%1_000_003) + int64(p)}
			if !ok || e != want {
				t.Fatalf("event %d: %+v (ok %v), want %+v", n, e, ok, want)
			}
			n++
		}
	}
	if e, ok := c.Next(); ok {
		t.Fatalf("an event after the last: %+v", e)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events read back from %d level-0 tables, %d compactions", n, m.Levels[0].TablesCount, m.Compact.Count)
}

// The flush clock a crash leaves says when the last committed flush took
// its events: every event recorded before that moment survived, and every
// one the crash took was recorded after it (what the verifier's crash
// window is held to). The longest commit so far is carried from flush to
// flush.
func TestFlushClockBoundsACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l, err := Open("ledger", Options{FS: fs, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.FlushClock(); !errors.Is(err, ErrNoMeta) {
		t.Fatalf("a ledger never flushed has a flush clock: %v", err)
	}
	for s := uint64(0); s < 100; s++ {
		l.Record(Send, Event{Producer: 1, Seq: s})
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	beforeLast := time.Now().UnixNano()
	l.Record(Send, Event{Producer: 1, Seq: 100})
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	afterLast := time.Now().UnixNano()
	l.Record(Send, Event{Producer: 1, Seq: 101}) // recorded after the last take, never flushed
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	l.Close()

	l2, err := Open("ledger", Options{FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	c, err := l2.FlushClock()
	if err != nil {
		t.Fatal(err)
	}
	if c.TakenNs < beforeLast || c.TakenNs > afterLast {
		t.Fatalf("the last flush took its events at %d, outside its Flush call (%d to %d)", c.TakenNs, beforeLast, afterLast)
	}
	if c.LongestCommitNs <= 0 {
		t.Fatalf("longest commit %d after one committed flush before the last", c.LongestCommitNs)
	}
	if st := l2.SentThrough(); st[1] != 101 {
		t.Fatalf("sent through %v, want 101", st)
	}
	if w, want := c.CrashWindow(50*time.Millisecond), 50*time.Millisecond+2*time.Duration(c.LongestCommitNs)+crashSlack; w != want {
		t.Fatalf("window %v, want %v", w, want)
	}
}
