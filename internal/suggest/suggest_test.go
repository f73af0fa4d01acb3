package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"rate", "rate", 0}, {"rate", "rte", 1}, {"rate", "rates", 1},
		{"rate", "rage", 1}, {"durration", "duration", 1}, {"kill-at", "kil-at", 1}, {"abc", "", 3}, {"", "xy", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	cands := []string{"rate", "duration", "repeat", "scenarios", "settings"}
	for _, tc := range []struct {
		word   string
		within int
		want   string
	}{
		{"rat", 2, "rate"},
		{"durtion", 2, "duration"},
		{"repaet", 2, "repeat"},
		{"xyzzy", 2, ""},
		{"setings", 1, "settings"},
		{"setngs", 1, ""}, // two edits, only one allowed
		{"rrate", 2, "rate"},
	} {
		if got := Nearest(tc.word, cands, tc.within); got != tc.want {
			t.Errorf("Nearest(%q, %d) = %q, want %q", tc.word, tc.within, got, tc.want)
		}
	}
	// Ties go to the first in sorted order, whatever the candidates' order.
	if got := Nearest("bat", []string{"cat", "bar", "hat"}, 1); got != "bar" {
		t.Errorf("tie: %q, want bar", got)
	}
}
