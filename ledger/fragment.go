package ledger

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// encodeFragment packs events sorted by Seq. Layout: uvarint count, then per
// event: uvarint seq delta, status byte, varint partition, varint offset
// delta, varint time delta (deltas from the previous event, zero before the
// first). Typical size: 8 to 14 bytes per event.
func encodeFragment(dst []byte, evs []Event) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(evs)))
	prevSeq, prevOff, prevTime := evs[0].Seq, int64(0), int64(0)
	for _, e := range evs {
		dst = binary.AppendUvarint(dst, e.Seq-prevSeq)
		dst = append(dst, e.Status)
		dst = binary.AppendVarint(dst, int64(e.Partition))
		dst = binary.AppendVarint(dst, e.Offset-prevOff)
		dst = binary.AppendVarint(dst, e.Time-prevTime)
		prevSeq, prevOff, prevTime = e.Seq, e.Offset, e.Time
	}
	return dst
}

var errBadFragment = errors.New("ledger fragment is damaged")

func decodeFragment(dst []Event, producer uint32, firstSeq uint64, v []byte) ([]Event, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > fragmentMax {
		return nil, errBadFragment
	}
	v = v[k:]
	seq, off, t := firstSeq, int64(0), int64(0)
	for i := uint64(0); i < n; i++ {
		d, k := binary.Uvarint(v)
		if k <= 0 || len(v) < k+1 {
			return nil, errBadFragment
		}
		seq += d
		status := v[k]
		v = v[k+1:]
		part, k1 := binary.Varint(v)
		if k1 <= 0 {
			return nil, errBadFragment
		}
		v = v[k1:]
		do, k2 := binary.Varint(v)
		if k2 <= 0 {
			return nil, errBadFragment
		}
		v = v[k2:]
		dt, k3 := binary.Varint(v)
		if k3 <= 0 {
			return nil, errBadFragment
		}
		v = v[k3:]
		off += do
		t += dt
		dst = append(dst, Event{Producer: producer, Seq: seq, Partition: int32(part), Offset: off, Time: t, Status: status})
	}
	return dst, nil
}

// Cursor yields the events of one kind in (Producer, Seq) order; the order of
// events with equal (Producer, Seq), such as two reads of a duplicate, is
// unspecified.
//
// Fragments are stored in (producer, firstSeq) order. When the cursor opens a
// fragment with first sequence F, no fragment still to come holds a sequence
// below F, so every buffered event below F is final and can be emitted. The
// cursor therefore holds only the fragments whose ranges overlap: one or two
// in a healthy run, a few more when late outcomes straggle in.
type Cursor struct {
	it    *pebble.Iterator
	l     *Ledger
	first bool // it.First not called yet
	open  fragHeap
	err   error
	// next fragment, read ahead of time
	nextProducer uint32
	nextFirst    uint64
	nextEvents   []Event
	haveNext     bool
	free         [][]Event
	// lent is the buffer of the run NextRun returned last, if that run
	// emptied its fragment: it goes back to free on the next call.
	lent []Event
}

type openFrag struct {
	events []Event
	pos    int
}

type fragHeap []*openFrag

func (h fragHeap) Len() int { return len(h) }
func (h fragHeap) Less(i, j int) bool {
	return h[i].events[h[i].pos].Seq < h[j].events[h[j].pos].Seq
}
func (h fragHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fragHeap) Push(x any)   { *h = append(*h, x.(*openFrag)) }
func (h *fragHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Scan returns a cursor over every committed event of kind k. Events still
// buffered in memory are not seen: call Flush first.
func (l *Ledger) Scan(k Kind) (*Cursor, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{byte(k)},
		UpperBound: []byte{byte(k) + 1},
	})
	if err != nil {
		return nil, l.damage("scan ledger", err)
	}
	c := &Cursor{it: it, l: l}
	c.first = true
	c.readAhead()
	if c.err != nil {
		err := c.err
		c.Close()
		return nil, err
	}
	return c, nil
}

