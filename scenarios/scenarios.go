// Package scenarios holds ackcheck's built-in fault scenarios: named,
// documented schedules that state what they expect, in the manner of
// roachtest's specs (kafka/leader-kill/acks=all).
package scenarios

import (
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
)

// LeaderKill is the leader-kill cell of shared/references/003_*, scaled to
// the run: at KillAt, SIGKILL the broker that leads the most partitions of
// the topic; RestartAfter later, start it again on the same data dir; keep
// the load on to the end; verify.
type LeaderKill struct {
	Topic        string
	KillAt       time.Duration
	RestartAfter time.Duration
}

// Describe is the scenario's hierarchical name for the broker of p under
// d's settings (kafka/leader-kill/acks=all, nats/leader-kill), and what
// the broker's documentation says it does, quoted in reports.
func (s LeaderKill) Describe(p drivers.Profile, d drivers.Driver) (name, expect string) {
	variant, expect := p.Expect(drivers.LeaderKill, d)
	name = p.Name() + "/" + string(drivers.LeaderKill)
	if variant != "" {
		name += "/" + variant
	}
	return name, expect
}

// Steps is the schedule.
func (s LeaderKill) Steps() []faults.Step {
	return []faults.Step{
		{At: s.KillAt, Action: faults.Kill, Target: faults.Target{Kind: faults.MostLeaders, Topic: s.Topic}},
		{At: s.KillAt + s.RestartAfter, Action: faults.Restart, Target: faults.Target{Kind: faults.Previous}},
	}
}

// Validate checks the schedule fits a load of the given duration.
func (s LeaderKill) Validate(duration time.Duration) error {
	if s.KillAt <= 0 || s.KillAt >= duration {
		return fmt.Errorf("--kill-at %s must fall inside the load (--duration %s)", s.KillAt, duration)
	}
	if s.RestartAfter < 0 || s.KillAt+s.RestartAfter >= duration {
		return fmt.Errorf("the restart at %s (--kill-at + --restart-after) must fall inside the load (--duration %s) so that recovery is measured under load", s.KillAt+s.RestartAfter, duration)
	}
	return nil
}
