package verifier

import (
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// Experiment is how far a run got against the experiment it was asked
// for (ledger.Plan, recorded before the load). "Nothing acked was lost"
// is a statement about that experiment: a load that stopped after a
// tenth of its schedule, or a fault that never fired, tested something
// else, so such a run is Aborted, never Pass, whatever its read-back
// found (a loss it proves is Fail all the same).
type Experiment struct {
	// Scheduled is how many sends the load's schedule held.
	Scheduled int64 `json:"scheduled"`
	// Reached is how many of them the load got to (sent, plus shed when
	// shed was measured); nil when the load never recorded its end (its
	// ackcheck died): Sent is then what is known.
	Reached *int64 `json:"reached,omitempty"`
	// PlannedS is the schedule's length in seconds.
	PlannedS float64 `json:"planned_s"`
	// LoadEnded: the load ran its whole schedule and recorded its end.
	LoadEnded bool `json:"load_ended"`
	// FaultsPlanned is how many fault steps the schedule held, and
	// FaultsNotFired each one with no applied record, with why.
	FaultsPlanned  int      `json:"faults_planned"`
	FaultsNotFired []string `json:"faults_not_fired,omitempty"`
}

// Aborted reports whether the run was not the experiment asked for.
func (e *Experiment) Aborted() bool {
	return e != nil && (!e.LoadEnded || len(e.FaultsNotFired) > 0)
}

// Why says, in one sentence, how the run fell short of its plan ("" when
// it did not): how far the load got and which faults never fired.
func (e *Experiment) Why(sent int64) string {
	if !e.Aborted() {
		return ""
	}
	var parts []string
	if !e.LoadEnded {
		switch {
		case e.Reached == nil:
			parts = append(parts, fmt.Sprintf("the load never recorded its end (its ackcheck stopped): %d of the %d scheduled sends are in the ledger (%s of the planned %s)",
				sent, e.Scheduled, percent(sent, e.Scheduled), secondsText(e.PlannedS)))
		default:
			parts = append(parts, fmt.Sprintf("the load stopped at %d of the %d scheduled sends (%s of the planned %s)",
				*e.Reached, e.Scheduled, percent(*e.Reached, e.Scheduled), secondsText(e.PlannedS)))
		}
	}
	if n := len(e.FaultsNotFired); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of the %d scheduled faults did not fire: %s", n, e.FaultsPlanned, strings.Join(e.FaultsNotFired, "; ")))
	}
	return strings.Join(parts, "; ")
}

func percent(n, of int64) string {
	if of <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

func secondsText(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

// experimentOf holds run, as its ledger recorded it (ended: its load, or
// every shard's, recorded its end), and the faults as they happened, to
// the run's plan; nil for a ledger written before plans
// were kept, which is judged as before. A planned step fired when a
// record of it (same action and target, due at its time after the load's
// start) says it was applied; a skipped or failed one did not.
func experimentOf(run ledger.RunInfo, ended bool, records []faults.Record) *Experiment {
	p := run.Plan
	if p == nil {
		return nil
	}
	e := &Experiment{Scheduled: p.Scheduled, PlannedS: p.Duration.Seconds(), FaultsPlanned: len(p.Faults)}
	if ended {
		reached := run.Reached
		e.Reached = &reached
		e.LoadEnded = run.Clean && reached >= p.Scheduled
	}
	used := make([]bool, len(records))
	for _, pf := range p.Faults {
		if why := firedOrWhy(pf, run.LoadStart, records, used); why != "" {
			e.FaultsNotFired = append(e.FaultsNotFired, pf.Step+": "+why)
		}
	}
	return e
}

// dueSlack is how far a record's due time may sit from the plan's: the
// injector computes both from the same start and offset, and JSON keeps
// nanoseconds, so only clock representation can differ.
const dueSlack = time.Millisecond

// firedOrWhy finds pf's record among records not yet used (marking it
// used) and returns "" when it was applied, otherwise why it did not fire.
func firedOrWhy(pf ledger.PlannedFault, start time.Time, records []faults.Record, used []bool) string {
	due := start.Add(pf.At)
	for i, r := range records {
		if used[i] || string(r.Action) != pf.Action || r.Target != pf.Target {
			continue
		}
		if d := r.Due.Sub(due); r.Due.IsZero() || d < -dueSlack || d > dueSlack {
			continue
		}
		used[i] = true
		switch r.Result {
		case faults.Applied:
			return ""
		case faults.Skipped, faults.Failed:
			return fmt.Sprintf("%s (%s)", r.Result, r.Error)
		default:
			return string(r.Result)
		}
	}
	return "never fired (no record of it)"
}
