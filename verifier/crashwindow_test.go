package verifier

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// Issue 35, point 2: a read whose send a killed run's ledger lacks is
// "unrecorded" only where the schedule and the ledger's last flush can
// account for it. Beyond the schedule (a sequence or a send time it never
// had) it is a phantom and fails; within the schedule but after the crash
// window's end it makes the ledger unproven. The audit's forged record
// (sequence 100,000 of a schedule of 1,000 per producer, sent an hour
// after the run) was "unrecorded" and passed.
func TestCrashWindowBoundsUnrecorded(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	// 2 producers, 200 msg/s for 10 s: 1,000 sends each, producer k's
	// sequence j meant for slot k+2j, 5 ms apart.
	plan := &ledger.Plan{Scheduled: 2000, Rate: 200, Duration: 10 * time.Second, FlushInterval: 50 * time.Millisecond}
	// The last flush took its events at 4 s; the window is 150 ms long.
	taken, width := start.Add(4*time.Second), 150*time.Millisecond
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	// Producer 1's ledger holds sends through sequence 399 (slot 799, 3.995 s).
	const sentThru = 400
	firstAt := at(4005 * time.Millisecond) // its first lost send, read back
	tests := []struct {
		name     string
		producer uint32
		seq      uint64
		intended int64
		first    int64
		clean    bool
		noClock  bool
		want     windowClass
	}{
		{"the first send the ledger lacks", 1, 400, at(4005 * time.Millisecond), 0, false, false, inWindow},
		{"a send just before the window ends", 1, 414, at(4145 * time.Millisecond), firstAt, false, false, inWindow},
		{"a send meant after the window ends", 1, 430, at(4305 * time.Millisecond), firstAt, false, false, pastWindow},
		{"an early time claimed for a late sequence", 1, 430, at(4005 * time.Millisecond), firstAt, false, false, pastWindow},
		{"a first lost send long after the last flush", 1, 800, at(8005 * time.Millisecond), 0, false, false, pastWindow},
		{"a first lost send a second after the last flush", 1, 500, at(5005 * time.Millisecond), 0, false, false, inWindow},
		{"a late send of a ledger without a flush clock", 1, 430, at(4305 * time.Millisecond), firstAt, false, true, inWindow},
		{"a sequence the schedule never had", 1, 100_000, at(4005 * time.Millisecond), 0, false, false, beyondSchedule},
		{"the producer's last scheduled sequence", 1, 999, at(9995 * time.Millisecond), 0, false, true, inWindow},
		{"one past its last", 1, 1000, at(9995 * time.Millisecond), 0, false, true, beyondSchedule},
		{"sent an hour after the run", 1, 400, at(time.Hour + 10*time.Second), 0, false, false, beyondSchedule},
		{"sent before the run", 1, 400, at(-2 * time.Second), 0, false, false, beyondSchedule},
		{"sent a pacing window early", 0, 400, at(-time.Millisecond), 0, false, true, inWindow},
		{"below the ledger's committed sends", 1, 399, at(3995 * time.Millisecond), 0, false, false, beyondSchedule},
		{"a producer the run did not have", 2, 400, at(4005 * time.Millisecond), 0, false, false, beyondSchedule},
		{"a clean ledger lacks nothing", 1, 400, at(4005 * time.Millisecond), 0, true, false, beyondSchedule},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := crashSegment{lo: 0, hi: 2, clean: tc.clean, plan: plan, start: start, taken: taken, width: width}
			if tc.noClock {
				seg.taken, seg.width = time.Time{}, 0
			}
			w := crashWindow{segs: []crashSegment{seg}}
			if got, _ := w.place(tc.producer, tc.seq, sentThru, tc.intended, tc.first); got != tc.want {
				t.Fatalf("place = %d, want %d", got, tc.want)
			}
		})
	}
	// A slow schedule (1 msg/s a producer): the ledger's last flush was
	// long before the first send it lacks, which still opens the window.
	slow := &ledger.Plan{Scheduled: 20, Rate: 2, Duration: 10 * time.Second, FlushInterval: 50 * time.Millisecond}
	w := crashWindow{segs: []crashSegment{{hi: 2, plan: slow, start: start, taken: start.Add(4050 * time.Millisecond), width: width}}}
	if got, _ := w.place(1, 5, 5, at(5500*time.Millisecond), 0); got != inWindow {
		t.Errorf("slow schedule, the next send 1.45 s after the last flush: place = %d, want in the window", got)
	}
	// An unpaced load has no slots: only its start and the window bound it.
	unpaced := *plan
	unpaced.Unpaced = true
	w = crashWindow{segs: []crashSegment{{hi: 2, plan: &unpaced, start: start, taken: taken, width: width}}}
	for _, c := range []struct {
		intended, first int64
		want            windowClass
	}{{at(4100 * time.Millisecond), 0, inWindow}, {at(4200 * time.Millisecond), at(4000 * time.Millisecond), pastWindow}, {at(-1100 * time.Millisecond), 0, beyondSchedule}} {
		if got, _ := w.place(1, 430, sentThru, c.intended, c.first); got != c.want {
			t.Errorf("unpaced, sent at %v: place = %d, want %d", time.Unix(0, c.intended).Sub(start), got, c.want)
		}
	}
}

