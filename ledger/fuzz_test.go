package ledger

import (
	"testing"
)

// FuzzDecodeFragment: a fragment either decodes or is refused with
// errBadFragment, never a panic or an allocation its size cannot justify;
// and what encodeFragment writes decodes back to the same events.
func FuzzDecodeFragment(f *testing.F) {
	evs := []Event{{Producer: 3, Seq: 10, Status: 1, Partition: 2, Offset: 7, Time: 5}, {Producer: 3, Seq: 12, Status: 2, Partition: -1, Offset: -1, Time: 9}}
	f.Add(encodeFragment(nil, evs), uint64(10))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, uint64(0))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, v []byte, first uint64) {
		got, err := decodeFragment(nil, 3, first, v)
		if err != nil {
			return
		}
		if len(got) > fragmentMax {
			t.Fatalf("%d events decoded; a fragment holds at most %d", len(got), fragmentMax)
		}
		if len(got) == 0 {
			return
		}
		// Whatever decodes, encodes back to something that decodes the same.
		re, err := decodeFragment(nil, 3, got[0].Seq, encodeFragment(nil, got))
		if err != nil || len(re) != len(got) {
			t.Fatalf("re-encoding %d events: %d back, %v", len(got), len(re), err)
		}
		for i := range re {
			if re[i] != got[i] {
				t.Fatalf("event %d: %+v became %+v", i, got[i], re[i])
			}
		}
	})
}
