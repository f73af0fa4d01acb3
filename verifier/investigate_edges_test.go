package verifier

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
)

// A fault is ended only by its own undo, applied: a resume of another
// node, or one that failed, leaves a pause in force; an fsync-on of
// another target leaves fsync off; a fault that failed or was skipped was
// never in force, and a death observed (not applied) is. A power loss lasts
// until its nodes answered again, or to the end when they never did.
func TestFaultSpellsEndOnlyByTheirOwnUndo(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	rec := func(a faults.Action, node int32, target string, s float64, r faults.Result) faults.Record {
		return faults.Record{Action: a, Node: node, Target: target, At: at(s), Result: r}
	}
	power := rec(faults.PowerLoss, -1, "nodes:1,2", 30, faults.Applied)
	power.ReadyAt = at(33)
	recs := []faults.Record{
		rec(faults.UnexpectedDeath, 2, "node:2", 5, faults.Observed),
		rec(faults.Restart, 2, "node:2", 8, faults.Applied),
		rec(faults.Pause, 1, "node:1", 10, faults.Applied),
		rec(faults.Pause, 3, "node:3", 10.5, faults.Failed),
		rec(faults.Resume, 2, "node:2", 12, faults.Applied),
		rec(faults.Resume, 1, "node:1", 14, faults.Failed),
		rec(faults.Resume, 1, "node:1", 16, faults.Applied),
		rec(faults.Stop, 4, "node:4", 20, faults.Applied),
		rec(faults.Kill, 5, "node:5", 21, faults.Skipped),
		rec(faults.Restart, 4, "node:4", 25, faults.Applied),
		power,
		rec(faults.FsyncOff, -1, "topic:a", 40, faults.Applied),
		rec(faults.FsyncOn, -1, "topic:b", 41, faults.Applied),
		rec(faults.FsyncOn, -1, "topic:a", 42, faults.Applied),
		rec(faults.SwitchAction("maintenance", true), -1, "", 50, faults.Applied),
		rec(faults.SwitchAction("other", false), -1, "", 52, faults.Applied),
		rec(faults.SwitchAction("maintenance", false), -1, "", 55, faults.Applied),
		rec(faults.PowerLoss, -1, "node:3", 60, faults.Applied),
	}
	spells := faultSpells(recs, start)
	for _, tc := range []struct {
		s    float64
		want string
	}{
		{4, ""},
		{6, "node 2 died unasked (since 5.0 s)"},
		{9, ""},
		{11, "node 1 paused (since 10.0 s)"},
		{13, "node 1 paused (since 10.0 s)"},
		{15, "node 1 paused (since 10.0 s)"},
		{17, ""},
		{22, "node 4 stopped (since 20.0 s)"},
		{26, ""},
		{31, "power loss of nodes:1,2 (since 30.0 s)"},
		{34, ""},
		{41.5, "fsync off for topic:a (since 40.0 s)"},
		{43, ""},
		{53, "maintenance on (since 50.0 s)"},
		{56, ""},
		{1000, "power loss of node:3 (since 60.0 s)"},
	} {
		if got := strings.Join(inForce(spells, at(tc.s).UnixNano()), "; "); got != tc.want {
			t.Errorf("at %.1f s: in force %q, want %q", tc.s, got, tc.want)
		}
	}
}

// readLines reads a listing file's JSON lines.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
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
	return lines
}

