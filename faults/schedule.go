package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Action is what a fault does to a node.
type Action string

// The actions. Each says what it expects to happen, for reports.
const (
	Kill    Action = "kill"    // SIGKILL
	Stop    Action = "stop"    // SIGTERM, a clean shutdown, waited for
	Restart Action = "restart" // start the node again on the same data dir
	Pause   Action = "pause"   // SIGSTOP
	Resume  Action = "resume"  // SIGCONT
	// FsyncOn and FsyncOff switch fsync-before-ack on or off, for a topic
	// (topic:<name>, through the admin API) or for every broker's
	// configuration (brokers, config edit and rolling restart).
	FsyncOn  Action = "fsync-on"
	FsyncOff Action = "fsync-off"
	// PowerLoss loses every write the node's disk has not fsynced and
	// SIGKILLs the broker at the same instant, then starts it again on
	// what the disk kept. Its target may be all: every node at once, as
	// when a rack loses power. It needs data dirs on ackcheck lazyfs.
	PowerLoss Action = "power-loss"
)

// expectations are quoted next to each fault in reports, where the
// broker's profile has none of its own (drivers.Profile.Expect).
var expectations = map[Action]string{
	Kill:      "the node dies at once; partitions it led elect new leaders from their in-sync replicas; no acked message is lost when an ack waits for the in-sync replicas",
	Stop:      "the node shuts down cleanly and hands its leaderships over; no acked message is lost",
	Restart:   "the node starts on the same data, rejoins as a follower, catches up, and its replicas return to the in-sync set",
	Pause:     "the node stops answering without dying; once the cluster declares it gone, leaders move; acks stall meanwhile for partitions it led",
	Resume:    "the node answers again, catches up and rejoins the in-sync set",
	FsyncOn:   "from now on a write is fsynced on each replica before it counts toward an ack: acks get slower, and a power loss loses nothing acked",
	FsyncOff:  "from now on acks come from memory (page cache): faster, and a power loss of the replicas can lose acked writes",
	PowerLoss: "the node dies and its disk keeps only what was fsynced; it starts again on that. Acks that meant fsynced on enough replicas survive; acks from memory on every replica that lost power do not",
}

// Expectation is what action is expected to cause.
func (a Action) Expectation() string {
	if name, on, ok := a.Switch(); ok {
		if on {
			return "the broker-wide mode " + name + " turns on, through the broker's own API"
		}
		return "the broker-wide mode " + name + " turns off"
	}
	return expectations[a]
}

// Switch reads an action <mode>-on or <mode>-off, which turns a
// broker-wide mode on or off (drivers.Switcher): Queen's maintenance-on.
func (a Action) Switch() (name string, on, ok bool) {
	if a == FsyncOn || a == FsyncOff {
		return "", false, false
	}
	if n, found := strings.CutSuffix(string(a), "-on"); found && nodeName.MatchString(n) {
		return n, true, true
	}
	if n, found := strings.CutSuffix(string(a), "-off"); found && nodeName.MatchString(n) {
		return n, false, true
	}
	return "", false, false
}

// TakesNodeAway reports whether the action makes the node unavailable,
// so that its recovery is measured.
func (a Action) TakesNodeAway() bool {
	return a == Kill || a == Stop || a == Pause || a == PowerLoss
}

// replacesProcess reports whether the node comes back from the action as a
// new process, which must be seen to rejoin (see rejoin), not merely found
// in an in-sync set that never let it go.
func (a Action) replacesProcess() bool {
	return a == Kill || a == Stop || a == PowerLoss
}

// Step is one scheduled fault.
type Step struct {
	At     time.Duration // after the load started
	Action Action
	Target Target
}

func (s Step) String() string { return fmt.Sprintf("at=%s %s %s", s.At, s.Action, s.Target) }

// ParseSchedule reads steps separated by ';' or newlines, each
//
//	at=<duration> <action> [<target>]
//
// for example "at=20s kill most-leaders:ackcheck; at=25s restart". restart
// and resume default to the node the previous fault hit; kill, stop and
// pause need a target. Steps are returned in time order.
func ParseSchedule(s string) ([]Step, error) {
	var steps []Step
	for _, raw := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		fields := strings.Fields(raw)
		if len(fields) == 0 {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("fault %q: %s (write at=<duration> <action> [<target>], e.g. at=20s kill most-leaders:ackcheck)", strings.TrimSpace(raw), why)
		}
		if len(fields) < 2 || len(fields) > 3 || !strings.HasPrefix(fields[0], "at=") {
			return nil, bad("not in the form")
		}
		at, err := time.ParseDuration(strings.TrimPrefix(fields[0], "at="))
		if err != nil || at < 0 {
			return nil, bad("at= needs a duration such as 20s or 1m30s")
		}
		st := Step{At: at, Action: Action(fields[1]), Target: Target{Kind: Previous}}
		switch st.Action {
		case Kill, Stop, Pause, PowerLoss:
			if len(fields) != 3 {
				return nil, bad(string(st.Action) + " needs a target")
			}
		case Restart, Resume:
		case FsyncOn, FsyncOff:
			if len(fields) != 3 {
				return nil, bad(string(st.Action) + " needs topic:<topic> or brokers")
			}
		default:
			if _, _, ok := st.Action.Switch(); ok {
				st.Target = Target{Kind: Cluster}
				break
			}
			return nil, bad("unknown action " + fields[1] + ": use kill, stop, restart, pause, resume, power-loss, fsync-on, fsync-off, or <mode>-on and <mode>-off for a broker's mode (maintenance-on)")
		}
		if len(fields) == 3 {
			if st.Target, err = ParseTarget(fields[2]); err != nil {
				return nil, bad(err.Error())
			}
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

// String is the action's name as a schedule writes it.
func (a Action) String() string { return string(a) }
