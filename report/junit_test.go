package report_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

type junitDoc struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	Cases    []struct {
		Name      string    `xml:"name,attr"`
		Time      *string   `xml:"time,attr"`
		Failure   *struct{} `xml:"failure"`
		Error     *struct{} `xml:"error"`
		Skipped   *struct{} `xml:"skipped"`
		SystemOut string    `xml:"system-out"`
	} `xml:"testcase"`
}

// statuses parses JUnit XML into case name -> passed, failed, error or
// skipped, checking what every case and the suite must carry.
func statuses(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var s junitDoc
	if err := xml.Unmarshal(data, &s); err != nil {
		t.Fatalf("JUnit XML: %v\n%s", err, data)
	}
	got := map[string]string{}
	counts := map[string]int{}
	for _, c := range s.Cases {
		if c.Time == nil {
			t.Errorf("case %q has no time", c.Name)
		}
		st := "passed"
		switch {
		case c.Failure != nil:
			st = "failed"
		case c.Error != nil:
			st = "error"
		case c.Skipped != nil:
			st = "skipped"
		}
		got[c.Name] = st
		counts[st]++
	}
	if s.Name != "ackcheck kafka" {
		t.Errorf("suite name %q: want the same name for every run of a driver", s.Name)
	}
	if s.Tests != len(s.Cases) || s.Failures != counts["failed"] || s.Errors != counts["error"] || s.Skipped != counts["skipped"] || s.Time == "" {
		t.Errorf("suite counts %+v, cases %v", s, counts)
	}
	return got
}

// The stable case names and the check of result.json each one reports.
// Deadline cases are always there; none holds a measured value.
var caseChecks = []struct{ name, check, flag string }{
	{"no acked message lost", verifier.CheckLost, ""},
	{"no corruption", verifier.CheckCorrupt, ""},
	{"no phantom", verifier.CheckPhantom, ""},
	{"no duplicates (--no-duplicates)", verifier.CheckDuplicates, "no-duplicates"},
	{"in order (--ordered)", verifier.CheckReordered, "ordered"},
	{"read-back complete", verifier.CheckReadBack, ""},
	{"something sent", verifier.CheckSent, ""},
	{"something acked", verifier.CheckAcked, ""},
	{"deadline: acks never stop longer than --max-no-ack", verifier.CheckMaxNoAck, "max-no-ack"},
	{"deadline: nodes ready again within --max-ready", verifier.CheckMaxReady, "max-ready"},
	{"deadline: replicas in sync within --max-in-sync", verifier.CheckMaxInSync, "max-in-sync"},
	{"no unexpected node death", verifier.CheckUnexpectedDeath, ""},
	{"the experiment ran as scheduled", verifier.CheckExperiment, ""},
	{"ledger proven whole", verifier.CheckLedgerWhole, ""},
	{"no acked message skipped by the consumer group (--group)", verifier.CheckSkipped, ""},
	{"no acknowledged commit lost (--group, durable commits)", verifier.CheckCommitLost, ""},
}

// wantStatus is what result.json says a case must be, worked out from
// result.json alone (not from report.Checks).
func wantStatus(r verifier.Result, check, flag string) string {
	failed := slices.ContainsFunc(r.Failures, func(f verifier.Failure) bool { return f.Check == check })
	on := flag == "" // checks not recorded: only the standing ones are known on
	if c := r.Checks; c != nil {
		on = map[string]bool{"": true, "no-duplicates": c.NoDuplicates, "ordered": c.Ordered,
			"max-no-ack": c.MaxNoAck > 0, "max-ready": c.MaxReady > 0, "max-in-sync": c.MaxInSync > 0}[flag]
	}
	readsCheck := slices.Contains([]string{verifier.CheckLost, verifier.CheckCorrupt, verifier.CheckPhantom, verifier.CheckDuplicates,
		verifier.CheckReordered, verifier.CheckReadBack}, check)
	unfinished := !r.ReadBackComplete && !r.TopicGone
	switch {
	case check == verifier.CheckReadBack && unfinished:
		return "error"
	case (check == verifier.CheckSkipped || check == verifier.CheckCommitLost) && r.Group == nil:
		return "skipped" // a run without a consumer group
	case check == verifier.CheckLedgerWhole && r.Ledger == nil:
		return "skipped" // judged from a ledger open for writing
	case check == verifier.CheckExperiment && r.Experiment == nil:
		return "skipped" // a run from before plans were recorded
	case (check == verifier.CheckLedgerWhole || check == verifier.CheckExperiment) && failed:
		return "error" // no verdict: not the broker's failure
	case failed:
		return "failed"
	case !on:
		return "skipped"
	case readsCheck && unfinished:
		return "error"
	}
	return "passed"
}

