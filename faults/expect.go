package faults

import "github.com/ackcheck/ackcheck/drivers"

// ExpectFrom is Injector.Expect for a broker's profile p and the run's
// driver d: p's own expectation of an action that acts on a node's
// process, when p has one (drivers.FaultExpecter, asked with the action's
// drivers.NodeFault from actionTable), else "", which leaves the action's
// generic expectation (Action.Expectation). nil when p has none at all.
func ExpectFrom(p any, d drivers.Driver) func(Action) string {
	fe, ok := p.(drivers.FaultExpecter)
	if !ok {
		return nil
	}
	return func(a Action) string {
		if sp, ok := specOf(a); ok && sp.node != "" {
			return fe.ExpectFault(sp.node, d)
		}
		return ""
	}
}
