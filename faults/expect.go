package faults

import "github.com/ackcheck/ackcheck/drivers"

// ActionExpecter is implemented by a broker's profile (drivers/<broker>)
// that says, in its broker's own terms and under the settings of d, what
// an action does to it. "" leaves the generic expectation
// (Action.Expectation). The action is typed: a profile matches it
// against this package's constants, never against its name.
type ActionExpecter interface {
	ExpectAction(a Action, d drivers.Driver) string
}

// ExpectFrom is Injector.Expect for a broker's profile p and the run's
// driver d: p's own expectations when it has any (ActionExpecter), else
// nil, which leaves every action its generic expectation.
func ExpectFrom(p any, d drivers.Driver) func(Action) string {
	ae, ok := p.(ActionExpecter)
	if !ok {
		return nil
	}
	return func(a Action) string { return ae.ExpectAction(a, d) }
}
