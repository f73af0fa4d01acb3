package verifier

import (
	"errors"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
)

// A read of this run's message whose send the ledger does not hold is one
// of three things:
//
//   - unrecorded: the load's ackcheck died, and the send was recorded in
//     memory after the ledger's last committed flush took its events and
//     before the next could commit it (the ledger package doc's crash
//     window). Allowed: nothing the ledger holds is judged by it.
//   - past the window: the send was meant for later than the crash
//     window ends (the last flush's take, a flush interval, two commits
//     and some slack: ledger.FlushClock.CrashWindowEnd), yet within the
//     schedule. A crash cannot explain it; a ledger cut back by more than
//     a crash (its last flushes gone) can. It makes the ledger unproven:
//     no PASS rests on it, and the broker is not blamed either.
//   - a phantom: a clean ledger lacks no send, and no schedule sends a
//     sequence number or at a time beyond its own (a forged record, or
//     another writer using this run's ID). Fails the verdict.
//
// Each producer's sends are numbered in order, so a sequence below the
// ledger's highest committed send of that producer was really recorded,
// and a read of one the ledger lacks is a phantom however the run ended.
//
// The window is held by time rather than by a count of the in-flight
// bound: a paced producer records its sends in schedule order, so
// sequence j was meant for no earlier than its j-th slot, and a send
// recorded after the crash window's end never reached the broker.

// scheduleSlack is how far outside the schedule's span a send time may
// lie and still be the schedule's: a paced send may go a pacing window
// early and is then timed from its send. A send time further out is no
// send of this run's load.
const scheduleSlack = time.Second

// windowClass is what a read without a recorded send is.
type windowClass int

const (
	inWindow windowClass = iota
	pastWindow
	beyondSchedule
)

// crashSegment is the crash window of one ledger's producers,
// [lo, hi): the run's own, or one shard's of a sharded run.
type crashSegment struct {
	lo, hi uint32
	clean  bool
	plan   *ledger.Plan // nil: recorded before plans were kept
	start  time.Time    // the schedule's start
	end    time.Time    // the crash window's end; zero: not known
}

// crashWindow holds every segment of the run.
type crashWindow struct {
	segs []crashSegment
}

// segmentOf describes the ledger l of a run (or of one shard) whose
// producers are [lo, lo+run.Producers).
func segmentOf(l *ledger.Ledger, run ledger.RunInfo, lo uint32) (crashSegment, error) {
	s := crashSegment{lo: lo, hi: lo + uint32(run.Producers), clean: run.Clean, plan: run.Plan, start: run.LoadStart}
	if run.Clean || run.Plan == nil {
		return s, nil
	}
	c, err := l.FlushClock()
	switch {
	case errors.Is(err, ledger.ErrNoMeta):
		return s, nil
	case err != nil:
		return s, err
	}
	s.end = c.CrashWindowEnd(run.Plan.FlushInterval)
	return s, nil
}

// place says what a read of (producer, seq), carrying the intended send
// time intendedNs, is when the ledger holds no send of it, given sentThru,
// one past the producer's highest committed send.
func (w *crashWindow) place(producer uint32, seq, sentThru uint64, intendedNs int64) windowClass {
	for _, s := range w.segs {
		if producer >= s.lo && producer < s.hi {
			return s.place(producer-s.lo, seq, sentThru, intendedNs)
		}
	}
	return beyondSchedule // a producer no ledger of the run has
}

func (s crashSegment) place(k uint32, seq, sentThru uint64, intendedNs int64) windowClass {
	if s.clean || seq < sentThru {
		return beyondSchedule
	}
	p := s.plan
	if p == nil {
		return inWindow // a run from before plans: as ackcheck always judged it
	}
	n := uint64(s.hi - s.lo)
	total := uint64(max(p.Scheduled, 0))
	if uint64(k) >= total || seq >= (total-uint64(k)+n-1)/n {
		return beyondSchedule // more sends of this producer than the schedule holds
	}
	t := time.Unix(0, intendedNs)
	earliest := t
	if !p.Unpaced && p.Rate > 0 {
		// A paced send is meant for a slot of the schedule: sequence seq
		// of producer k for slot k+n*seq or a later one (shed slots take
		// no sequence number).
		interval := float64(time.Second) / p.Rate
		if t.Before(s.start.Add(-scheduleSlack)) || t.After(s.start.Add(p.Duration+scheduleSlack)) {
			return beyondSchedule
		}
		if slot := s.start.Add(time.Duration(float64(uint64(k)+n*seq) * interval)); slot.After(earliest) {
			earliest = slot
		}
	} else if t.Before(s.start.Add(-scheduleSlack)) {
		return beyondSchedule
	}
	if !s.end.IsZero() && earliest.After(s.end) {
		return pastWindow
	}
	return inWindow
}

// pastWindowWhy is the ledger's unproven reason when reads fell past the
// crash window.
func (w *crashWindow) pastWindowWhy(n int64) string {
	var end time.Time
	for _, s := range w.segs {
		if s.end.After(end) {
			end = s.end
		}
	}
	return fmt.Sprintf("%d messages read back were sent after the last point the ledger's crash window reaches (%s, its last flush plus one flush interval and two commits) "+
		"and the ledger holds none of their sends: it lacks more than a crash of ackcheck explains, as if its last flushes were cut away, so the acks of that time cannot be checked",
		n, end.UTC().Format(time.RFC3339Nano))
}
