package message

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestEncoderMatchesEncode: the Encoder writes exactly Encode's bytes, its
// checksum included, for every size class: no filler, a filler shorter
// than its word, word-aligned and not, the usual 1 KiB, and a size above
// encoderTablesMax (a pass over the value instead of tables).
func TestEncoderMatchesEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []ID{
		{},
		{Run: math.MaxUint64, Producer: math.MaxUint32, Seq: math.MaxUint64},
		{Run: 0x0123456789abcdef, Producer: 3, Seq: 1 << 40},
	}
	for range 50 {
		ids = append(ids, ID{Run: rng.Uint64(), Producer: rng.Uint32(), Seq: rng.Uint64()})
	}
	times := []time.Time{time.Unix(0, 0), time.Unix(0, math.MaxInt64), time.Unix(0, -1), time.Unix(1_700_000_000, 123)}
	sizes := []int{MinSize, MinSize + 1, MinSize + 7, MinSize + 8, MinSize + 9, 100, 1024, 1027, 4096 + 5, encoderTablesMax + 3}
	for _, size := range sizes {
		e := NewEncoder(size)
		if (size <= encoderTablesMax) != (e.tables != nil) {
			t.Fatalf("size %d: tables built %v", size, e.tables != nil)
		}
		var reused []byte
		for i, id := range ids {
			at := times[i%len(times)]
			if size > 4096+5 && i > 3 {
				break // four values of 1 MiB are enough for the pass
			}
			want := Encode(nil, id, at, size)
			got := e.Encode(reused, id, at.UnixNano())
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d, %v at %v: Encoder wrote %x..., Encode %x...", size, id, at.UnixNano(), got[:min(48, len(got))], want[:min(48, len(want))])
			}
			if sum := crc32.Checksum(got[:size-4], castagnoli); sum != bigEndian32(got[size-4:]) {
				t.Fatalf("size %d, %v: stored checksum %08x, the bytes' checksum %08x", size, id, bigEndian32(got[size-4:]), sum)
			}
			if Decode(got, id.Run).Status != Valid {
				t.Fatalf("size %d, %v: Decode says %v", size, id, Decode(got, id.Run).Status)
			}
			reused = got // the next value overwrites this one, as the load's buffers are
		}
	}
}

func bigEndian32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// FuzzEncoder: for any ID, time and size, the Encoder's value is Encode's.
func FuzzEncoder(f *testing.F) {
	f.Add(uint64(7), uint32(2), uint64(99), int64(12345), 1024)
	f.Add(uint64(0), uint32(0), uint64(0), int64(0), MinSize)
	f.Fuzz(func(t *testing.T, run uint64, producer uint32, seq uint64, ns int64, size int) {
		size = MinSize + ((size%5000)+5000)%5000
		id := ID{Run: run, Producer: producer, Seq: seq}
		at := time.Unix(0, ns)
		if got, want := NewEncoder(size).Encode(nil, id, ns), Encode(nil, id, at, size); !bytes.Equal(got, want) {
			t.Fatalf("size %d, %v at %d: the Encoder's value differs from Encode's", size, id, ns)
		}
	})
}

// BenchmarkEncoder1K against BenchmarkEncode1K: the checksum from tables
// against a pass over the value, on one buffer (hot in the cache; the
// load's buffers are not, so the gain there is larger).
func BenchmarkEncoder1K(b *testing.B) {
	e := NewEncoder(1024)
	buf := make([]byte, 1024)
	b.SetBytes(1024)
	for i := 0; b.Loop(); i++ {
		buf = e.Encode(buf, ID{Run: 1, Producer: 2, Seq: uint64(i)}, int64(i))
	}
}

// BenchmarkEncoderCold and BenchmarkEncodeCold write into a ring of
// 100,000 buffers, as the load does at its default in-flight bound: each
// value goes into memory last touched 100 MiB ago.
func BenchmarkEncoderCold(b *testing.B) {
	e := NewEncoder(1024)
	ring := coldRing()
	b.SetBytes(1024)
	for i := 0; b.Loop(); i++ {
		e.Encode(ring[i%len(ring)], ID{Run: 1, Producer: 2, Seq: uint64(i)}, int64(i))
	}
}

func BenchmarkEncodeCold(b *testing.B) {
	ring := coldRing()
	b.SetBytes(1024)
	for i := 0; b.Loop(); i++ {
		Encode(ring[i%len(ring)], ID{Run: 1, Producer: 2, Seq: uint64(i)}, time.Unix(0, int64(i)), 1024)
	}
}

func coldRing() [][]byte {
	ring := make([][]byte, 100_000)
	for i := range ring {
		ring[i] = make([]byte, 1024)
	}
	return ring
}
