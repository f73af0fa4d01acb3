// Package scenarios holds ackcheck's built-in fault scenarios: named,
// documented schedules that state what they expect, in the manner of
// roachtest's specs (kafka/leader-kill/acks=all).
package scenarios

import (
	"fmt"
	"time"

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

// Name is the scenario's hierarchical name for a driver (and, for Kafka,
// its producer acks).
func (s LeaderKill) Name(driver, acks string) string {
	if driver == "kafka" {
		return "kafka/leader-kill/acks=" + acks
	}
	return driver + "/leader-kill"
}

// Expect states the expected outcome, quoted in reports.
func (s LeaderKill) Expect(driver, acks string) string {
	switch driver {
	case "nats":
		return "a new stream leader is elected from the current replicas within seconds; acks pause for the streams the killed server led and resume; the restarted server catches up as a follower; no acknowledged message is lost"
	case "pulsar":
		return "the killed broker's topics move to another broker, or wait for it to restart; acks pause for them and resume; no acknowledged message is lost"
	}
	if acks == "all" || acks == "-1" {
		return "a new leader is elected from the in-sync replicas within seconds; acks pause for the partitions the killed broker led and resume; the restarted broker rejoins as a follower; no acknowledged message is lost"
	}
	return "a new leader is elected within seconds; with acks=" + acks + " the old leader may have acknowledged messages no follower had copied yet, and those can be lost"
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
