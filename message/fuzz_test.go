package message

import (
	"bytes"
	"testing"
	"time"
)

// FuzzDecode: Decode never panics; a value that decodes Valid re-encodes
// to itself (so a Valid verdict vouches for every byte); and one byte
// changed in a valid value is never Valid.
func FuzzDecode(f *testing.F) {
	id := ID{Run: 7, Producer: 2, Seq: 99}
	f.Add(Encode(nil, id, time.Unix(1, 2), MinSize), uint64(7), 5, byte(1))
	f.Add(Encode(nil, id, time.Unix(1, 2), 1024), uint64(7), 600, byte(0x80))
	f.Add([]byte("short"), uint64(1), 0, byte(1))
	f.Fuzz(func(t *testing.T, v []byte, run uint64, at int, flip byte) {
		d := Decode(v, run)
		if d.Status != Valid {
			return
		}
		again := Encode(nil, d.ID, d.Intended, len(v))
		if !bytes.Equal(again, v) {
			t.Fatalf("a Valid value that its ID does not re-encode to:\n%x\n%x", v, again)
		}
		if flip == 0 || len(v) == 0 {
			return
		}
		w := bytes.Clone(v)
		i := ((at % len(w)) + len(w)) % len(w)
		w[i] ^= flip
		if Decode(w, run).Status == Valid {
			t.Fatalf("byte %d changed (^%#x) and the value still decodes Valid", i, flip)
		}
	})
}