// checkAgainstResult parses the JUnit file and checks each case's status
// against the result.json beside it.
func checkAgainstResult(t *testing.T, junit []byte, resultJSON string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(resultJSON)
	if err != nil {
		t.Fatal(err)
	}
	var r verifier.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	got := statuses(t, junit)
	// Exactly the stable names: no case comes and goes, none holds a
	// measured value.
	if len(got) != len(caseChecks) {
		t.Errorf("%d cases, want %d: %v", len(got), len(caseChecks), got)
	}
	for _, c := range caseChecks {
		if w := wantStatus(r, c.check, c.flag); got[c.name] != w {
			t.Errorf("case %q is %q; result.json (verdict %s, failures %+v) says %q", c.name, got[c.name], r.Verdict, r.Failures, w)
		}
	}
	return got
}

// A real run against kfake under each set of checks: the JUnit cases
// match result.json one by one, checks that were off are skipped, and the
// deadline cases are there whether set or not.
func TestJUnitMatchesResult(t *testing.T) {
	tests := []struct {
		name string
		opts verifier.Options
		want map[string]string // a few cases' statuses, beyond the match with result.json
	}{
		{"checks off", verifier.Options{}, map[string]string{"in order (--ordered)": "skipped", "no duplicates (--no-duplicates)": "skipped",
			"deadline: acks never stop longer than --max-no-ack": "skipped", "no acked message lost": "passed"}},
		{"checks on, a deadline missed", verifier.Options{Ordered: true, NoDuplicates: true, MaxNoAck: time.Millisecond, MaxReady: time.Hour},
			map[string]string{"in order (--ordered)": "passed", "no duplicates (--no-duplicates)": "passed",
				"deadline: acks never stop longer than --max-no-ack": "failed", "deadline: nodes ready again within --max-ready": "passed",
				"deadline: replicas in sync within --max-in-sync": "skipped"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := kfakeRun(t, tc.opts)
			res, err := runner.Report(context.Background(), out, verifier.Rejudge(mustSettings(t, out).Checks, verifier.Options{}, func(string) bool { return false }, "report"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := report.JUnit(res)
			if err != nil {
				t.Fatal(err)
			}
			got := checkAgainstResult(t, data, filepath.Join(out, "result.json"))
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("case %q is %q, want %q", name, got[name], w)
				}
			}
		})
	}
}

// Results that cannot come from a quick kfake run: an unfinished
// read-back (error cases, and the command to finish it), a topic gone,
// a result.json from before checks were recorded.
func TestJUnitStatuses(t *testing.T) {
	base := func() verifier.Result {
		return verifier.Result{RunID: "r", Driver: "kafka", Sent: 10, Acked: 10, Read: 10, ReadBackComplete: true, Verdict: verifier.Pass,
			Checks: &verifier.Checks{Ordered: true}}
	}
	unfinished := base()
	unfinished.ReadBackComplete, unfinished.Read, unfinished.Lost, unfinished.Verdict = false, 4, 6, verifier.Incomplete
	unfinished.Resume = "ackcheck verify --out runs/x"
	unfinished.Failures = []verifier.Failure{{Check: verifier.CheckReadBack, Message: "the read-back did not finish: partition 1: stopped"}}
	gone := base()
	gone.ReadBackComplete, gone.TopicGone, gone.Read, gone.Lost, gone.Verdict = false, true, 0, 10, verifier.Fail
	gone.Failures = []verifier.Failure{{Check: verifier.CheckLost, Message: "10 lost"}, {Check: verifier.CheckReadBack, Message: "topic t gone"}}
	unproven := base()
	unproven.Ledger = &ledger.Proof{Events: 30, Reason: "written by an older ackcheck"}
	unproven.Verdict = verifier.Unproven
	unproven.Failures = []verifier.Failure{{Check: verifier.CheckLedgerWhole, Message: "the run's ledger cannot be proven whole: written by an older ackcheck"}}
	whole := base()
	whole.Ledger = &ledger.Proof{Whole: true, Flushes: 3, Fragments: 3, Events: 30}
	old := base()
	old.Checks = nil
	old.Verdict = verifier.Fail
	old.Failures = []verifier.Failure{{Check: verifier.CheckReordered, Message: "3 messages out of order (--ordered)"}}
	tests := []struct {
		name string
		r    verifier.Result
		want map[string]string
	}{
		{"unfinished", unfinished, map[string]string{"read-back complete": "error", "no acked message lost": "error", "in order (--ordered)": "error",
			"no duplicates (--no-duplicates)": "skipped", "something acked": "passed"}},
		{"topic gone", gone, map[string]string{"read-back complete": "failed", "no acked message lost": "failed", "in order (--ordered)": "passed"}},
		{"checks not recorded", old, map[string]string{"in order (--ordered)": "failed", "no duplicates (--no-duplicates)": "skipped", "ledger proven whole": "skipped"}},
		{"ledger not proven whole", unproven, map[string]string{"ledger proven whole": "error", "no acked message lost": "passed"}},
		{"ledger proven whole", whole, map[string]string{"ledger proven whole": "passed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := report.JUnit(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "result.json")
			js, _ := json.Marshal(tc.r)
			os.WriteFile(path, js, 0o644)
			got := checkAgainstResult(t, data, path)
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("case %q is %q, want %q", name, got[name], w)
				}
			}
			if tc.r.Resume != "" && !strings.Contains(string(data), tc.r.Resume) {
				t.Errorf("the error case does not say how to finish: %s", data)
			}
		})
	}
}