// Lists that stay under their cap are not capped and carry no capped line;
// each of the three files holds its own class, with the send time in
// seconds after the load's start; an offset 0 is a real lowest offset, even
// after a loss whose offset was not known; the summary names every listing
// that holds something and skips the empty ones.
func TestInvestigationListsUncapped(t *testing.T) {
	start := time.Unix(1000, 0)
	s := func(sec float64) int64 { return start.Add(time.Duration(sec * float64(time.Second))).UnixNano() }
	dir := t.TempDir()
	inv, err := newInvestigation(dir, 3, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv.addLost("a", 0, -1, s(3), s(4), 0)
	inv.addLost("b", 0, 0, s(1), s(2), 0)
	inv.addLost("c", 0, 5, s(2), s(3), 0)
	inv.addDuplicate(DuplicateLine{ID: "d", Partition: 1, Offset: 5, OtherOffsets: []int64{9}}, s(2.5))
	res := &Result{}
	if err := inv.finish(dir, res); err != nil {
		t.Fatal(err)
	}
	if p := res.LostByPartition[0]; p == nil || p.FirstOffset != 0 || p.LastOffset != 5 || p.FirstSentS != 1 || p.LastSentS != 3 {
		t.Errorf("partition 0: %+v; want offsets 0-5, sent 1-3 s", p)
	}
	want := []Listing{
		{File: LostFile, Class: CheckLost, Listed: 3, Total: 3},
		{File: DuplicatesFile, Class: CheckDuplicates, Listed: 1, Total: 1},
		{File: ReorderedFile, Class: CheckReordered},
		{File: UnreadFile, Class: ClassUnread},
	}
	if !reflect.DeepEqual(res.Listings, want) {
		t.Errorf("listings %+v, want %+v", res.Listings, want)
	}
	if l := readLines(t, filepath.Join(dir, LostFile)); len(l) != 3 || l[0]["id"] != "a" || l[1]["id"] != "b" || l[2]["id"] != "c" {
		t.Errorf("lost.jsonl %v", l)
	}
	if l := readLines(t, filepath.Join(dir, DuplicatesFile)); len(l) != 1 || l[0]["id"] != "d" || l[0]["sent_s"] != 2.5 {
		t.Errorf("duplicates.jsonl %v", l)
	}
	if l := readLines(t, filepath.Join(dir, ReorderedFile)); len(l) != 0 {
		t.Errorf("reordered.jsonl %v", l)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) != 0 {
		t.Errorf("left behind %v", left)
	}
	var sum strings.Builder
	res.writeInvestigation(&sum)
	wantSum := "  lost by partition (1 partitions lost messages; worst first):\n" +
		"    partition 0: 3 lost, acked offsets 0-5, sent 1.0-3.0 s; acked while no fault in force\n" +
		"  lost.jsonl lists all 3 lost messages\n" +
		"  duplicates.jsonl lists all 1 duplicates messages\n"
	if sum.String() != wantSum {
		t.Errorf("summary\n%s\nwant\n%s", sum.String(), wantSum)
	}
}

// A reordered message's line, and a capped listing as the summary says it
// (with no loss, no per-partition lines).
func TestInvestigationReorderedCapped(t *testing.T) {
	start := time.Unix(1000, 0)
	dir := t.TempDir()
	inv, err := newInvestigation(dir, 1, start, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		inv.addReordered(ReorderedLine{ID: id, Partition: 2, Offset: 3, PreviousOffset: 4}, start.Add(1500*time.Millisecond).UnixNano())
	}
	res := &Result{}
	if err := inv.finish(dir, res); err != nil {
		t.Fatal(err)
	}
	l := readLines(t, filepath.Join(dir, ReorderedFile))
	if len(l) != 2 || l[0]["id"] != "r1" || l[0]["sent_s"] != 1.5 || l[0]["previous_offset"] != 4.0 || l[1]["capped"] != true || l[1]["total"] != 3.0 {
		t.Errorf("reordered.jsonl %v", l)
	}
	var sum strings.Builder
	res.writeInvestigation(&sum)
	if want := "  reordered.jsonl lists 1 of 3 reordered messages (capped by --list-max)\n"; sum.String() != want {
		t.Errorf("summary %q, want %q", sum.String(), want)
	}
}

// A directory that cannot be written to is an error that says which list,
// and leaves no half-written file behind.
func TestInvestigationUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	// The third file cannot be created: a directory is in its way.
	if err := os.Mkdir(filepath.Join(dir, ReorderedFile+".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := newInvestigation(dir, 0, time.Unix(0, 0), nil)
	if err == nil || !strings.Contains(err.Error(), "write the list of "+CheckReordered+" messages") {
		t.Fatalf("err %v", err)
	}
	for _, f := range []string{LostFile, DuplicatesFile} {
		if _, err := os.Stat(filepath.Join(dir, f+".tmp")); !os.IsNotExist(err) {
			t.Errorf("%s.tmp left behind (%v)", f, err)
		}
	}
}

// The worst partitions come most lost first, ties by the lower partition,
// at most n; a partition's line counts each set of faults in force, most
// first (ties in name order), and names a single one without a count.
func TestWorstPartitionsAndLossText(t *testing.T) {
	r := &Result{LostByPartition: map[int32]*PartitionLoss{
		4: {Count: 5, FirstOffset: 10, LastOffset: 20, FirstSentS: 1, LastSentS: 2, AckedWhile: map[string]int64{"b": 2, "a": 2, "c": 1}},
		2: {Count: 5, FirstOffset: 1, LastOffset: 9, FirstSentS: 0.5, LastSentS: 4, AckedWhile: map[string]int64{"x": 1, "y": 4}},
		7: {Count: 9, FirstOffset: -1, LastOffset: -1, AckedWhile: map[string]int64{NoFaultInForce: 9}},
		1: {Count: 1, AckedWhile: map[string]int64{}},
	}}
	for _, tc := range []struct {
		n    int
		want []int32
	}{{0, []int32{}}, {2, []int32{7, 2}}, {3, []int32{7, 2, 4}}, {9, []int32{7, 2, 4, 1}}} {
		if got := r.WorstPartitions(tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("worst %d: %v, want %v", tc.n, got, tc.want)
		}
	}
	for p, want := range map[int32]string{
		4: "partition 4: 5 lost, acked offsets 10-20, sent 1.0-2.0 s; acked while a (2), b (2), c (1)",
		2: "partition 2: 5 lost, acked offsets 1-9, sent 0.5-4.0 s; acked while y (4), x (1)",
		7: "partition 7: 9 lost, acked offsets -1--1, sent 0.0-0.0 s; acked while no fault in force",
		1: "partition 1: 1 lost, acked offsets 0-0, sent 0.0-0.0 s",
		3: "",
	} {
		if got := r.PartitionLossText(p); got != want {
			t.Errorf("partition %d: %q, want %q", p, got, want)
		}
	}
}

// Slip in either direction is printed from SlipNote on, and a fault late
// by exactly SlipWarn is not warned about (more than SlipWarn is).
func TestSlipEdges(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		at       float64
		due      *float64
		when     string
		warnings int
	}{
		{26, f(28), "26.0 s (due 28.0 s, -2.00 s late)", 0},
		// Exactly SlipNote either way is on time (0.1 - 0 is exactly 0.1).
		{0.1, f(0), "0.1 s", 0},
		{0, f(0.1), "0.0 s", 0},
		{27.96, f(28), "28.0 s", 0},
		{29, f(28), "29.0 s (due 28.0 s, 1.00 s late)", 0},
		{29.25, f(28), "29.2 s (due 28.0 s, 1.25 s late)", 1},
	} {
		fr := FaultReport{Record: faults.Record{Action: faults.Kill, Target: "node:3", Node: 3, Result: faults.Applied}, AtS: tc.at, DueS: tc.due}
		if got := fr.FaultWhen(); got != tc.when {
			t.Errorf("at %v: when %q, want %q", tc.at, got, tc.when)
		}
		res := &Result{Faults: []FaultReport{fr}}
		slipWarnings(res)
		if len(res.Warnings) != tc.warnings {
			t.Errorf("at %v: warnings %q", tc.at, res.Warnings)
		}
	}
}

// A list that cannot be put in place is an error naming the file, its
// temporary file is removed, and the lists that could be written are
// still in place and in the result.
func TestInvestigationFinishFails(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where lost.jsonl goes: the rename fails.
	if err := os.MkdirAll(filepath.Join(dir, LostFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	inv, err := newInvestigation(dir, 0, time.Unix(0, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	inv.addLost("a", 0, 1, 1, 2, 0)
	inv.addDuplicate(DuplicateLine{ID: "d"}, 1)
	res := &Result{}
	err = inv.finish(dir, res)
	if err == nil || !strings.Contains(err.Error(), "write the lists of failing messages: "+LostFile+": ") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LostFile+".tmp")); !os.IsNotExist(err) {
		t.Errorf("%s.tmp left behind (%v)", LostFile, err)
	}
	want := []Listing{{File: DuplicatesFile, Class: CheckDuplicates, Listed: 1, Total: 1}, {File: ReorderedFile, Class: CheckReordered}, {File: UnreadFile, Class: ClassUnread}}
	if !reflect.DeepEqual(res.Listings, want) {
		t.Errorf("listings %+v, want %+v", res.Listings, want)
	}
	if l := readLines(t, filepath.Join(dir, DuplicatesFile)); len(l) != 1 {
		t.Errorf("duplicates.jsonl %v", l)
	}
}
