package load

import (
	"sync"
	"sync/atomic"
	"time"
)

// Outcome deadlines are enforced here, not left to the client library: a
// library may hold a send past its own timeout for as long as the broker
// holds its connection (a SIGSTOPped Kafka broker kept 3,512 sends in
// flight for 50 s past a 30 s delivery.timeout.ms), and the run, its drain
// and its Ctrl-C would wait with it. Each producer keeps its sends awaiting
// an outcome in send order; a sweeper gives every one still unanswered
// Config.OutcomeTimeout after it was sent the outcome Unknown. Exactly one
// outcome is recorded per send: whichever of the answer and the sweeper
// claims the flight first; a later answer is counted as late and dropped.
//
// Cost: one mutex-guarded append per send (the flights live in slabs of
// flightSlab, so no allocation per message) and a sweep of the oldest
// flights every sweepEvery.

const (
	flightSlab = 1024
	sweepEvery = 100 * time.Millisecond
)

const (
	flightPending uint32 = iota
	flightAnswered
	flightTimedOut
)

// flight is one send awaiting its outcome.
type flight struct {
	seq      uint64
	intended int64 // Unix ns
	sent     int64 // Unix ns: when it was handed to the driver
	state    atomic.Uint32
}

// claim makes the caller the one that records this flight's outcome.
func (f *flight) claim(as uint32) bool { return f.state.CompareAndSwap(flightPending, as) }

// flights is one producer's sends awaiting an outcome, oldest first.
type flights struct {
	mu    sync.Mutex
	slabs []*[flightSlab]flight
	head  int // first flight of slabs[0] not yet passed by the sweeper
	tail  int // flights used in the last slab
}

// add appends a send and returns its flight.
func (fl *flights) add(seq uint64, intended, sent int64) *flight {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if len(fl.slabs) == 0 || fl.tail == flightSlab {
		fl.slabs = append(fl.slabs, new([flightSlab]flight))
		fl.tail = 0
	}
	f := &fl.slabs[len(fl.slabs)-1][fl.tail]
	fl.tail++
	f.seq, f.intended, f.sent = seq, intended, sent
	return f
}

// expire claims, oldest first, every pending flight sent before cutoff
// and calls timedOut for each; it stops at the first pending flight that
// is younger. Answered flights are passed over and their slabs let go.
func (fl *flights) expire(cutoff int64, timedOut func(*flight)) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for len(fl.slabs) > 0 {
		last := len(fl.slabs) == 1
		if last && fl.head >= fl.tail {
			return
		}
		f := &fl.slabs[0][fl.head]
		if f.state.Load() == flightPending {
			if f.sent >= cutoff {
				return
			}
			if f.claim(flightTimedOut) {
				timedOut(f)
			}
		}
		fl.head++
		if fl.head == flightSlab {
			fl.slabs[0] = nil
			fl.slabs = fl.slabs[1:]
			fl.head = 0
			if len(fl.slabs) == 0 {
				fl.tail = 0
			}
		}
	}
}
