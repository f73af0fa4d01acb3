package drivers

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// Offsets round-trips through JSON whatever its size; small ones stay
// the object older ledgers hold, large ones are runs, and both read.
func TestOffsetsJSON(t *testing.T) {
	wide := MakeOffsets(1_000_000)
	for p := range int32(1_000_000) {
		wide.Set(p, 0)
	}
	mixed := MakeOffsets(0)
	for p := range int32(3000) {
		mixed.Set(p, int64(p/7))
	}
	mixed.Set(5000, 9) // a hole, then one more
	for _, tc := range []struct {
		name   string
		o      Offsets
		prefix string
		max    int
	}{
		{"unset", Offsets{}, "null", 4},
		{"empty", MakeOffsets(0), "{}", 2},
		{"small", OffsetsOf(map[int32]int64{0: 12, 1: 40, 10: 3}), `{"0":12,"1":40,"10":3}`, 30},
		{"a million at 0", wide, "[[0,1000000,0]]", 20},
		{"runs of 7", mixed, "[[0,7,0],[7,7,1]", 6000},
	} {
		raw, err := json.Marshal(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(raw), tc.prefix) || len(raw) > tc.max {
			t.Errorf("%s: %d bytes %.60s, want %q at the start and at most %d", tc.name, len(raw), raw, tc.prefix, tc.max)
		}
		var back Offsets
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !maps.Equal(back.Map(), tc.o.Map()) || back.IsSet() != tc.o.IsSet() {
			t.Errorf("%s: %d partitions back, want %d", tc.name, back.Len(), tc.o.Len())
		}
	}
	// An older ledger's object, and runs that make no sense.
	var old Offsets
	if err := json.Unmarshal([]byte(`{"3": 7, "4": 8}`), &old); err != nil || old.Map()[3] != 7 || old.Map()[4] != 8 || old.Has(0) {
		t.Errorf("older object: %v, %v", old, err)
	}
	for _, bad := range []string{`[[0,0,1]]`, `[[-1,2,0]]`, `[[0,1]]x`, `"x"`, `[[0,1,-3]]`, `{"-1":0}`} {
		if err := json.Unmarshal([]byte(bad), &old); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// Set grows, Get and Has see only what was set, Delete takes out.
func TestOffsetsSetGet(t *testing.T) {
	var o Offsets
	if o.IsSet() || o.Has(0) {
		t.Fatal("zero value holds something")
	}
	o.Set(5, 0)
	o.Set(2, 7)
	if !o.IsSet() || o.Len() != 2 || o.Has(3) || !o.Has(5) || o.Has(-1) || o.Has(99) {
		t.Fatalf("%v: len %d", o, o.Len())
	}
	if off, ok := o.Get(2); !ok || off != 7 {
		t.Fatalf("Get(2) = %d, %v", off, ok)
	}
	o.Delete(5)
	if got := o.Partitions(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("partitions %v", got)
	}
}

// TestOffsetsZeroOffset: offset 0 is in the set (the slice holds it as
// 1), a partition never set is not, and both survive Delete, growth,
// Clone and JSON in both shapes.
func TestOffsetsZeroOffset(t *testing.T) {
	o := MakeOffsets(3)
	if o.Has(0) || o.Len() != 0 {
		t.Fatalf("a new Offsets holds %v", o.Map())
	}
	o.Set(1, 0)
	if off, ok := o.Get(1); !ok || off != 0 {
		t.Fatalf("partition 1 set at 0: got %d, %v", off, ok)
	}
	if o.Has(0) || o.Has(2) || o.Len() != 1 {
		t.Fatalf("only partition 1 set: %v", o.Map())
	}
	o.Set(5000, 0) // grows past 3: 3 to 4999 stay out
	if o.Len() != 2 || o.Has(4999) {
		t.Fatalf("after growth: %v", o.Map())
	}
	c := o.Clone()
	o.Delete(1)
	if o.Has(1) || !c.Has(1) {
		t.Fatalf("delete: %v, clone %v", o.Map(), c.Map())
	}
	// A copy that grows into shared room does not put partitions in o.
	a := MakeOffsets(2)
	a.Set(1, 7)
	b := a
	b.Set(2, 9)
	a.Set(3, 0)
	if a.Has(2) {
		t.Fatalf("partition 2 set in a copy shows in the original: %v", a.Map())
	}
	for _, n := range []int{3, 2000} { // an object, then runs
		w := MakeOffsets(n)
		for p := 0; p < n; p += 2 {
			w.Set(int32(p), 0)
		}
		raw, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var r Offsets
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(r.Map(), w.Map()) {
			t.Fatalf("%d partitions: %s read back as %v", n, raw, r.Map())
		}
	}
}
