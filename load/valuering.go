package load

import "sync/atomic"

// valueRing is one producer's value buffers, handed out in address order.
//
// Writing a 1 KiB value into memory last touched an in-flight window ago
// (100 MiB at the default bound) is most of what a value costs, and what
// it costs depends on the order: into buffers taken in address order, the
// CPU's prefetcher and TLB keep up (200-220 ns a value over 100,000
// buffers, BenchmarkValueWriteOrder); in the order acks free them, which
// is no order at all (batches of 16 partitions complete in any order),
// each value is a cache and TLB miss (650 ns). The stack of freed buffers
// this replaces handed them out in that second order.
//
// The ring is a list of chunks of slotsPerChunk contiguous slots. get takes
// the slot at the cursor and moves on; a slot whose value is still in
// flight is passed over (a send not yet acked, such as one to a stalled
// partition), and when getScan slots in a row are in flight, a new chunk
// is added. So the ring grows to what its producer had in flight at the
// peak, plus the slots it passed over, and stays there: in one 1M-message
// bench --peer run at the default bound of 100,000, the four producers'
// rings held 219,136 slots.
//
// get is called by the producer's goroutine only; a slot's free flag is
// set by whichever goroutine the driver calls done on, after the driver is
// done with the value (drivers.ValueReuser).
type valueRing struct {
	size   int
	chunks []ringChunk
	// chunk, slot: the cursor, the next slot get tries.
	chunk, slot int
}

type ringChunk struct {
	mem  []byte
	busy []atomic.Bool // busy[i]: slot i's value is in flight
}

// getScan is how many slots get tries before it adds a chunk.
const getScan = 64

func newValueRing(size int) *valueRing { return &valueRing{size: size} }

// slotsPerChunk gives a chunk about 1 MiB, and at least one slot.
func (r *valueRing) slotsPerChunk() int { return max(1, (1<<20)/r.size) }

// get returns a buffer of size bytes and its flag, which the caller
// clears (Store(false)) once the driver is done with the buffer.
func (r *valueRing) get() ([]byte, *atomic.Bool) {
	for {
		for range min(getScan, r.slots()) {
			c := &r.chunks[r.chunk]
			i := r.slot
			r.advance()
			if !c.busy[i].Load() {
				c.busy[i].Store(true)
				return c.mem[i*r.size : (i+1)*r.size : (i+1)*r.size], &c.busy[i]
			}
		}
		// The cursor goes to the new chunk's first slot, which is free.
		n := r.slotsPerChunk()
		r.chunks = append(r.chunks, ringChunk{mem: make([]byte, n*r.size), busy: make([]atomic.Bool, n)})
		r.chunk, r.slot = len(r.chunks)-1, 0
	}
}

func (r *valueRing) slots() int { return len(r.chunks) * r.slotsPerChunk() }

// advance moves the cursor to the next slot, chunk by chunk, round.
func (r *valueRing) advance() {
	r.slot++
	if r.slot == r.slotsPerChunk() {
		r.slot = 0
		r.chunk = (r.chunk + 1) % len(r.chunks)
	}
}