func kfakeRun(t *testing.T, opts verifier.Options) string {
	t.Helper()
	c := newKfake(t)
	d := kafkaDriver(t, c.ListenAddrs())
	out := filepath.Join(t.TempDir(), "run")
	_, err := runner.Run(context.Background(), runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
		Load:   load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
		Verify: true, Check: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustSettings(t *testing.T, out string) runner.Settings {
	t.Helper()
	s, err := runner.ReadSettings(out)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newKfake(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func kafkaDriver(t *testing.T, brokers []string) *kafka.Driver {
	t.Helper()
	d, err := kafka.New(kafka.Config{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Every check a verdict can fail has its case, and a failure of a check
// the list does not know still fails a case.
func TestJUnitCoversEveryCheck(t *testing.T) {
	var names []string
	for _, c := range caseChecks {
		names = append(names, c.check)
	}
	for _, c := range verifier.CheckNames {
		if !slices.Contains(names, c) {
			t.Errorf("check %q has no JUnit case", c)
		}
	}
	r := &verifier.Result{Driver: "kafka", Sent: 1, Acked: 1, Read: 1, ReadBackComplete: true, Verdict: verifier.Fail, Checks: &verifier.Checks{},
		Failures: []verifier.Failure{{Check: "future-check", Message: "it failed"}}}
	data, err := report.JUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, data); got["future-check"] != "failed" {
		t.Fatalf("an unknown check's failure: %v", got)
	}
}

// Issue 35, point 6: a check the run set and a re-judge dropped is named
// in the JUnit file, as a property and in its case's skip message, never
// only "not set for this verdict"; without a change the skip says only
// that the check was off.
func TestJUnitNamesADroppedCheck(t *testing.T) {
	base := verifier.Result{Driver: "kafka", RunID: "r1", Sent: 1, Acked: 1, Read: 1, ReadBackComplete: true, Verdict: verifier.Pass, Checks: &verifier.Checks{}}
	change := "--max-no-ack: 1ms at the run, none at this verify"
	for _, tc := range []struct {
		name    string
		changes []string
		want    bool
	}{{"dropped at the re-judge", []string{change}, true}, {"off at the run too", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			r.CheckChanges = tc.changes
			data, err := report.JUnit(&r)
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
				Cases []struct {
					Name    string `xml:"name,attr"`
					Skipped *struct {
						Message string `xml:"message,attr"`
					} `xml:"skipped"`
				} `xml:"testcase"`
			}
			if err := xml.Unmarshal(data, &s); err != nil {
				t.Fatal(err)
			}
			prop := slices.ContainsFunc(s.Props, func(p struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			}) bool {
				return p.Name == "check_change" && p.Value == change
			})
			var msg string
			for _, c := range s.Cases {
				if c.Name == "deadline: acks never stop longer than --max-no-ack" && c.Skipped != nil {
					msg = c.Skipped.Message
				}
			}
			if prop != tc.want || strings.Contains(msg, change) != tc.want || msg == "" {
				t.Fatalf("property %v, skip message %q; want the change named: %v\n%s", prop, msg, tc.want, data)
			}
			// Another check's skip never borrows the change.
			for _, c := range s.Cases {
				if c.Skipped != nil && c.Name != "deadline: acks never stop longer than --max-no-ack" && strings.Contains(c.Skipped.Message, "changed") {
					t.Fatalf("case %q names a change it did not have: %q", c.Name, c.Skipped.Message)
				}
			}
		})
	}
}
