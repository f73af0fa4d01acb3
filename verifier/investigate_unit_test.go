package verifier

import (
	"bufio"
	"encoding/json"
	"maps"
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
	inv.addLost("a", 3, 40, s(5), s(12), 0)  // acked in the pause
	inv.addLost("b", 3, -1, s(2), s(25), 0)  // no offset known
	inv.addLost("c", 3, 38, s(9), s(10), 0)  // acked at the pause's first instant
	inv.addLost("d", 3, 45, s(11), s(20), 0) // acked at the resume: no longer in force
	inv.addLost("e", 1, 7, s(3), s(4), 0)
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
		inv.addLost("x", 0, int64(i), s(1), s(2), 0)
	}
	if inv.lost.listing.Listed != 3 || inv.lost.listing.Total != 3 {
		t.Errorf("uncapped: listed %d of %d", inv.lost.listing.Listed, inv.lost.listing.Total)
	}
	// No directory: nothing written, everything counted.
	inv, _ = newInvestigation("", 0, start, nil)
	inv.addLost("x", 0, 1, s(1), s(2), 0)
	if inv.lost.f != nil || inv.lost.listing.Total != 1 || inv.lost.listing.Listed != 0 {
		t.Errorf("without a directory: file %v, listed %d of %d", inv.lost.f, inv.lost.listing.Listed, inv.lost.listing.Total)
	}
}

// A loss acked with no fault in force, shortly after a fault ended (the
// cut-off leader still acking for a moment after the heal), is put beside
// each fault that ended within AfterFaultWindow before it, the last to
// end first (a restart after the heal does not hide the partition): in
// lost.jsonl's after_fault, in acked_soon_after, and in the partition's
// line. One in force, or acked longer after, is not.
func TestLossAckedSoonAfterAFaultEnded(t *testing.T) {
	start := time.Unix(1000, 0)
	s := func(sec float64) int64 { return start.Add(time.Duration(sec * float64(time.Second))).UnixNano() }
	at := func(sec float64) time.Time { return time.Unix(0, s(sec)) }
	recs := []faults.Record{
		{Action: faults.Partition, Target: "node:2", At: at(10), Result: faults.Applied},
		{Action: faults.HealNetwork, Target: "cluster", At: at(20), Result: faults.Applied},
		{Action: faults.Kill, Node: 3, At: at(30), Result: faults.Applied},
		{Action: faults.Restart, Node: 3, At: at(40), Result: faults.Applied},
	}
	dir := t.TempDir()
	inv, err := newInvestigation(dir, 0, start, recs)
	if err != nil {
		t.Fatal(err)
	}
	inv.addLost("in-cut", 0, 1, s(9), s(15), 0)       // in force
	inv.addLost("at-heal", 0, 2, s(9), s(20), 0)      // the heal's instant: ended 0 s before
	inv.addLost("after-heal", 0, 3, s(9), s(21.7), 0) // the old leader's late ack
	inv.addLost("edge", 0, 4, s(9), s(50), 0)         // 30 s after the heal, 10 s after the restart: both, the restart first
	inv.addLost("late", 0, 5, s(9), s(70.5), 0)       // 30.5 s after the restart: beyond the window
	inv.addLost("before", 0, 6, s(1), s(5), 0)        // before any fault
	res := &Result{}
	if err := inv.finish(dir, res); err != nil {
		t.Fatal(err)
	}
	cut := "partition node:2 (since 10.0 s)"
	killed := "node 3 killed (since 30.0 s)"
	p := res.LostByPartition[0]
	if p == nil || p.AckedWhile[cut] != 1 || p.AckedWhile[NoFaultInForce] != 5 {
		t.Fatalf("partition 0: %+v; want 1 acked in the cut, 5 with no fault in force", p)
	}
	if want := map[string]int64{cut: 3, killed: 1}; !maps.Equal(p.AckedSoonAfter, want) {
		t.Errorf("acked soon after %v, want %v", p.AckedSoonAfter, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, LostFile))
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l LostLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		after[l.ID] = l.AfterFault
	}
	want := map[string]string{
		"in-cut":     "",
		"at-heal":    cut + ", ended 0.0 s before the ack",
		"after-heal": cut + ", ended 1.7 s before the ack",
		"edge":       killed + ", ended 10.0 s before the ack; " + cut + ", ended 30.0 s before the ack",
		"late":       "",
		"before":     "",
	}
	if !maps.Equal(after, want) {
		t.Errorf("after_fault %v\nwant %v", after, want)
	}
	text := res.PartitionLossText(0)
	if !strings.HasSuffix(text, "; of those with no fault in force, 3 within 30 s after "+cut+" ended, 1 within 30 s after "+killed+" ended") {
		t.Errorf("partition line %q", text)
	}
}
