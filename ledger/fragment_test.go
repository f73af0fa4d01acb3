package ledger

import (
	"errors"
	"fmt"
	"testing"
)

// A fragment decodes back to exactly the events encoded, with every field's
// delta going either way; every strict prefix of it is refused as damaged
// (never decoded as fewer or zeroed events, never a panic); and the count is
// bounded by fragmentMax, inclusive.
func TestFragmentDecodeRefusesEveryTruncation(t *testing.T) {
	evs := []Event{
		{Producer: 7, Seq: 100, Status: 1, Partition: 3, Offset: 500, Time: 9000},
		{Producer: 7, Seq: 101, Status: 2, Partition: -1, Offset: -1, Time: 8000}, // offset and time go down
		{Producer: 7, Seq: 1 << 40, Status: 3, Partition: 1 << 20, Offset: 1 << 50, Time: 1 << 60},
		{Producer: 7, Seq: 1<<40 + 1, Status: 0, Partition: 0, Offset: 0, Time: 0},
	}
	enc := encodeFragment(nil, evs)
	got, err := decodeFragment(nil, 7, 100, enc)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if fmt.Sprint(got) != fmt.Sprint(evs) {
		t.Fatalf("decoded %+v, want %+v", got, evs)
	}
	for i := 0; i < len(enc); i++ {
		if got, err := decodeFragment(nil, 7, 100, enc[:i]); !errors.Is(err, errBadFragment) {
			t.Errorf("the first %d of %d bytes: %+v, %v; want errBadFragment", i, len(enc), got, err)
		}
	}

	for _, tc := range []struct {
		n    int
		want error
	}{
		{fragmentMax, nil},
		{fragmentMax + 1, errBadFragment},
	} {
		many := make([]Event, tc.n)
		for i := range many {
			many[i] = Event{Producer: 1, Seq: uint64(i)}
		}
		got, err := decodeFragment(nil, 1, 0, encodeFragment(nil, many))
		if !errors.Is(err, tc.want) || (err == nil && len(got) != tc.n) {
			t.Errorf("a fragment of %d events: %d decoded, %v; want %v", tc.n, len(got), err, tc.want)
		}
	}
}
