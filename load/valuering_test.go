package load

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/ackcheck/ackcheck/message"
)

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Values freed as soon as they are taken come in address order, slot
// after slot, and round the ring again: no chunk is added when nothing is
// in flight.
func TestValueRingHandsOutInAddressOrder(t *testing.T) {
	r := newValueRing(1000)
	per := r.slotsPerChunk()
	var prev uintptr
	for i := range 3 * per {
		b, f := r.get()
		if len(b) != 1000 || cap(b) != 1000 {
			t.Fatalf("value %d: len %d cap %d, want 1000 (a value must not grow into its neighbour)", i, len(b), cap(b))
		}
		if i%per != 0 && addr(b) != prev+1000 {
			t.Fatalf("value %d at %#x, the previous at %#x: not the next slot", i, addr(b), prev)
		}
		prev = addr(b)
		f.Store(false)
	}
	if len(r.chunks) != 1 {
		t.Fatalf("%d chunks with one value in flight at a time, want 1", len(r.chunks))
	}
}

// A value in flight is never handed out again, whatever order the acks
// come in: random releases, one producer, up to 5,000 in flight; and the
// ring stays within twice what was in flight at the peak.
func TestValueRingNeverHandsOutAValueInFlight(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := newValueRing(1024)
	type held struct {
		b []byte
		f *atomic.Bool
	}
	var inFlight []held
	owner := map[uintptr]bool{}
	peak := 0
	for step := range 200_000 {
		if len(inFlight) < 5000 && (step < 5000 || len(inFlight) == 0 || rng.IntN(2) == 0) {
			b, f := r.get()
			if owner[addr(b)] {
				t.Fatalf("step %d: value at %#x handed out while in flight", step, addr(b))
			}
			owner[addr(b)] = true
			b[0], b[1023] = byte(step), byte(step)
			inFlight = append(inFlight, held{b, f})
			peak = max(peak, len(inFlight))
			continue
		}
		i := rng.IntN(len(inFlight))
		h := inFlight[i]
		inFlight[i] = inFlight[len(inFlight)-1]
		inFlight = inFlight[:len(inFlight)-1]
		delete(owner, addr(h.b))
		h.f.Store(false)
	}
	if slots := r.slots(); slots > 2*peak+r.slotsPerChunk() {
		t.Errorf("the ring grew to %d slots for at most %d in flight", slots, peak)
	}
	t.Logf("%d slots for a peak of %d values in flight", r.slots(), peak)
}

// BenchmarkValueWriteOrder: encoding 1 KiB values into 100,000 buffers
// (the default in-flight bound), taken in address order as valueRing
// takes them, against taken in a shuffled order, as a stack of buffers
// freed by acks gave them. Same buffers, same writes; only the order
// differs.
func BenchmarkValueWriteOrder(b *testing.B) {
	const n = 100_000
	r := newValueRing(1024)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i], _ = r.get()
	}
	enc := message.NewEncoder(1024)
	shuffled := rand.New(rand.NewPCG(7, 8)).Perm(n)
	for _, c := range []struct {
		name  string
		order func(i int) int
	}{
		{"address order", func(i int) int { return i % n }},
		{"ack order (shuffled)", func(i int) int { return shuffled[i%n] }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				enc.Encode(bufs[c.order(i)], message.ID{Run: 1, Seq: uint64(i)}, int64(i))
			}
		})
	}
}
