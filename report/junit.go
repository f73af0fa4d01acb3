package report

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/verifier"
)

// junitSuite is the JUnit XML format CI systems read.
type junitSuite struct {
	XMLName  xml.Name `xml:"testsuite"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	// Properties carry what identifies this run (its run ID): the suite's
	// and cases' names stay the same from run to run, for CI histories.
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// The status of a JUnit case.
const (
	Passed  = "passed"
	Failed  = "failed"  // the check failed: the broker broke a promise
	Errored = "error"   // the check could not be judged (read-back unfinished)
	Skipped = "skipped" // the check was off for this run
)

// Check is one JUnit test case.
//
// Name is stable from run to run (CI keeps a history per name): it never
// holds a measured value. Measured values go in Out (system-out) and, when
// the check fails, in Message.
type Check struct {
	Name    string
	Status  string
	Message string  // why it failed, errored or was skipped
	Out     string  // what was measured
	Seconds float64 // the time spent gathering what the check judges
}

// caseOf is a standing check of a verdict: its case name, its
// verifier.Check, whether it was on, and what was measured for it.
type caseOf struct {
	name  string
	check string
	// off says why the check was off for the verdict ("" when on).
	off func(c *verifier.Checks) string
	// readBack: the check judges what the read-back read.
	readBack bool
	out      func(r *verifier.Result) string
}

func always(*verifier.Checks) string { return "" }

func optional(flag string, on func(c verifier.Checks) bool) func(*verifier.Checks) string {
	return func(c *verifier.Checks) string {
		switch {
		case c == nil:
			return "not recorded: this result.json predates recorded checks"
		case on(*c):
			return ""
		}
		return "off: --" + flag + " was not set for this verdict"
	}
}

var standing = []caseOf{
	{"no acked message lost", verifier.CheckLost, always, true, func(r *verifier.Result) string {
		return fmt.Sprintf("acked %d, read back %d, lost %d, unread %d (in partitions not read to their end: not judged)", r.Acked, r.Read, r.Lost, r.Unread)
	}},
	{"no corruption", verifier.CheckCorrupt, always, true, func(r *verifier.Result) string {
		return fmt.Sprintf("corrupt copies %d", r.Corrupt)
	}},
	{"no phantom", verifier.CheckPhantom, always, true, func(r *verifier.Result) string {
		return fmt.Sprintf("phantoms %d", r.Phantom)
	}},
	{"no duplicates (--no-duplicates)", verifier.CheckDuplicates, optional("no-duplicates", func(c verifier.Checks) bool { return c.NoDuplicates }), true,
		func(r *verifier.Result) string { return fmt.Sprintf("duplicate copies %d", r.Duplicates) }},
	{"in order (--ordered)", verifier.CheckReordered, optional("ordered", func(c verifier.Checks) bool { return c.Ordered }), true,
		func(r *verifier.Result) string { return fmt.Sprintf("reordered %d", r.Reordered) }},
	{"read-back complete", verifier.CheckReadBack, always, true, func(r *verifier.Result) string {
		return fmt.Sprintf("records read %d in %.1f s; complete %v", r.RecordsRead, r.ReadBackS, r.ReadBackComplete)
	}},
	{"something sent", verifier.CheckSent, always, false, func(r *verifier.Result) string {
		return fmt.Sprintf("sent %d", r.Sent)
	}},
	{"something acked", verifier.CheckAcked, always, false, func(r *verifier.Result) string {
		return fmt.Sprintf("acked %d of %d sent", r.Acked, r.Sent)
	}},
	{"deadline: acks never stop longer than --max-no-ack", verifier.CheckMaxNoAck,
		optional("max-no-ack", func(c verifier.Checks) bool { return c.MaxNoAck > 0 }), false, func(r *verifier.Result) string {
			return fmt.Sprintf("longest without acks: %.0f ms from %.1f s%s", r.LongestNoAckMs, r.LongestNoAckAt, deadlineText(r, func(c verifier.Checks) verifier.Duration { return c.MaxNoAck }))
		}},
	{"deadline: nodes ready again within --max-ready", verifier.CheckMaxReady,
		optional("max-ready", func(c verifier.Checks) bool { return c.MaxReady > 0 }), false, func(r *verifier.Result) string {
			return recoveryText(r, "ready", func(f verifier.FaultReport) float64 { return f.ReadyMs }) + deadlineText(r, func(c verifier.Checks) verifier.Duration { return c.MaxReady })
		}},
	{"deadline: replicas in sync within --max-in-sync", verifier.CheckMaxInSync,
		optional("max-in-sync", func(c verifier.Checks) bool { return c.MaxInSync > 0 }), false, func(r *verifier.Result) string {
			return recoveryText(r, "in sync", func(f verifier.FaultReport) float64 { return f.InSyncMs }) + deadlineText(r, func(c verifier.Checks) verifier.Duration { return c.MaxInSync })
		}},
	{"no unexpected node death", verifier.CheckUnexpectedDeath, always, false, func(r *verifier.Result) string {
		return fmt.Sprintf("faults recorded %d", len(r.Faults))
	}},
	{"no acked message skipped by the consumer group (--group)", verifier.CheckSkipped, always, true, func(r *verifier.Result) string {
		if r.Group == nil {
			return "no group"
		}
		return fmt.Sprintf("delivered %d, skipped %d, commits %d", r.Group.Delivered, r.Group.Skipped, r.Group.Commits)
	}},
	{"no acknowledged commit lost (--group, durable commits)", verifier.CheckCommitLost, always, false, func(r *verifier.Result) string {
		if r.Group == nil {
			return "no group"
		}
		return fmt.Sprintf("commits lost %d (durable promised: %v), redelivered %d, after a commit %d", r.Group.CommitsLost, r.Group.Durable, r.Group.Redelivered, r.Group.RedeliveredAfterCommit)
	}},
	{"the experiment ran as scheduled", verifier.CheckExperiment, always, false, func(r *verifier.Result) string {
		e := r.Experiment
		if e == nil {
			return "not recorded"
		}
		reached := "unknown (the load never recorded its end)"
		if e.Reached != nil {
			reached = fmt.Sprint(*e.Reached)
		}
		return fmt.Sprintf("scheduled sends %d, reached %s, sent %d; faults scheduled %d, not fired %d", e.Scheduled, reached, r.Sent, e.FaultsPlanned, len(e.FaultsNotFired))
	}},
	{"ledger proven whole", verifier.CheckLedgerWhole, always, false, func(r *verifier.Result) string {
		if r.Ledger == nil {
			return "not proven: the ledger was judged open for writing"
		}
		return fmt.Sprintf("whole %v: %d flushes, %d fragments, %d events", r.Ledger.Whole, r.Ledger.Flushes, r.Ledger.Fragments, r.Ledger.Events)
	}},
}

func deadlineText(r *verifier.Result, of func(verifier.Checks) verifier.Duration) string {
	if r.Checks == nil || of(*r.Checks) <= 0 {
		return ""
	}
	return fmt.Sprintf("; deadline %s", of(*r.Checks).String())
}

func recoveryText(r *verifier.Result, what string, ms func(verifier.FaultReport) float64) string {
	var parts []string
	for _, f := range r.Faults {
		if f.FirstAckMs == nil {
			continue
		}
		v := "never"
		if m := ms(f); m >= 0 {
			v = fmt.Sprintf("%.0f ms", m)
		}
		parts = append(parts, fmt.Sprintf("%s at %.1f s: %s %s", f.Action, f.AtS, what, v))
	}
	if len(parts) == 0 {
		return "no fault took a node away"
	}
	return strings.Join(parts, "; ")
}

// Checks lists the verdict's checks, one JUnit case each, always the same
// cases under the same names. A case fails where the verdict failed (from
// Result.Failures, never from the wording of a reason); a check that was
// off is skipped; when the read-back did not finish, the read-back case is
// an error and each check of what was read that did not fail is an error
// too (it was not judged on everything).
func Checks(r *verifier.Result) []Check {
	msgs := map[string][]string{}
	for _, f := range r.Failures {
		msgs[f.Check] = append(msgs[f.Check], f.Message)
	}
	loadS := 0.0
	if !r.LoadStart.IsZero() && r.LoadEnd.After(r.LoadStart) {
		loadS = r.LoadEnd.Sub(r.LoadStart).Seconds()
	}
	unfinished := r.Unfinished()
	var cs []Check
	for _, c := range standing {
		k := Check{Name: c.name, Status: Passed, Out: c.out(r), Seconds: loadS}
		if c.readBack {
			k.Seconds = r.ReadBackS
		}
		m := strings.Join(msgs[c.check], "; ")
		off := c.off(r.Checks)
		if change := changeOf(r, c.name); change != "" && off != "" {
			// A check the run set and this re-judge dropped: the skip
			// says so, never only "not set".
			off += "; changed at this re-judge: " + change
		}
		switch {
		case c.check == verifier.CheckReadBack && unfinished:
			k.Status, k.Message = Errored, m
			if r.Resume != "" && !strings.Contains(m, r.Resume) {
				k.Message += "; finish it with: " + r.Resume
			}
		case (c.check == verifier.CheckSkipped || c.check == verifier.CheckCommitLost) && r.Group == nil:
			k.Status, k.Message = Skipped, "not checked: the run had no consumer group (--group)"
		case c.check == verifier.CheckExperiment && r.Experiment == nil:
			k.Status, k.Message = Skipped, "not checked: this run predates recorded plans, so what it was asked to do is not known"
		case c.check == verifier.CheckLedgerWhole && r.Ledger == nil:
			k.Status, k.Message = Skipped, "not checked: this result was judged from a ledger open for writing, or predates the check"
		case (c.check == verifier.CheckLedgerWhole || c.check == verifier.CheckExperiment) && m != "":
			// Not the broker's failure: no verdict could be given.
			k.Status, k.Message = Errored, m
		case m != "":
			k.Status, k.Message = Failed, m
		case off != "":
			k.Status, k.Message = Skipped, off
		case c.readBack && unfinished:
			k.Status, k.Message = Errored, "not judged: the read-back did not finish, so this holds only for what was read"
		}
		cs = append(cs, k)
		delete(msgs, c.check)
	}
	// A failure of a check this list does not know (a newer result.json)
	// must still fail a case, never vanish.
	var rest []string
	for check := range msgs {
		rest = append(rest, check)
	}
	slices.Sort(rest)
	for _, check := range rest {
		cs = append(cs, Check{Name: check, Status: Failed, Message: strings.Join(msgs[check], "; "), Seconds: loadS})
	}
	return cs
}

// JUnit renders the verdict's checks as JUnit XML: one suite named for the
// driver (the run ID, topic and verdict are properties), one case per check
// (Checks). The suite's time is the load's and the read-back's.
func JUnit(r *verifier.Result) ([]byte, error) {
	s, err := suite("ackcheck "+r.Driver, "ackcheck."+r.Driver, Checks(r))
	if err != nil {
		return nil, err
	}
	total := r.ReadBackS
	if !r.LoadStart.IsZero() && r.LoadEnd.After(r.LoadStart) {
		total += r.LoadEnd.Sub(r.LoadStart).Seconds()
	}
	s.Time = seconds(total)
	props := []junitProperty{{"run_id", r.RunID}, {"topic", r.Topic}, {"verdict", r.Verdict}}
	for _, c := range r.CheckChanges {
		props = append(props, junitProperty{"check_change", c})
	}
	if r.ChecksUnknown {
		props = append(props, junitProperty{"checks_unknown", "true"})
	}
	s.Properties = &junitProperties{Property: props}
	return marshal(s)
}

// changeOf is the change a re-judge made to the check of the case named
// name ("--max-no-ack: 1ms at the run, none at this verify"), from
// Result.CheckChanges; "" when it made none. A case names its flag as
// "--flag" in its name.
func changeOf(r *verifier.Result, name string) string {
	for _, c := range r.CheckChanges {
		flag, _, ok := strings.Cut(c, ":")
		if ok && strings.HasPrefix(flag, "--") && strings.Contains(name, flag) {
			return c
		}
	}
	return ""
}

// Suite renders cases as one JUnit test suite, each case of the given
// class, the suite's time the sum of its cases' (cases that ran one after
// another).
func Suite(name, classname string, cases []Check) ([]byte, error) {
	s, err := suite(name, classname, cases)
	if err != nil {
		return nil, err
	}
	return marshal(s)
}

func suite(name, classname string, cases []Check) (junitSuite, error) {
	s := junitSuite{Name: name}
	total := 0.0
	for _, c := range cases {
		jc := junitCase{Name: c.Name, Classname: classname, Time: seconds(c.Seconds), SystemOut: c.Out}
		msg := &junitMessage{Message: c.Message, Text: c.Message}
		switch c.Status {
		case Passed:
		case Failed:
			jc.Failure = msg
			s.Failures++
		case Errored:
			jc.Error = msg
			s.Errors++
		case Skipped:
			jc.Skipped = &junitMessage{Message: c.Message}
			s.Skipped++
		default:
			return s, fmt.Errorf("junit case %q: unknown status %q", c.Name, c.Status)
		}
		total += c.Seconds
		s.Cases = append(s.Cases, jc)
	}
	s.Tests = len(s.Cases)
	s.Time = seconds(total)
	return s, nil
}

func marshal(s junitSuite) ([]byte, error) {
	out, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

func seconds(s float64) string { return strconv.FormatFloat(max(s, 0), 'f', 3, 64) }
