package verifier

import (
	"errors"
	"fmt"

	"github.com/ackcheck/ackcheck/ledger"
)

// Stage 1 of Check: merge. The ledger keeps Send, Outcome, Read and
// LiveRead events as four streams, each sorted by (producer, sequence).
// One pass merges them into a history per message ID, smallest ID first,
// holding only the current ID's events: memory does not grow with the run.

// history is everything the ledger holds about one message ID.
type history struct {
	producer uint32
	seq      uint64
	sent     bool
	send     ledger.Event // the Send, when sent
	acked    bool
	ack      ledger.Event // the acked Outcome, when acked
	outcome  uint8        // the last Outcome status recorded; 0: none
	reads    []ledger.Event
	e2e      int64 // earliest live read's end-to-end latency (ns); -1: none
}

// stream is one kind's cursor, read a run at a time (Cursor.NextRun).
type stream struct {
	c    cursor
	run  []ledger.Event // head and the events after it in the current run
	head ledger.Event
	ok   bool
}

func (s *stream) next() {
	if len(s.run) > 1 {
		s.run = s.run[1:]
		s.head = s.run[0]
		return
	}
	if s.run, s.ok = s.c.NextRun(); s.ok {
		s.head = s.run[0]
	}
}

func (s *stream) at(p uint32, seq uint64) bool {
	return s.ok && s.head.Producer == p && s.head.Seq == seq
}

func (s *stream) before(p uint32, seq uint64) bool {
	return s.ok && (s.head.Producer < p || (s.head.Producer == p && s.head.Seq < seq))
}

// merger walks the four streams in ID order.
type merger struct {
	sends, outs, reads, lives stream
}

func openMerger(src *runSource, reads *ledger.Ledger) (*merger, error) {
	readScan := func(k ledger.Kind) (cursor, error) { return reads.Scan(k) }
	m := &merger{}
	for _, s := range []struct {
		from func(ledger.Kind) (cursor, error)
		k    ledger.Kind
		to   *stream
	}{{src.scan, ledger.Send, &m.sends}, {src.scan, ledger.Outcome, &m.outs}, {readScan, ledger.Read, &m.reads}, {src.scan, ledger.LiveRead, &m.lives}} {
		c, err := s.from(s.k)
		if err != nil {
			m.close()
			return nil, err
		}
		s.to.c = c
		s.to.next()
	}
	return m, nil
}

// next fills h with the next ID's history (reusing h.reads) and reports
// whether there was one. An ID appears when any of Send, Outcome or Read
// holds it; live reads only add their latency.
func (m *merger) next(h *history) bool {
	found := false
	for _, s := range []*stream{&m.sends, &m.outs, &m.reads} {
		if s.ok && (!found || s.head.Producer < h.producer || (s.head.Producer == h.producer && s.head.Seq < h.seq)) {
			h.producer, h.seq, found = s.head.Producer, s.head.Seq, true
		}
	}
	if !found {
		return false
	}
	p, seq := h.producer, h.seq
	h.sent, h.acked, h.outcome, h.e2e = m.sends.at(p, seq), false, 0, -1
	for m.sends.at(p, seq) {
		h.send = m.sends.head
		m.sends.next()
	}
	for m.outs.at(p, seq) {
		if m.outs.head.Status == ledger.OutcomeAcked {
			h.acked, h.ack = true, m.outs.head
		}
		h.outcome = m.outs.head.Status
		m.outs.next()
	}
	h.reads = h.reads[:0]
	for m.reads.at(p, seq) {
		h.reads = append(h.reads, m.reads.head)
		m.reads.next()
	}
	for m.lives.before(p, seq) {
		m.lives.next()
	}
	for m.lives.at(p, seq) {
		if h.e2e < 0 || m.lives.head.Time < h.e2e {
			h.e2e = m.lives.head.Time
		}
		m.lives.next()
	}
	return true
}

// err is the first scan error, damage reported as such.
func (m *merger) err() error {
	for _, s := range []*stream{&m.sends, &m.outs, &m.reads, &m.lives} {
		if s.c == nil {
			continue
		}
		if err := s.c.Err(); err != nil {
			if errors.Is(err, ledger.ErrDamaged) {
				return err
			}
			return fmt.Errorf("scan ledger: %w (the ledger is damaged)", err)
		}
	}
	return nil
}

func (m *merger) close() {
	for _, s := range []*stream{&m.sends, &m.outs, &m.reads, &m.lives} {
		if s.c != nil {
			s.c.Close()
		}
	}
}
