package verifier

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
)

// A spell covers its start and not its end; one never undone covers
// everything after its start.
func TestInForceBoundaries(t *testing.T) {
	spells := []spell{{from: 100, to: 200, what: "a"}, {from: 150, to: 0, what: "b"}}
	for _, tc := range []struct {
		t    int64
		want string
	}{
		{99, ""}, {100, "a"}, {149, "a"}, {150, "a; b"}, {199, "a; b"}, {200, "b"}, {1 << 40, "b"},
	} {
		if got := strings.Join(inForce(spells, tc.t), "; "); got != tc.want {
			t.Errorf("at %d: %q, want %q", tc.t, got, tc.want)
		}
	}
}

// The per-partition account of lost messages: the lowest and highest
// acked offset (an unknown offset, -1, never counts as the lowest), the
// earliest and latest send time, and the count by the faults in force at
// each ack; lost.jsonl holds one line per message up to the cap, then a
// line that says it is capped, and Total counts them all.
func TestInvestigationAccount(t *testing.T) {
	start := time.Unix(1000, 0)
	s := func(sec float64) int64 { return start.Add(time.Duration(sec * float64(time.Second))).UnixNano() }
	recs := []faults.Record{
		{Action: faults.Pause, Node: 2, At: time.Unix(0, s(10)), Result: faults.Applied},
		{Action: faults.Resume, Node: 2, At: time.Unix(0, s(20)), Result: faults.Applied},
	}
	dir := t.TempDir()
	inv, err := newInvestigation(dir, 2, start, recs)
	if err != nil {
		t.Fatal(err)
	}
	inv.addLost("a", 3, 40, s(5), s(12))  // acked in the pause
	inv.addLost("b", 3, -1, s(2), s(25))  // no offset known
	inv.addLost("c", 3, 38, s(9), s(10))  // acked at the pause's first instant
	inv.addLost("d", 3, 45, s(11), s(20)) // acked at the resume: no longer in force
	inv.addLost("e", 1, 7, s(3), s(4))
	res := &Result{}
	if err := inv.finish(dir, res); err != nil {
		t.Fatal(err)
	}
	p3 := res.LostByPartition[3]
	if p3 == nil || p3.Count != 4 || p3.FirstOffset != 38 || p3.LastOffset != 45 || p3.FirstSentS != 2 || p3.LastSentS != 11 {
		t.Fatalf("partition 3: %+v; want 4 lost at offsets 38-45, sent 2-11 s", p3)
	}
	paused := "node 2 paused (since 10.0 s)"
	if p3.AckedWhile[paused] != 2 || p3.AckedWhile[NoFaultInForce] != 2 || len(p3.AckedWhile) != 2 {
		t.Errorf("partition 3 acked while %v; want 2 %q and 2 with none", p3.AckedWhile, paused)
	}
	if p1 := res.LostByPartition[1]; p1 == nil || p1.Count != 1 || p1.FirstOffset != 7 || p1.LastOffset != 7 {
		t.Errorf("partition 1: %+v", p1)
	}
	var lost *Listing
	for i := range res.Listings {
		if res.Listings[i].File == LostFile {
			lost = &res.Listings[i]
		}
	}
	if lost == nil || lost.Total != 5 || lost.Listed != 2 || !lost.Capped {
		t.Fatalf("lost listing %+v; want 5 in all, 2 listed, capped", lost)
	}
	f, err := os.Open(filepath.Join(dir, LostFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 || lines[0]["id"] != "a" || lines[1]["id"] != "b" || lines[2]["capped"] != true {
		t.Fatalf("lost.jsonl: %v; want a, b and the capped line", lines)
	}
	if got := lines[0]["acked_s"]; got != 12.0 {
		t.Errorf("a acked_s %v, want 12", got)
	}
	// No cap: every message listed.
	inv, _ = newInvestigation(t.TempDir(), 0, start, nil)
	for i := 0; i < 3; i++ {
		inv.addLost("x", 0, int64(i), s(1), s(2))
	}
	if inv.lost.listing.Listed != 3 || inv.lost.listing.Total != 3 {
		t.Errorf("uncapped: listed %d of %d", inv.lost.listing.Listed, inv.lost.listing.Total)
	}
	// No directory: nothing written, everything counted.
	inv, _ = newInvestigation("", 0, start, nil)
	inv.addLost("x", 0, 1, s(1), s(2))
	if inv.lost.f != nil || inv.lost.listing.Total != 1 || inv.lost.listing.Listed != 0 {
		t.Errorf("without a directory: file %v, listed %d of %d", inv.lost.f, inv.lost.listing.Listed, inv.lost.listing.Total)
	}
}
