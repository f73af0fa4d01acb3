package faults

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Step is one scheduled fault.
type Step struct {
	At     time.Duration // after the load started
	Action Action
	Target Target
	// Amount is the size of a loss, bandwidth or delay fault, as parsed
	// from the schedule (zero for the other actions).
	Amount Amount
	// Glob, for a file fault, picks the files in the node's data dir by
	// name ("" : the broker profile's data files).
	Glob string
	// Disk, for disk-error, is the call that fails and how often.
	Disk DiskCall
}

// DiskCall is the system call a disk-error fails with EIO, and at which
// share of the calls (100: every one).
type DiskCall struct {
	Call    string
	Percent int
}

func (d DiskCall) String() string {
	if d.Call == "" {
		return ""
	}
	if d.Percent == 100 || d.Percent == 0 {
		return d.Call
	}
	return fmt.Sprintf("%s %d%%", d.Call, d.Percent)
}

// tail is what a step writes after its target (a glob, a disk call).
func (s Step) tail() string {
	switch {
	case s.Glob != "":
		return " " + s.Glob
	case s.Disk.Call != "":
		return " " + s.Disk.String()
	}
	return ""
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

// ActsOnNodes reports whether the step acts on the brokers' nodes (their
// processes, files or network), which needs a cluster to act on; only a
// topic's own setting (fsync-on topic:T) goes through the driver alone.
func (s Step) ActsOnNodes() bool { return s.Target.Kind != Topic }

func (s Step) String() string {
	if sp, ok := specOf(s.Action); ok && sp.target == noTarget {
		return fmt.Sprintf("at=%s %s", s.At, s.Action)
	}
	if s.Action.TakesAmount() {
		return fmt.Sprintf("at=%s %s %s %s%s", s.At, s.Action, s.Amount, s.Target, s.tail())
	}
	return fmt.Sprintf("at=%s %s %s%s", s.At, s.Action, s.Target, s.tail())
}

// ParseSchedule reads steps separated by ';' or newlines, each
//
//	at=<duration> <action> [<amount>] [<target>]
//
// for example "at=20s kill most-leaders:ackcheck; at=25s restart", with
// ackcheck's own words for targets only. Every command reads a schedule
// with the brokers' words too (Aliases.ParseSchedule, with the words of
// drivers.TargetWords), then CheckSchedule against the load. What each
// action takes is its entry in actionTable. Steps are returned in time
// order.
func ParseSchedule(s string) ([]Step, error) { return Aliases(nil).ParseSchedule(s) }

// ParseSchedule is ParseSchedule, with a's words for target kinds.
func (a Aliases) ParseSchedule(s string) ([]Step, error) {
	var steps []Step
	for _, raw := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		st, err := a.parseStep(raw)
		if err != nil {
			return nil, fmt.Errorf("fault %q: %w (write at=<duration> <action> [<target>], e.g. at=20s kill most-leaders:ackcheck)", strings.TrimSpace(raw), err)
		}
		steps = append(steps, st)
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return steps, nil
}

// parseStep reads one step by its action's entry: its amount, its arity
// and the target kinds it accepts.
func (a Aliases) parseStep(raw string) (Step, error) {
	fields := strings.Fields(raw)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "at=") {
		return Step{}, fmt.Errorf("not in the form")
	}
	at, err := time.ParseDuration(strings.TrimPrefix(fields[0], "at="))
	if err != nil || at < 0 {
		return Step{}, fmt.Errorf("at= needs a duration such as 20s or 1m30s")
	}
	st := Step{At: at, Action: Action(fields[1])}
	sp, ok := specOf(st.Action)
	if !ok {
		return Step{}, fmt.Errorf("unknown action %s: use %s", fields[1], actionNames())
	}
	args := fields[2:]
	if sp.amount != nil {
		// loss 30% node:2: the amount comes before the target.
		if len(args) != 2 {
			return Step{}, fmt.Errorf("%s needs an amount and a target, e.g. %s", st.Action, strings.TrimPrefix(sp.example, "at=20s "))
		}
		if st.Amount, err = sp.amount(args[0]); err != nil {
			return Step{}, err
		}
		args = args[1:]
	}
	if sp.tail != nil && len(args) > 0 {
		// bitflip node:2 *.blk: what follows the target is the action's.
		if err := sp.tail(args[1:], &st); err != nil {
			return Step{}, err
		}
		args = args[:1]
	}
	switch {
	case len(args) > 1:
		return Step{}, fmt.Errorf("not in the form")
	case len(args) == 1 && sp.target == noTarget:
		return Step{}, fmt.Errorf("%s takes no target: %s", st.Action, sp.help)
	case len(args) == 1:
		if st.Target, err = a.ParseTarget(args[0]); err != nil {
			return Step{}, err
		}
	case sp.target == oneTarget:
		return Step{}, fmt.Errorf("%s needs a target: %s", st.Action, targetsText(sp.targets))
	case sp.target == targetOrPrevious:
		st.Target = Target{Kind: Previous}
	default:
		st.Target = Target{Kind: Cluster}
	}
	if !slices.Contains(sp.targets, st.Target.Kind) {
		return Step{}, fmt.Errorf("%s cannot target %s: it takes %s", st.Action, st.Target, targetsText(sp.targets))
	}
	return st, nil
}

// CheckSchedule refuses a step that would fire after a load of the given
// length ends: every command checks its schedule so, once it knows the
// load's --duration.
func CheckSchedule(steps []Step, load time.Duration) error {
	for _, st := range steps {
		if st.At >= load {
			return fmt.Errorf("fault %s fires after the load ends (--duration %s)", st, load)
		}
	}
	return nil
}
