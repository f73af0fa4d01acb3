package verifier

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// A re-read judges with the run's own checks; a flag given explicitly
// replaces one, and only a change of value is recorded; a run whose
// checks were never saved says so.
func TestRejudge(t *testing.T) {
	run := Checks{Ordered: true, NoDuplicates: true, MaxNoAck: Duration(time.Millisecond), MaxReady: Duration(2 * time.Second), MaxInSync: Duration(3 * time.Second)}
	none := func(string) bool { return false }
	given := func(flags ...string) func(string) bool {
		return func(f string) bool { return slices.Contains(flags, f) }
	}
	tests := []struct {
		name    string
		saved   *Checks
		given   Options
		changed func(string) bool
		want    Checks
		changes []string
	}{
		{"nothing given: the run's checks", &run, Options{}, none, run, nil},
		{"--ordered=false given", &run, Options{}, given("ordered"),
			Checks{NoDuplicates: true, MaxNoAck: run.MaxNoAck, MaxReady: run.MaxReady, MaxInSync: run.MaxInSync},
			[]string{"--ordered: on at the run, off at this verify"}},
		{"--no-duplicates=false given", &run, Options{}, given("no-duplicates"),
			Checks{Ordered: true, MaxNoAck: run.MaxNoAck, MaxReady: run.MaxReady, MaxInSync: run.MaxInSync},
			[]string{"--no-duplicates: on at the run, off at this verify"}},
		{"--max-no-ack 0 given", &run, Options{}, given("max-no-ack"),
			Checks{Ordered: true, NoDuplicates: true, MaxReady: run.MaxReady, MaxInSync: run.MaxInSync},
			[]string{"--max-no-ack: 1ms at the run, none at this verify"}},
		{"--max-ready 5s given", &run, Options{MaxReady: 5 * time.Second}, given("max-ready"),
			Checks{Ordered: true, NoDuplicates: true, MaxNoAck: run.MaxNoAck, MaxReady: Duration(5 * time.Second), MaxInSync: run.MaxInSync},
			[]string{"--max-ready: 2s at the run, 5s at this verify"}},
		{"--max-in-sync 0 given", &run, Options{}, given("max-in-sync"),
			Checks{Ordered: true, NoDuplicates: true, MaxNoAck: run.MaxNoAck, MaxReady: run.MaxReady},
			[]string{"--max-in-sync: 3s at the run, none at this verify"}},
		{"a flag given with the run's value is no change", &run, Options{Ordered: true}, given("ordered"), run, nil},
		{"flags not given are ignored", &run, Options{}, none, run, nil},
		{"checks unknown", nil, Options{Ordered: true}, none, Checks{Ordered: true},
			[]string{"the checks this run was judged by are unknown (its run.json predates ackcheck saving them): judged at this verify with " +
				"--no-duplicates off, --ordered on, --max-no-ack none, --max-ready none, --max-in-sync none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Rejudge(tc.saved, tc.given, tc.changed, "verify")
			if got := ChecksOf(o); got != tc.want {
				t.Errorf("checks %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(o.Changes, tc.changes) {
				t.Errorf("changes %q, want %q", o.Changes, tc.changes)
			}
			if o.ChecksUnknown != (tc.saved == nil) {
				t.Errorf("ChecksUnknown %v", o.ChecksUnknown)
			}
			// The verdict records what it was judged by.
			r := &Result{Sent: 1, Acked: 1, ReadBackComplete: true}
			applyVerdict(r, o)
			if *r.Checks != tc.want || !slices.Equal(r.CheckChanges, tc.changes) || r.ChecksUnknown != (tc.saved == nil) {
				t.Errorf("result records %+v %q %v", r.Checks, r.CheckChanges, r.ChecksUnknown)
			}
		})
	}
}

// Every Options field that can change the verdict is a saved check: a
// new one added to Options without a place in Checks (and checkFlags)
// would be dropped by every re-read. The fields that only shape the
// report, and the re-read's own record, are listed here on purpose.
func TestChecksCoverOptions(t *testing.T) {
	notChecks := []string{"Window", "MaxSamples", "Changes", "ChecksUnknown", "ListDir", "ListMax"}
	var checks []string
	ct := reflect.TypeOf(Checks{})
	for i := range ct.NumField() {
		checks = append(checks, ct.Field(i).Name)
	}
	ot := reflect.TypeOf(Options{})
	for i := range ot.NumField() {
		n := ot.Field(i).Name
		if !slices.Contains(notChecks, n) && !slices.Contains(checks, n) {
			t.Errorf("Options.%s is neither a saved check nor listed as report-only", n)
		}
	}
	if len(checkFlags) != len(checks) {
		t.Errorf("%d check flags for %d checks", len(checkFlags), len(checks))
	}
	// Each flag moves its own check and only it.
	all := Options{NoDuplicates: true, Ordered: true, MaxNoAck: 1, MaxReady: 2, MaxInSync: 3}
	for _, c := range checkFlags {
		var o Options
		c.take(&o, all)
		if c.text(o) != c.text(all) || ChecksOf(o) == ChecksOf(all) || ChecksOf(o) == (Checks{}) {
			t.Errorf("--%s moves %+v", c.flag, ChecksOf(o))
		}
	}
}

// Saved checks read back as they were written, durations as text.
func TestChecksJSON(t *testing.T) {
	c := Checks{Ordered: true, MaxNoAck: Duration(time.Millisecond)}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"no_duplicates":false,"ordered":true,"max_no_ack":"1ms","max_ready":"0s","max_in_sync":"0s"}`; string(data) != want {
		t.Fatalf("%s, want %s", data, want)
	}
	var back Checks
	if err := json.Unmarshal(data, &back); err != nil || back != c {
		t.Fatalf("%+v %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"max_no_ack":"soon"}`), &back); err == nil {
		t.Fatal("a damaged duration was accepted")
	}
}

// A saved duration also reads as a plain number of nanoseconds (as a
// time.Duration is written by encoding/json); anything else is refused.
func TestDurationReadsNanoseconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Duration
		ok   bool
	}{
		{`1000000`, Duration(time.Millisecond), true},
		{`0`, 0, true},
		{`"250ms"`, Duration(250 * time.Millisecond), true},
		{`true`, 0, false},
		{`1.5`, 0, false},
	} {
		var d Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err == nil) != tc.ok || d != tc.want {
			t.Errorf("%s: %v (%v), want %v ok %v", tc.in, d, err, tc.want, tc.ok)
		}
	}
}
