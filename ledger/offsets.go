package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Offsets is an offset per partition (a run's start offsets, a
// read-back's ends) as the ledger's metadata keeps it.
//
// Up to compactOffsets partitions it is the JSON object it always was
// ({"0":12,"1":40}); beyond, a JSON array of runs [first, count, offset],
// each count consecutive partitions from first at the same offset. A new
// topic of a million partitions is then one run, not 14 MB of object
// whose keys encoding/json sorts as strings (issue 37: that sort was a
// fifth of a run's CPU at a million partitions). Unmarshal reads both.
type Offsets map[int32]int64

// compactOffsets is the most partitions Offsets writes as an object.
const compactOffsets = 1000

// MarshalJSON implements json.Marshaler.
func (o Offsets) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	// Partitions 0 to n-1, as a topic's are, need no sort.
	ps := make([]int32, 0, len(o))
	dense := true
	for p := range o {
		ps = append(ps, p)
		dense = dense && p >= 0 && int(p) < len(o)
	}
	if dense {
		for i := range ps {
			ps[i] = int32(i)
		}
	} else {
		slices.Sort(ps)
	}
	var b []byte
	if len(o) <= compactOffsets {
		b = append(b, '{')
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(p), 10)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, o[p], 10)
		}
		return append(b, '}'), nil
	}
	b = append(b, '[')
	for i := 0; i < len(ps); {
		first, off := ps[i], o[ps[i]]
		n := 1
		for i+n < len(ps) && ps[i+n] == first+int32(n) && o[ps[i+n]] == off {
			n++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(first), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, off, 10)
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
		*o = nil
		return nil
	case len(b) > 0 && b[0] == '{':
		var m map[int32]int64
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		*o = m
		return nil
	}
	var runs [][3]int64
	if err := json.Unmarshal(b, &runs); err != nil {
		return fmt.Errorf("offsets: want an object of partition: offset or an array of [first, count, offset]: %w", err)
	}
	n := 0
	for _, r := range runs {
		if r[1] < 1 || r[0] < 0 || r[0]+r[1] > 1<<31 {
			return fmt.Errorf("offsets: run %v: want [first, count, offset] with count at least 1 within int32 partitions", r)
		}
		n += int(r[1])
	}
	m := make(Offsets, n)
	for _, r := range runs {
		for p := r[0]; p < r[0]+r[1]; p++ {
			m[int32(p)] = r[2]
		}
	}
	*o = m
	return nil
}
