// Package message defines the record value ackcheck writes and reads back.
//
// Every value carries a unique ID (run, producer, sequence number), the time
// the load schedule intended it to be sent, a payload that pads the value to
// the configured size, and a CRC-32C checksum over every other byte of the
// value. Layout, all integers big-endian:
//
//	offset  size  field
//	0       4     magic "AKC1"
//	4       8     run ID
//	12      4     producer ID
//	16      8     sequence number
//	24      8     intended send time, Unix nanoseconds
//	28+4    n     payload (deterministic filler derived from the ID)
//	len-4   4     CRC-32C (Castagnoli) of bytes [0, len-4)
//
// Invariant: Decode never returns an ID it could not vouch for. A value whose
// checksum does not match is reported as corrupt together with whatever ID its
// header claims, so that the verifier can attribute the corruption to this run
// without ever counting the copy as a good read.
package message

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// Magic marks a value written by ackcheck (format version 1).
const Magic = "AKC1"

// HeaderSize is the fixed part of a value before the payload.
const HeaderSize = 4 + 8 + 4 + 8 + 8

// MinSize is the smallest value Encode can produce: header and checksum.
const MinSize = HeaderSize + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ID names one message uniquely across runs.
type ID struct {
	Run      uint64
	Producer uint32
	Seq      uint64
}

// String formats the ID as run-producer-seq, the form used in reports.
func (id ID) String() string {
	return fmt.Sprintf("%016x-%d-%d", id.Run, id.Producer, id.Seq)
}

// ParseID reads the form written by String.
func ParseID(s string) (ID, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return ID{}, fmt.Errorf("message ID %q: want run-producer-seq", s)
	}
	run, err1 := strconv.ParseUint(parts[0], 16, 64)
	prod, err2 := strconv.ParseUint(parts[1], 10, 32)
	seq, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return ID{}, fmt.Errorf("message ID %q: %w", s, err)
	}
	return ID{Run: run, Producer: uint32(prod), Seq: seq}, nil
}

// Encode writes a value of exactly size bytes for id into dst (grown if
// needed) and returns it. REQUIRES: size >= MinSize.
func Encode(dst []byte, id ID, intended time.Time, size int) []byte {
	if size < MinSize {
		panic(fmt.Sprintf("message: size %d below minimum %d", size, MinSize))
	}
	dst = writeBody(dst, id, uint64(intended.UnixNano()), fillWord(id), size)
	binary.BigEndian.PutUint32(dst[size-4:], crc32.Checksum(dst[:size-4], castagnoli))
	return dst
}

// writeBody writes everything of a value but its checksum into dst (grown
// if needed) and returns it, size bytes long: the header with intended
// time t (Unix ns) and the filler of word x.
func writeBody(dst []byte, id ID, t, x uint64, size int) []byte {
	if cap(dst) < size {
		dst = make([]byte, size)
	}
	dst = dst[:size]
	copy(dst, Magic)
	binary.BigEndian.PutUint64(dst[4:], id.Run)
	binary.BigEndian.PutUint32(dst[12:], id.Producer)
	binary.BigEndian.PutUint64(dst[16:], id.Seq)
	binary.BigEndian.PutUint64(dst[24:], t)
	fill(dst[HeaderSize:size-4], x)
	return dst
}

// fillWord is the filler's word for id.
func fillWord(id ID) uint64 {
	return id.Seq*0x9E3779B97F4A7C15 ^ uint64(id.Producer)<<32 ^ id.Run
}

// fill writes a filler that differs per message: the eight-byte word x
// (fillWord), least significant byte first, repeated by doubling copies
// (memmove), so that every aligned word of two messages' fillers differs.
// Filler byte k is byte k mod 8 of x, which Encoder's checksum relies on. A per-byte pseudo-random
// filler cost a third of ackcheck's CPU per message at 1 KiB (bench
// --peer). The filler is not read back (the checksum covers it, and the
// checksum is what Decode checks), so runs written with an older filler
// verify the same.
func fill(p []byte, x uint64) {
	if len(p) < 8 {
		for i := range p {
			p[i] = byte(x >> (8 * i))
		}
		return
	}
	binary.LittleEndian.PutUint64(p, x)
	for n := 8; n < len(p); n *= 2 {
		copy(p[n:], p[:n])
	}
}

// Status says what Decode made of a value.
type Status uint8

const (
	// Valid: ackcheck's magic and a matching checksum; ID and Intended are
	// trustworthy.
	Valid Status = iota
	// Corrupt: the value looks like ackcheck's (magic or the expected run ID
	// in place) but its checksum does not match. ID is what the header
	// claims and may itself be damaged.
	Corrupt
	// Foreign: not an ackcheck value (too short, or neither magic nor run ID
	// recognisable). Another writer's record, or damage beyond recognition.
	Foreign
)

func (s Status) String() string {
	switch s {
	case Valid:
		return "valid"
	case Corrupt:
		return "corrupt"
	default:
		return "foreign"
	}
}

// Decoded is the result of Decode.
type Decoded struct {
	Status   Status
	ID       ID
	Intended time.Time
}

// Decode checks v. run is the run ID the caller expects; a value whose magic
// was damaged but whose run ID still matches is reported Corrupt, not
// Foreign. Decode does not retain v.
func Decode(v []byte, run uint64) Decoded {
	if len(v) < MinSize {
		return Decoded{Status: Foreign}
	}
	magicOK := string(v[:4]) == Magic
	d := Decoded{
		ID: ID{
			Run:      binary.BigEndian.Uint64(v[4:]),
			Producer: binary.BigEndian.Uint32(v[12:]),
			Seq:      binary.BigEndian.Uint64(v[16:]),
		},
		Intended: time.Unix(0, int64(binary.BigEndian.Uint64(v[24:]))),
	}
	sumOK := crc32.Checksum(v[:len(v)-4], castagnoli) == binary.BigEndian.Uint32(v[len(v)-4:])
	switch {
	case magicOK && sumOK:
		d.Status = Valid
	case magicOK || d.ID.Run == run:
		d.Status = Corrupt
	default:
		d.Status = Foreign
	}
	return d
}

// Key returns the record key for a message when the load spreads messages
// over n keys (n > 0): the sequence number picks the key, so that a key's
// messages come from every producer.
func Key(dst []byte, id ID, n int) []byte {
	k := (id.Seq + uint64(id.Producer)) % uint64(n)
	dst = append(dst[:0], "k"...)
	return strconv.AppendUint(dst, k, 10)
}
