package message

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	id := ID{Run: 0xdeadbeefcafef00d, Producer: 3, Seq: 123456789}
	at := time.Unix(1700000000, 123456789)
	for _, size := range []int{MinSize, 100, 1024, 1 << 20} {
		v := Encode(nil, id, at, size)
		if len(v) != size {
			t.Fatalf("size %d: got %d bytes", size, len(v))
		}
		d := Decode(v, id.Run)
		if d.Status != Valid || d.ID != id || !d.Intended.Equal(at) {
			t.Fatalf("size %d: decoded %+v", size, d)
		}
	}
}

// Every single flipped bit anywhere in the value must be caught: that is the
// promise behind the verifier's "corrupt" class.
func TestEveryFlippedBitIsCaught(t *testing.T) {
	id := ID{Run: 42, Producer: 1, Seq: 7}
	v := Encode(nil, id, time.Unix(0, 99), 64)
	for i := range v {
		for bit := 0; bit < 8; bit++ {
			c := append([]byte(nil), v...)
			c[i] ^= 1 << bit
			d := Decode(c, id.Run)
			if d.Status == Valid {
				t.Fatalf("flip of byte %d bit %d decoded as valid", i, bit)
			}
			// Damage to the magic or the run ID alone still leaves the other
			// one recognisable, so the copy is attributed to this run.
			if d.Status != Corrupt {
				t.Fatalf("flip of byte %d bit %d: status %v, want corrupt", i, bit, d.Status)
			}
		}
	}
}

func TestForeign(t *testing.T) {
	tests := []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"short", []byte("hello")},
		{"other writer", make([]byte, 100)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := Decode(tc.v, 2); d.Status != Foreign {
				t.Fatalf("status %v, want foreign", d.Status)
			}
		})
	}
	// Magic intact, checksum wrong: corrupt even though the run ID differs,
	// because the run ID may be the damaged field.
	if d := Decode(Encode(nil, ID{Run: 1}, time.Now(), 64)[:63], 2); d.Status != Corrupt {
		t.Fatalf("truncated value: status %v, want corrupt", d.Status)
	}
	// A valid value from another run is Valid with that run's ID: the
	// caller decides it is not ours.
	if d := Decode(Encode(nil, ID{Run: 1}, time.Now(), 64), 2); d.Status != Valid || d.ID.Run != 1 {
		t.Fatalf("other run's value: %+v", d)
	}
}

func TestPayloadDiffersPerMessage(t *testing.T) {
	a := Encode(nil, ID{Run: 1, Seq: 1}, time.Unix(0, 0), 128)
	b := Encode(nil, ID{Run: 1, Seq: 2}, time.Unix(0, 0), 128)
	if string(a[HeaderSize:120]) == string(b[HeaderSize:120]) {
		t.Fatal("payloads of two messages are identical")
	}
}

func TestParseID(t *testing.T) {
	id := ID{Run: 0xabc, Producer: 9, Seq: 1 << 40}
	got, err := ParseID(id.String())
	if err != nil || got != id {
		t.Fatalf("ParseID(%q) = %v, %v", id.String(), got, err)
	}
	for _, bad := range []string{"", "a-b", "zz-1-2", "1-x-2", "1-2-3-4"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func BenchmarkEncode1K(b *testing.B) {
	buf := make([]byte, 1024)
	b.SetBytes(1024)
	for i := 0; b.Loop(); i++ {
		buf = Encode(buf, ID{Run: 1, Seq: uint64(i)}, time.Unix(0, 0), 1024)
	}
}
