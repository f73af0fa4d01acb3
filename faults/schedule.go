package faults

import (
	"fmt"
	"github.com/ackcheck/ackcheck/faults/action"
	"sort"
	"strings"
	"time"
)

// Action is what a fault does (package action owns the vocabulary, so
// that broker profiles can name actions without importing faults).
type Action = action.Action

// The actions, re-exported from package action.
const (
	Kill            = action.Kill
	Stop            = action.Stop
	Restart         = action.Restart
	Pause           = action.Pause
	Resume          = action.Resume
	FsyncOn         = action.FsyncOn
	FsyncOff        = action.FsyncOff
	PowerLoss       = action.PowerLoss
	UnexpectedDeath = action.UnexpectedDeath
	Partition       = action.Partition
	PartitionClient = action.PartitionClient
	Loss            = action.Loss
	Bandwidth       = action.Bandwidth
	Delay           = action.Delay
	HealNetwork     = action.HealNetwork
)

// SwitchAction is the action that turns the broker-wide mode name on or
// off (maintenance-on), the inverse of Action.Switch.
func SwitchAction(name string, on bool) Action { return action.Switch(name, on) }

// Step is one scheduled fault.
type Step struct {
	At     time.Duration // after the load started
	Action Action
	Target Target
	// Amount is the size of a loss, bandwidth or delay fault, as parsed
	// from the schedule (zero for the other actions).
	Amount Amount
}

// Amount is how much of a degraded-network fault to apply: exactly one
// field is set, by the action (loss: Percent, bandwidth: RateBits,
// delay: Delay).
type Amount struct {
	Percent  int
	RateBits uint64
	Delay    time.Duration
}

func (a Amount) String() string {
	switch {
	case a.Percent > 0:
		return fmt.Sprintf("%d%%", a.Percent)
	case a.RateBits > 0:
		return rateText(a.RateBits)
	case a.Delay > 0:
		return a.Delay.String()
	}
	return ""
}

func (s Step) String() string {
	if s.Action == HealNetwork {
		return fmt.Sprintf("at=%s %s", s.At, s.Action)
	}
	if s.Action.TakesAmount() {
		return fmt.Sprintf("at=%s %s %s %s", s.At, s.Action, s.Amount, s.Target)
	}
	return fmt.Sprintf("at=%s %s %s", s.At, s.Action, s.Target)
}

// ParseSchedule reads steps separated by ';' or newlines, each
//
//	at=<duration> <action> [<target>]
//
// for example "at=20s kill most-leaders:ackcheck; at=25s restart". restart
// and resume default to the node the previous fault hit; kill, stop and
// pause need a target. Steps are returned in time order.
func ParseSchedule(s string) ([]Step, error) { return Aliases(nil).ParseSchedule(s) }

// ParseSchedule is ParseSchedule, with a's words for target kinds.
func (a Aliases) ParseSchedule(s string) ([]Step, error) {
	var steps []Step
	for _, raw := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		fields := strings.Fields(raw)
		if len(fields) == 0 {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("fault %q: %s (write at=<duration> <action> [<target>], e.g. at=20s kill most-leaders:ackcheck)", strings.TrimSpace(raw), why)
		}
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "at=") {
			return nil, bad("not in the form")
		}
		at, err := time.ParseDuration(strings.TrimPrefix(fields[0], "at="))
		if err != nil || at < 0 {
			return nil, bad("at= needs a duration such as 20s or 1m30s")
		}
		st := Step{At: at, Action: Action(fields[1]), Target: Target{Kind: Previous}}
		if st.Action.TakesAmount() {
			// loss 30% node:2: the amount comes before the target.
			if len(fields) != 4 {
				return nil, bad(fmt.Sprintf("%s needs an amount and a target, e.g. at=20s loss 30%% node:2, at=20s bandwidth 1mbit node:2, at=20s delay 100ms node:2", st.Action))
			}
			if st.Amount, err = parseAmount(st.Action, fields[2]); err != nil {
				return nil, bad(err.Error())
			}
			fields = append(fields[:2], fields[3])
		}
		if len(fields) > 3 {
			return nil, bad("not in the form")
		}
		switch st.Action {
		case Kill, Stop, Pause, PowerLoss:
			if len(fields) != 3 {
				return nil, bad(string(st.Action) + " needs a target")
			}
		case Restart, Resume:
		case Partition, PartitionClient, Loss, Bandwidth, Delay:
			if len(fields) != 3 {
				return nil, bad(string(st.Action) + " needs a target, e.g. node:2, most-leaders:<topic>, follower:<topic>/<partition>")
			}
		case HealNetwork:
			if len(fields) != 2 {
				return nil, bad("heal-network takes no target: it removes every network fault in force")
			}
			st.Target = Target{Kind: Cluster}
		case FsyncOn, FsyncOff:
			if len(fields) != 3 {
				return nil, bad(string(st.Action) + " needs topic:<topic> or brokers")
			}
		default:
			if _, _, ok := st.Action.Switch(); ok {
				st.Target = Target{Kind: Cluster}
				break
			}
			return nil, bad("unknown action " + fields[1] + ": use kill, stop, restart, pause, resume, power-loss, fsync-on, fsync-off, partition, partition-client, loss, bandwidth, delay, heal-network, or <mode>-on and <mode>-off for a broker's mode (maintenance-on)")
		}
		if len(fields) == 3 {
			if st.Target, err = a.ParseTarget(fields[2]); err != nil {
				return nil, bad(err.Error())
			}
		}
		if err := netTargetFits(st); err != nil {
			return nil, bad(err.Error())
		}
		if st.Action == HealNetwork {
			steps = append(steps, st)
			continue
		}
		if (st.Target.Kind == All) != (st.Action == PowerLoss && st.Target.Kind == All) {
			return nil, bad(fmt.Sprintf("%s cannot target all: only power-loss hits every node at once", st.Action))
		}
		_, _, isSwitch := st.Action.Switch()
		if isSwitch != (st.Target.Kind == Cluster) {
			return nil, bad(fmt.Sprintf("%s cannot target %s: only <mode>-on and <mode>-off act on the cluster as a whole", st.Action, st.Target))
		}
		isFsync := st.Action == FsyncOn || st.Action == FsyncOff
		isScope := st.Target.Kind == Topic || st.Target.Kind == Brokers
		if !isSwitch && isFsync != isScope {
			return nil, bad(fmt.Sprintf("%s cannot target %s: fsync-on/off take topic:<topic> or brokers, the other actions a node", st.Action, st.Target))
		}
		steps = append(steps, st)
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return steps, nil
}
