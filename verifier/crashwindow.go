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
//     window reaches, yet within the schedule. The window opens at the
//     later of the last committed flush's take and the producer's first
//     send the ledger lacks (every event a crash loses was recorded after
//     both), and lasts a flush interval, two commits and some slack
//     (ledger.FlushClock.CrashWindow): the next flush would have
//     committed the rest. A crash cannot explain a send past it; a ledger
//     cut back by more than a crash (its last flushes gone) can. It makes
//     the ledger unproven: no PASS rests on it, and the broker is not
//     blamed either. (A producer whose first lost send was recorded late,
//     behind its schedule, can have later sends past the window: its
//     ledger reads unproven where it is only crashed, a run already
//     aborted for its crash.)
//   - a phantom: a clean ledger lacks no send, and no schedule sends a
//     sequence number or at a time beyond its own (a forged record, or
//     another writer using this run's ID). Fails the verdict.
//
// Each producer's sends are numbered in order, so a sequence below the
// ledger's highest committed send of that producer was really recorded,
// and a read of one the ledger lacks is a phantom however the run ended.
//
// The window is held by time rather than by a count of the in-flight
// bound: a producer records its sends in order, and a paced one's
// sequence j was meant for no earlier than its j-th slot (less a pacing
// window), so a sequence number too can place a send past the window.

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
	// taken is when the last committed flush took its events, width the
	// crash window's length (zero: no flush clock, not bounded).
	taken time.Time
	width time.Duration
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
	s.taken, s.width = time.Unix(0, c.TakenNs), c.CrashWindow(run.Plan.FlushInterval)
	return s, nil
}

// place says what a read of (producer, seq), carrying the intended send
// time intendedNs, is when the ledger holds no send of it, given sentThru,
// one past the producer's highest committed send. Reads of one producer
// come in sequence order; first is the time place returned for the
// producer's first such read within the schedule (0 before it), which
// opens its window, and sendNs is the time this one is placed at, for
// the caller to keep as first.
func (w *crashWindow) place(producer uint32, seq, sentThru uint64, intendedNs, first int64) (c windowClass, sendNs int64) {
	for _, s := range w.segs {
		if producer >= s.lo && producer < s.hi {
			return s.place(producer-s.lo, seq, sentThru, intendedNs, first)
		}
	}
	return beyondSchedule, 0 // a producer no ledger of the run has
}

func (s crashSegment) place(k uint32, seq, sentThru uint64, intendedNs, first int64) (windowClass, int64) {
	if s.clean || seq < sentThru {
		return beyondSchedule, 0
	}
	p := s.plan
	if p == nil {
		return inWindow, intendedNs // a run from before plans: as ackcheck always judged it
	}
	n := uint64(s.hi - s.lo)
	total := uint64(max(p.Scheduled, 0))
	if uint64(k) >= total || seq >= (total-uint64(k)+n-1)/n {
		return beyondSchedule, 0 // more sends of this producer than the schedule holds
	}
	t := time.Unix(0, intendedNs)
	earliest := t
	if !p.Unpaced && p.Rate > 0 {
		// A paced send is meant for a slot of the schedule: sequence seq
		// of producer k for slot k+n*seq or a later one (shed slots take
		// no sequence number).
		interval := float64(time.Second) / p.Rate
		if t.Before(s.start.Add(-scheduleSlack)) || t.After(s.start.Add(p.Duration+scheduleSlack)) {
			return beyondSchedule, 0
		}
		slot := s.start.Add(time.Duration(float64(uint64(k)+n*seq)*interval) - pacingWindow)
		if slot.After(earliest) {
			earliest = slot
		}
	} else if t.Before(s.start.Add(-scheduleSlack)) {
		return beyondSchedule, 0
	}
	if s.width == 0 {
		return inWindow, earliest.UnixNano()
	}
	open := s.taken
	switch {
	case first != 0:
		if f := time.Unix(0, first); f.After(open) {
			open = f
		}
	case earliest.After(open):
		// The producer's first send the ledger lacks opens its window. It
		// came at most a schedule interval after the last event the
		// ledger holds (plus a stall, when no event came at all), or a
		// flush would have taken an event between.
		if earliest.After(s.taken.Add(time.Duration(float64(time.Second)/p.Rate) + stallAllowance + s.width)) {
			return pastWindow, earliest.UnixNano()
		}
		open = earliest
	}
	if earliest.After(open.Add(s.width)) {
		return pastWindow, earliest.UnixNano()
	}
	return inWindow, earliest.UnixNano()
}

// pacingWindow is how early a paced send may go (load's pacing window),
// timed from its send.
const pacingWindow = time.Millisecond

// stallAllowance is how long the load may record no event at all (a
// broker that answers nothing while every send due is shed) before the
// first send a crash lost: a first lost send later than the last flush by
// more than this, a schedule interval and the window is past the window.
const stallAllowance = time.Second

// pastWindowWhy is the ledger's unproven reason when n reads fell past
// the crash window.
func (w *crashWindow) pastWindowWhy(n int64) string {
	var taken time.Time
	var width time.Duration
	for _, s := range w.segs {
		if s.taken.After(taken) {
			taken, width = s.taken, s.width
		}
	}
	return fmt.Sprintf("%d messages read back were sent more than %s (the ledger's crash window: a flush interval and two commits) after the ledger's last flush (%s) "+
		"and after the first send it lacks, and the ledger holds none of their sends: it lacks more than a crash of ackcheck explains, as if its last flushes were cut away, so the acks of that time cannot be checked",
		n, width.Round(time.Millisecond), taken.UTC().Format(time.RFC3339Nano))
}
