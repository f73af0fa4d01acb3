package drivers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Offsets is an offset per partition, held in a slice indexed by
// partition: a topic's partitions are 0 to N-1, so a million of them are
// 8 MB read by index, where a map of a million entries was most of
// ackcheck's own cost per message at a million partitions (issue 37).
// The slice holds offset+1, so that 0 marks a partition not in the set:
// a new Offsets is memory fresh from make, not filled, and no separate
// presence is kept. Offsets are never negative.
//
// The zero value is an unset Offsets (IsSet false): ReadSpec.To left
// unset means a live read. MakeOffsets gives a set one, empty or not.
type Offsets struct {
	v []int64
}

// MakeOffsets returns a set Offsets with room for partitions 0 to n-1,
// none of them in it yet.
func MakeOffsets(n int) Offsets {
	return Offsets{v: make([]int64, n)} // 0: not in it
}

// OffsetsOf returns the offsets of m (a set Offsets even when m is empty).
func OffsetsOf(m map[int32]int64) Offsets {
	hi := int32(-1)
	for p := range m {
		hi = max(hi, p)
	}
	o := MakeOffsets(int(hi) + 1)
	for p, off := range m {
		o.Set(p, off)
	}
	return o
}

// IsSet reports whether o was made (MakeOffsets, OffsetsOf, Set), even
// with no partition in it.
func (o Offsets) IsSet() bool { return o.v != nil }

// Get returns partition p's offset and whether p is in o.
func (o Offsets) Get(p int32) (int64, bool) {
	if p < 0 || int(p) >= len(o.v) || o.v[p] == 0 {
		return 0, false
	}
	return o.v[p] - 1, true
}

// Has reports whether partition p is in o.
func (o Offsets) Has(p int32) bool {
	_, ok := o.Get(p)
	return ok
}

// Set puts partition p at off, growing o as needed. REQUIRES: p >= 0,
// off >= 0.
func (o *Offsets) Set(p int32, off int64) {
	if int(p) >= len(o.v) {
		n := max(int(p)+1, 2*len(o.v))
		if n > cap(o.v) {
			grown := make([]int64, len(o.v), n)
			copy(grown, o.v)
			o.v = grown
		}
		old := len(o.v)
		o.v = o.v[:int(p)+1]
		clear(o.v[old:]) // not in it (a copy of o may have used the room)
	}
	o.v[p] = off + 1
}

// Delete takes partition p out of o.
func (o Offsets) Delete(p int32) {
	if p >= 0 && int(p) < len(o.v) {
		o.v[p] = 0
	}
}

// Len is how many partitions o holds (a count over the slice).
func (o Offsets) Len() int {
	n := 0
	for _, off := range o.v {
		if off != 0 {
			n++
		}
	}
	return n
}

// Slots is one past the highest partition o can hold without growing:
// the bound of a slice indexed by o's partitions.
func (o Offsets) Slots() int { return len(o.v) }

// All calls fn with each partition of o and its offset, in partition
// order, until fn returns false.
func (o Offsets) All(fn func(p int32, off int64) bool) {
	for p, off := range o.v {
		if off != 0 && !fn(int32(p), off-1) {
			return
		}
	}
}

// Partitions lists o's partitions in order.
func (o Offsets) Partitions() []int32 {
	out := make([]int32, 0, len(o.v))
	o.All(func(p int32, _ int64) bool { out = append(out, p); return true })
	return out
}

// Map returns o as a map (for tests and messages).
func (o Offsets) Map() map[int32]int64 {
	if !o.IsSet() {
		return nil
	}
	m := make(map[int32]int64, len(o.v))
	o.All(func(p int32, off int64) bool { m[p] = off; return true })
	return m
}

// Clone returns a copy of o that shares no memory with it.
func (o Offsets) Clone() Offsets {
	if o.v == nil {
		return Offsets{}
	}
	return Offsets{v: append(make([]int64, 0, len(o.v)), o.v...)}
}

// String prints o as a map prints.
func (o Offsets) String() string { return fmt.Sprint(o.Map()) }

// compactOffsets is the most partitions Offsets writes as a JSON object.
const compactOffsets = 1000

// MarshalJSON implements json.Marshaler. Up to compactOffsets partitions
// it is a JSON object ({"0":12,"1":40}, as the ledger's metadata always
// kept a run's start offsets); beyond, a JSON array of runs [first,
// count, offset], each count consecutive partitions from first at the
// same offset: a new topic of a million partitions is one run.
// UnmarshalJSON reads both. An unset Offsets is null.
func (o Offsets) MarshalJSON() ([]byte, error) {
	if !o.IsSet() {
		return []byte("null"), nil
	}
	var b []byte
	if o.Len() <= compactOffsets {
		b = append(b, '{')
		first := true
		o.All(func(p int32, off int64) bool {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(p), 10)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, off, 10)
			return true
		})
		return append(b, '}'), nil
	}
	b = append(b, '[')
	for i := 0; i < len(o.v); {
		off := o.v[i] // offset+1
		if off == 0 {
			i++
			continue
		}
		n := 1
		for i+n < len(o.v) && o.v[i+n] == off {
			n++
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, off-1, 10)
		b = append(b, ']')
		i += n
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler: the object or the runs.
func (o *Offsets) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*o = Offsets{}
		return nil
	case len(b) > 0 && b[0] == '{':
		var m map[int32]int64
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for p, off := range m {
			if p < 0 || off < 0 {
				return fmt.Errorf("offsets: partition %d at %d: want both at least 0", p, off)
			}
		}
		*o = OffsetsOf(m)
		return nil
	}
	var runs [][3]int64
	if err := json.Unmarshal(b, &runs); err != nil {
		return fmt.Errorf("offsets: want an object of partition: offset or an array of [first, count, offset]: %w", err)
	}
	hi := int64(0)
	for _, r := range runs {
		if r[1] < 1 || r[0] < 0 || r[0]+r[1] > 1<<31 || r[2] < 0 {
			return fmt.Errorf("offsets: run %v: want [first, count, offset] with count at least 1 within int32 partitions, offset at least 0", r)
		}
		hi = max(hi, r[0]+r[1])
	}
	if hi > 1<<27 {
		return fmt.Errorf("offsets: partitions up to %d: more than ackcheck takes", hi)
	}
	n := MakeOffsets(int(hi))
	for _, r := range runs {
		for p := r[0]; p < r[0]+r[1]; p++ {
			n.v[p] = r[2] + 1
		}
	}
	*o = n
	return nil
}
