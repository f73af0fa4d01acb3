package ledger

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// Offsets round-trips through JSON whatever its size; small ones stay
// the object older ledgers hold, large ones are runs, and both read.
func TestOffsetsJSON(t *testing.T) {
	wide := Offsets{}
	for p := range int32(1_000_000) {
		wide[p] = 0
	}
	mixed := Offsets{}
	for p := range int32(3000) {
		mixed[p] = int64(p / 7)
	}
	mixed[5000] = 9 // a hole, then one more
	for _, tc := range []struct {
		name   string
		o      Offsets
		prefix string
		max    int
	}{
		{"nil", nil, "null", 4},
		{"empty", Offsets{}, "{}", 2},
		{"small", Offsets{0: 12, 1: 40, 10: 3}, `{"0":12,"1":40,"10":3}`, 30},
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
		if !maps.Equal(back, tc.o) || (back == nil) != (tc.o == nil) {
			t.Errorf("%s: %d partitions back, want %d", tc.name, len(back), len(tc.o))
		}
	}
	// An older ledger's object, and runs that make no sense.
	var old Offsets
	if err := json.Unmarshal([]byte(`{"3": 7, "4": 8}`), &old); err != nil || old[3] != 7 || old[4] != 8 {
		t.Errorf("older object: %v, %v", old, err)
	}
	for _, bad := range []string{`[[0,0,1]]`, `[[-1,2,0]]`, `[[0,1]]x`, `"x"`} {
		if err := json.Unmarshal([]byte(bad), &old); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
