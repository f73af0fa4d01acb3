package faults

import (
	"testing"
	"time"
)

// A progress line names the one node a fault acted on, and none when it
// acted on several or none; it says how late a fault fired only past
// SlipNote, and a fault late by exactly SlipNote is on time.
func TestProgressLineTexts(t *testing.T) {
	for _, tc := range []struct {
		nodes []int32
		want  string
	}{
		{[]int32{2}, " (node 2)"},
		{[]int32{1, 2}, ""},
		{nil, ""},
	} {
		if got := nodeText(picked{nodes: tc.nodes}); got != tc.want {
			t.Errorf("nodeText(%v) = %q, want %q", tc.nodes, got, tc.want)
		}
	}
	due := time.Unix(100, 0)
	for _, tc := range []struct {
		late time.Duration
		want string
	}{
		{SlipNote, ""},
		{SlipNote + time.Millisecond, " (101ms after it was due)"},
		{0, ""},
	} {
		if got := slipText(Record{Due: due, At: due.Add(tc.late)}); got != tc.want {
			t.Errorf("slipText, %v late: %q, want %q", tc.late, got, tc.want)
		}
	}
}