// The classifier counts each kind where the window puts it (the first
// read without a recorded send opens its producer's window), and a read
// past the window leaves the verdict unproven, not PASS, naming the last
// flush; a phantom fails it.
func TestCrashWindowInTheVerdict(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	plan := &ledger.Plan{Scheduled: 2000, Rate: 200, Duration: 10 * time.Second, FlushInterval: 50 * time.Millisecond}
	run := ledger.RunInfo{RunID: 1, Producers: 2, Plan: plan, LoadStart: start}
	valid := func(intended time.Duration) ledger.Event {
		return ledger.Event{Partition: 0, Offset: 1, Status: uint8(message.Valid), Time: start.Add(intended).UnixNano()}
	}
	type read struct {
		seq      uint64
		intended time.Duration
	}
	for _, tc := range []struct {
		name                       string
		reads                      []read
		unrecorded, past, phantoms int64
		verdict                    string
	}{
		{"in the window", []read{{400, 4005 * time.Millisecond}, {410, 4105 * time.Millisecond}}, 2, 0, 0, Pass},
		{"past the window", []read{{400, 4005 * time.Millisecond}, {430, 4305 * time.Millisecond}}, 2, 1, 0, Unproven},
		{"beyond the schedule", []read{{100_000, 4005 * time.Millisecond}}, 0, 0, 1, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Samples: map[string][]Sample{}, Sent: 1, Acked: 1, ReadBackComplete: true}
			c := newClassifier(res, run, map[uint32]uint64{1: 400}, 10)
			c.window.segs[0].taken, c.window.segs[0].width = start.Add(4*time.Second), 150*time.Millisecond
			for _, r := range tc.reads {
				c.add(&history{producer: 1, seq: r.seq, reads: []ledger.Event{valid(r.intended)}})
			}
			if res.Unrecorded != tc.unrecorded || res.UnrecordedPastWindow != tc.past || res.Phantom != tc.phantoms {
				t.Fatalf("unrecorded %d (past the window %d), phantom %d; want %d (%d), %d", res.Unrecorded, res.UnrecordedPastWindow, res.Phantom, tc.unrecorded, tc.past, tc.phantoms)
			}
			if res.UnrecordedPastWindow > 0 {
				res.unprove(c.window.pastWindowWhy(res.UnrecordedPastWindow))
			}
			applyVerdict(res, Options{})
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %v", res.Verdict, tc.verdict, res.Reasons)
			}
			if tc.past > 0 && !strings.Contains(strings.Join(res.Reasons, "; "), "last flush (2027-01-15T08:00:04Z)") {
				t.Fatalf("the reason does not name the last flush: %v", res.Reasons)
			}
		})
	}
}