// readAhead decodes the next fragment. Every Pebble call of a scan happens
// here, under catch: a table file that fails its checksum ends the scan
// with ErrDamaged (Err) instead of a panic.
func (c *Cursor) readAhead() {
	defer c.l.catch(&c.err)
	if c.first {
		c.first = false
		c.it.First()
	}
	c.haveNext = false
	if c.err != nil || !c.it.Valid() {
		if err := c.it.Error(); err != nil && c.err == nil {
			c.err = c.l.damage("scan ledger", err)
		}
		return
	}
	key := c.it.Key()
	if len(key) != 17 {
		c.err = fmt.Errorf("ledger key %x: %w", key, errBadFragment)
		return
	}
	c.nextProducer = binary.BigEndian.Uint32(key[1:])
	c.nextFirst = binary.BigEndian.Uint64(key[5:])
	var buf []Event
	if n := len(c.free); n > 0 {
		buf, c.free = c.free[n-1][:0], c.free[:n-1]
	}
	evs, err := decodeFragment(buf, c.nextProducer, c.nextFirst, c.it.Value())
	if err != nil {
		c.err = fmt.Errorf("ledger key %x: %w", key, err)
		return
	}
	c.nextEvents = evs
	c.haveNext = true
	c.it.Next()
}

// Next returns the next event, or false at the end or on error (see Err).
func (c *Cursor) Next() (Event, bool) {
	c.reclaimLent()
	c.openOverlapping()
	if c.err != nil || len(c.open) == 0 {
		return Event{}, false
	}
	f := c.open[0]
	e := f.events[f.pos]
	f.pos++
	if f.pos == len(f.events) {
		heap.Pop(&c.open)
		c.free = append(c.free, f.events)
	} else {
		heap.Fix(&c.open, 0)
	}
	return e, true
}

// NextRun returns the next events, at least one, in the order Next would
// return them, or false at the end or on error (see Err). The slice is the
// cursor's own and valid until the next call of Next or NextRun.
//
// A run is as many events of the smallest open fragment as no other
// fragment can precede: the whole rest of a fragment when fragments do not
// overlap, as in most of a healthy run's scan, so that a merge pays per
// fragment what Next costs per event (Next was 9% of the verify child's
// CPU in bench --peer's profile, with three events per ID).
func (c *Cursor) NextRun() ([]Event, bool) {
	c.reclaimLent()
	c.openOverlapping()
	if c.err != nil || len(c.open) == 0 {
		return nil, false
	}
	f := c.open[0]
	evs := f.events
	// Every open fragment and the next one hold the head's producer
	// (openOverlapping), so only sequence numbers bound the run: it stops
	// before the smallest head of another open fragment (the root's
	// children hold the two smallest) and before the next fragment's first.
	bound, bounded := uint64(0), false
	lower := func(seq uint64) {
		if !bounded || seq < bound {
			bound, bounded = seq, true
		}
	}
	for _, child := range c.open[1:min(3, len(c.open))] {
		lower(child.events[child.pos].Seq)
	}
	if c.haveNext && c.nextProducer == evs[f.pos].Producer {
		lower(c.nextFirst)
	}
	end := len(evs)
	if bounded && evs[end-1].Seq >= bound {
		end = f.pos + sort.Search(end-f.pos, func(i int) bool { return evs[f.pos+i].Seq >= bound })
		end = max(end, f.pos+1) // a tie: its order is unspecified
	}
	run := evs[f.pos:end]
	f.pos = end
	if f.pos == len(evs) {
		heap.Pop(&c.open)
		c.lent = evs
	} else {
		heap.Fix(&c.open, 0)
	}
	return run, true
}

// openOverlapping opens every fragment that may hold an event smaller than
// the smallest open one. A fragment of another producer is opened only
// when none is open, so every open fragment holds one producer.
func (c *Cursor) openOverlapping() {
	for c.haveNext && c.err == nil {
		if len(c.open) > 0 {
			top := c.open[0].events[c.open[0].pos]
			if top.Producer != c.nextProducer || top.Seq < c.nextFirst {
				return
			}
		}
		heap.Push(&c.open, &openFrag{events: c.nextEvents})
		c.readAhead()
	}
}

// reclaimLent takes back the buffer of the last run NextRun returned, once
// its caller may no longer read it.
func (c *Cursor) reclaimLent() {
	if c.lent != nil {
		c.free = append(c.free, c.lent)
		c.lent = nil
	}
}

// Err returns the error that ended the scan early, if any.
func (c *Cursor) Err() error { return c.err }

// Close releases the cursor.
func (c *Cursor) Close() (err error) {
	defer c.l.afterDamage(&err, "closing a scan")
	return c.it.Close()
}
