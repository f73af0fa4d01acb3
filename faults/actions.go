package faults

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
)

// Action is what a fault does. Its value is its name as a schedule writes
// it and result.json stores it; past the parser (ParseSchedule), code
// compares it with the constants below, and asks the action table what it
// is (TakesNodeAway, IsNetwork, ...), never its name.
type Action string

// The actions; what each does, takes and is expected to cause is its
// entry in actionTable.
const (
	Kill            Action = "kill"
	Stop            Action = "stop"
	Restart         Action = "restart"
	Pause           Action = "pause"
	Resume          Action = "resume"
	FsyncOn         Action = "fsync-on"
	FsyncOff        Action = "fsync-off"
	PowerLoss       Action = "power-loss"
	Partition       Action = "partition"
	PartitionClient Action = "partition-client"
	Loss            Action = "loss"
	Bandwidth       Action = "bandwidth"
	Delay           Action = "delay"
	HealNetwork     Action = "heal-network"
	Snapshot        Action = "snapshot"
	Bitflip         Action = "bitflip"
	Truncate        Action = "truncate"
	Stale           Action = "stale"
	DiskError       Action = "disk-error"
	DiskOK          Action = "disk-ok"
	// RestartConsumers stops the run's own consumer group members without
	// committing and joins them again (run --group).
	RestartConsumers Action = "restart-consumers"
	// UnexpectedDeath is not done but observed: a node's process vanished
	// while no fault had taken it down; it fails the verdict. It has no
	// entry: no schedule names it.
	UnexpectedDeath Action = "unexpected-death"
	// DiedOnDiskError is observed too: a node's process vanished while a
	// disk-error was in force on it, the broker stopping on the I/O
	// errors it was given (Kafka halts when its log dir fails, PostgreSQL
	// panics on a failed fsync). The fault's doing, not a failure of the
	// verdict; the node is down until a restart (or the heal) starts it.
	DiedOnDiskError Action = "died-on-disk-error"
)

// arity is what a schedule writes after an action (after its amount, for
// an action that takes one).
type arity uint8

const (
	// oneTarget: a target must follow.
	oneTarget arity = iota + 1
	// targetOrPrevious: a target may follow; without one, the node the
	// previous fault hit.
	targetOrPrevious
	// targetOrCluster: a target (cluster) may follow; without one, the
	// cluster as a whole.
	targetOrCluster
	// noTarget: nothing follows; the action acts on the cluster.
	noTarget
)

// nodeKinds are the target kinds that pick one node, in the order help
// lists them (written <node> in an action's syntax).
var nodeKinds = []TargetKind{Leader, Follower, MostLeaders, Controller, Node, Named, Previous}

// nodeOr is a node's target kinds and more.
func nodeOr(more ...TargetKind) []TargetKind {
	return append(append([]TargetKind(nil), nodeKinds...), more...)
}

// The mode switches' entries stand for every mode's actions.
const (
	modeOn  Action = "<mode>-on"
	modeOff Action = "<mode>-off"
)

// actionSpec is everything ackcheck knows of one fault action, whole, in
// one entry of one list (actionTable), as etcd's robustness tests keep a
// failpoint in one type in one list: how a schedule writes it, what it
// is, what it is expected to cause, how it runs and what puts it back.
// The schedule parser, the preflight (through make), the --fault help,
// docs/faults.md's list of actions and the predicates the records are
// read with all come from it; TestActionTableComplete checks that every
// entry has every part.
type actionSpec struct {
	action Action
	// help is one line: what it does.
	help string
	// example is a step that parses, for help and the docs.
	example string
	// amount reads the amount written before the target (loss 30%);
	// nil: the action takes none.
	amount func(string) (Amount, error)
	// amountForm is how help writes the amount (<P>%).
	amountForm string
	// tail reads what follows the target into the step (bitflip
	// node:2 *.blk); nil: nothing may follow it.
	tail func(args []string, st *Step) error
	// tailForm is how help writes the tail ([<glob>]).
	tailForm string
	// target is what may follow the action (and its amount).
	target arity
	// targets are the target kinds it accepts.
	targets []TargetKind
	// mode marks the broker-wide mode switches (<mode>-on, <mode>-off):
	// their entry stands for every mode, action names the form.
	mode bool

	// takesNodeAway: the node is unavailable, so its recovery is measured
	// (a partition takes it away from its peers; its process runs on).
	takesNodeAway bool
	// replacesProcess: the node comes back as a new process, which must be
	// seen to rejoin, not merely found in an in-sync set that never let
	// it go.
	replacesProcess bool
	// network: it installs or removes network rules (package netns),
	// which need a cluster started with --netns or cluster-file ports.
	network bool

	// expect is what it is expected to cause, quoted in reports where the
	// broker's profile has nothing of its own (a mode switch's holds %s,
	// the mode's name).
	expect string
	// node is what a broker profile calls it (drivers.FaultExpecter);
	// "": profiles do not describe it.
	node drivers.NodeFault

	// make is the fault that runs a step of it, by its target.
	make func(Target) fault
	// undo are the changes it journals, each with the fault that puts it
	// back; noUndo says why it journals none.
	undo   []undoSpec
	noUndo string
}

// undoSpec is one kind of change an action journals and what puts it back.
type undoSpec struct {
	kind UndoKind
	by   undoer
}

// onOneNode is a constructor for an action on one node.
func onOneNode(a nodeAction) func(Target) fault {
	return func(Target) fault { return onNode{a} }
}

// onNetwork is a constructor for a network shape.
func onNetwork(s netShape) func(Target) fault {
	return func(Target) fault { return onNet{s} }
}

var (
	startAgain = []undoSpec{{UndoStart, takeDown{}}}
	removeRule = []undoSpec{{UndoNetRule, netRule{}}}
	putFsync   = []undoSpec{{UndoTopicConfig, fsyncTopic{}}, {UndoNodeConfig, fsyncBrokers{}}}
)

// fsyncFault is fsync-on's and fsync-off's constructor.
func fsyncFault(t Target) fault {
	if t.Kind == Topic {
		return fsyncTopic{}
	}
	return fsyncBrokers{}
}

// actionTable is every action a schedule can name, in the order help and
// the docs list them.
var actionTable = []actionSpec{
	{action: Kill, help: "SIGKILL the node's broker (coordinator:GROUP: the node coordinating the run's consumer group)", example: "at=20s kill most-leaders:orders",
		target: oneTarget, targets: nodeOr(Coordinator), takesNodeAway: true, replacesProcess: true,
		expect: "the node dies at once; partitions it led elect new leaders from their in-sync replicas; no acked message is lost when an ack waits for the in-sync replicas",
		node:   drivers.NodeKilled, make: onOneNode(kill{}), undo: startAgain},
	{action: Stop, help: "SIGTERM the node's broker (or its stop command) and wait for it to exit", example: "at=20s stop controller",
		target: oneTarget, targets: nodeOr(Coordinator), takesNodeAway: true, replacesProcess: true,
		expect: "the node shuts down cleanly and hands its leaderships over; no acked message is lost",
		node:   drivers.NodeStopped, make: onOneNode(stop{}), undo: startAgain},
	{action: Restart, help: "start the node again on its own data (default: the previous fault's node)", example: "at=30s restart",
		target: targetOrPrevious, targets: nodeKinds,
		expect: "the node starts on the same data, rejoins as a follower, catches up, and its replicas return to the in-sync set",
		node:   drivers.NodeRestarted, make: onOneNode(restart{}), noUndo: "it puts back what a kill, stop or power loss took; their undo is marked done"},
	{action: Pause, help: "SIGSTOP the node's broker", example: "at=20s pause leader:orders/3",
		target: oneTarget, targets: nodeKinds, takesNodeAway: true,
		expect: "the node stops answering without dying; once the cluster declares it gone, leaders move; acks stall meanwhile for partitions it led",
		node:   drivers.NodePaused, make: onOneNode(pause{}), undo: []undoSpec{{UndoResume, pause{}}}},
	{action: Resume, help: "SIGCONT the node (default: the previous fault's node)", example: "at=30s resume",
		target: targetOrPrevious, targets: nodeKinds,
		expect: "the node answers again, catches up and rejoins the in-sync set",
		node:   drivers.NodeResumed, make: onOneNode(resume{}), noUndo: "it puts back what a pause took; the pause's undo is marked done"},
	{action: PowerLoss, help: "lose what the node's disk did not fsync (lazyfs or lose_command), SIGKILL, start again; all: every node at once", example: "at=20s power-loss all",
		target: oneTarget, targets: nodeOr(All, Coordinator), takesNodeAway: true, replacesProcess: true,
		expect: "the node dies and its disk keeps only what was fsynced; it starts again on that. Acks that meant fsynced on enough replicas survive; acks from memory on every replica that lost power do not",
		node:   drivers.NodePowerLost, make: powerLossFault, undo: startAgain},
	{action: FsyncOn, help: "fsync before each ack: a topic's setting (admin API) or every broker's configuration (edit and rolling restart)", example: "at=10s fsync-on topic:orders",
		target: oneTarget, targets: []TargetKind{Topic, Brokers},
		expect: "from now on a write is fsynced on each replica before it counts toward an ack: acks get slower, and a power loss loses nothing acked",
		make:   fsyncFault, undo: putFsync},
	{action: FsyncOff, help: "acks from memory again: the reverse of fsync-on", example: "at=10s fsync-off brokers",
		target: oneTarget, targets: []TargetKind{Topic, Brokers},
		expect: "from now on acks come from memory (page cache): faster, and a power loss of the replicas can lose acked writes",
		make:   fsyncFault, undo: putFsync},
	{action: modeOn, help: "turn a driver's broker-wide mode on through its API (Queen: maintenance-on)", example: "at=5s maintenance-on",
		target: targetOrCluster, targets: []TargetKind{Cluster}, mode: true,
		expect: "the broker-wide mode %s turns on, through the broker's own API",
		make:   func(Target) fault { return switchMode{} }, undo: []undoSpec{{UndoSwitch, switchMode{}}}},
	{action: modeOff, help: "turn a driver's broker-wide mode off again", example: "at=20s maintenance-off",
		target: targetOrCluster, targets: []TargetKind{Cluster}, mode: true,
		expect: "the broker-wide mode %s turns off",
		make:   func(Target) fault { return switchMode{} }, undo: []undoSpec{{UndoSwitch, switchMode{}}}},
	{action: Partition, help: "cut the node off from the other nodes (the client still reaches it); split, minority and majority cut two sides from each other, one-way one direction", example: "at=20s partition split:1|2,3",
		target: oneTarget, targets: nodeOr(Split, Minority, Majority, OneWayPath), takesNodeAway: true, network: true,
		expect: "the node keeps running but loses its peers; partitions it led elect new leaders among the others once it is fenced, and acks stall for them meanwhile; no acked message is lost when an ack waits for the in-sync replicas; on the heal it rejoins as a follower and truncates what only it had",
		make:   partitionFault, undo: removeRule},
	{action: PartitionClient, help: "cut the node off from the other nodes and from the client", example: "at=20s partition-client node:2",
		target: oneTarget, targets: nodeKinds, takesNodeAway: true, network: true,
		expect: "the node loses its peers and the clients; partitions it led elect new leaders among the others; no acked message is lost when an ack waits for the in-sync replicas",
		make:   onNetwork(cutNode{client: true}), undo: removeRule},
	{action: Loss, help: "drop P% of the node's packets (or only between two nodes)", example: "at=20s loss 30% pair:1-2",
		amount: parsePercent, amountForm: "<P>%", target: oneTarget, targets: nodeOr(Pair), network: true,
		expect: "a share of the packets is dropped: requests are retried, acks slow down; nothing acked is lost",
		make:   onNetwork(lossy{}), undo: removeRule},
	{action: Bandwidth, help: "limit what the node sends (1mbit, 500kbit; local clusters only, a qdisc would slow SSH)", example: "at=20s bandwidth 1mbit node:2",
		amount: parseRate, amountForm: "<rate>", target: oneTarget, targets: nodeKinds, network: true,
		expect: "the node's sends are throttled: replication and acks slow down; nothing acked is lost",
		make:   onNetwork(throttled{}), undo: removeRule},
	{action: Delay, help: "delay the node's packets (needs netem; ackcheck installs no delay rule yet, so preflight refuses it)", example: "at=20s delay 100ms node:2",
		amount: parseDelay, amountForm: "<duration>", target: oneTarget, targets: nodeKinds, network: true,
		expect: "the node's packets are delayed: acks slow down; nothing acked is lost",
		make:   func(Target) fault { return netDelay{} }, noUndo: "it installs no rule yet: preflight refuses it"},
	{action: HealNetwork, help: "remove every network fault in force", example: "at=50s heal-network",
		target: noTarget, targets: []TargetKind{Cluster}, network: true,
		expect: "every network fault is removed; isolated nodes rejoin, catch up and return to the in-sync set",
		make:   func(Target) fault { return healNet{} }, noUndo: "it is the undo of the network faults: it marks their rules done"},
	{action: Snapshot, help: "save a chunk of each of the node's data files (the glob's, or the broker's), for a later stale; it changes nothing", example: "at=5s snapshot node:2 *.blk",
		target: oneTarget, targets: fileTargets, tail: parseGlob, tailForm: "[<glob>]",
		expect: "nothing changes: chunks of the node's data files are saved beside its data dir",
		make:   onFilesOf(takeSnapshot), noUndo: "it changes no data file; its chunks wait beside the data dir for stale"},
	{action: Bitflip, help: "flip two bits at random places in each of the stopped node's data files (the glob's, or the broker's)", example: "at=11s bitflip node:2 *.blk",
		target: oneTarget, targets: fileTargets, tail: parseGlob, tailForm: "[<glob>]",
		expect: "the node finds the corruption when it starts (checksums) and repairs or discards the damaged data from its peers; no acked message is lost or served corrupt while a majority of replicas is intact",
		make:   onFilesOf(flipBits), undo: putFile},
	{action: Truncate, help: "cut each of the stopped node's data files (the glob's, or the broker's) short by a Zipf-distributed number of bytes", example: "at=11s truncate node:2 *.log",
		target: oneTarget, targets: fileTargets, tail: parseGlob, tailForm: "[<glob>]",
		expect: "the node finds its logs shorter when it starts, truncates to the last valid record and fetches the rest from its peers; no acked message is lost while a majority of replicas is intact",
		make:   onFilesOf(cutFile), undo: putFile},
	{action: Stale, help: "put the chunks the node's last snapshot saved back into its data files, while it is stopped", example: "at=11s stale node:2 *.blk",
		target: oneTarget, targets: fileTargets, tail: parseGlob, tailForm: "[<glob>]",
		expect: "the node starts on partly old data; it must detect it (checksums, sequence numbers) and catch up from its peers; no acked message is lost while a majority of replicas is intact",
		make:   onFilesOf(putStale), undo: putFile},
	{action: RestartConsumers, help: "stop the run's consumer group members (--group) without committing, and join them again", example: "at=20s restart-consumers",
		target: noTarget, targets: []TargetKind{Cluster},
		expect: "the members leave without committing what they were delivered since their last commit; the group resumes at its last acknowledged commits and delivers that again; nothing acknowledged is skipped or forgotten",
		make:   func(Target) fault { return restartMembers{} }, noUndo: "it acts on ackcheck's own consumers, which are running again when it returns"},
	{action: DiskError, help: "make P% (default all) of the node's fsync, write or read calls fail with EIO, until disk-ok (a data dir on lazyfs)", example: "at=10s disk-error node:2 fsync 50%",
		target: oneTarget, targets: fileTargets, tail: parseDiskCall, tailForm: "fsync|write|read [<P>%]",
		expect: "the node's disk calls fail with EIO: a broker that cannot trust an fsync stops (PostgreSQL panics, Kafka takes the log dir offline) and its peers carry on; nothing acked is lost",
		make:   func(Target) fault { return diskFault{on: true} }, undo: []undoSpec{{UndoDiskError, diskFault{}}}},
	{action: DiskOK, help: "end the node's disk errors", example: "at=30s disk-ok node:2",
		target: oneTarget, targets: fileTargets,
		expect: "the node's disk calls work again; a node that stopped on the errors must be restarted",
		make:   func(Target) fault { return diskFault{} }, noUndo: "it is disk-error's undo: it marks it done"},
}

// fileTargets are the targets of the file faults: a node named, whose
// broker is down when they fire (a role names a running broker).
var fileTargets = []TargetKind{Node, Named, Previous}

// putFile is the file faults' undo.
var putFile = []undoSpec{{UndoFile, fileFault{}}}

// onFilesOf is a file fault's constructor.
func onFilesOf(k fileKind) func(Target) fault {
	return func(Target) fault { return fileFault{k} }
}

// parseGlob reads a file fault's optional glob: one word, a pattern
// (path.Match) of file names at any depth, or, with a slash, of paths
// relative to the data dir (globMatch).
func parseGlob(args []string, st *Step) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) > 1:
		return fmt.Errorf("%s takes one glob after its target, e.g. '*.blk'", st.Action)
	case strings.HasPrefix(args[0], "/") || strings.HasSuffix(args[0], "/") || slices.Contains(strings.Split(args[0], "/"), ".."):
		return fmt.Errorf("glob %q: a path inside the node's data dir, relative to it (orders-0/*.log), or a file name at any depth (*.log)", args[0])
	}
	if _, err := path.Match(args[0], ""); err != nil {
		return fmt.Errorf("glob %q: %w", args[0], err)
	}
	st.Glob = args[0]
	return nil
}

// powerLossFault is power-loss's constructor: every node at once, or one.
func powerLossFault(t Target) fault {
	if t.Kind == All {
		return powerLossAll{}
	}
	return onNode{powerLossNode{}}
}

// partitionFault is partition's constructor, by the shape of its target.
func partitionFault(t Target) fault {
	switch t.Kind {
	case Split, Minority, Majority:
		return onNet{splitCut{}}
	case OneWayPath:
		return onNet{oneWayCut{}}
	}
	return onNet{cutNode{}}
}

// specOf is a's entry: its own, or the mode switches' for <mode>-on and
// <mode>-off.
func specOf(a Action) (*actionSpec, bool) {
	for i := range actionTable {
		if sp := &actionTable[i]; !sp.mode && sp.action == a {
			return sp, true
		}
	}
	if _, on, ok := a.Switch(); ok {
		for i := range actionTable {
			if sp := &actionTable[i]; sp.mode && (sp.action == modeOn) == on {
				return sp, true
			}
		}
	}
	return nil, false
}

// String is the action's name as a schedule writes it.
func (a Action) String() string { return string(a) }

// Expectation is what a is expected to cause ("" for an action that has
// no entry).
func (a Action) Expectation() string {
	sp, ok := specOf(a)
	if !ok {
		return ""
	}
	if name, _, isMode := a.Switch(); isMode {
		return fmt.Sprintf(sp.expect, name)
	}
	return sp.expect
}

// TakesNodeAway reports whether the action makes the node unavailable,
// so that its recovery is measured.
func (a Action) TakesNodeAway() bool { sp, ok := specOf(a); return ok && sp.takesNodeAway }

// ReplacesProcess reports whether the node comes back from the action as
// a new process.
func (a Action) ReplacesProcess() bool { sp, ok := specOf(a); return ok && sp.replacesProcess }

// IsNetwork reports whether the action installs or removes network rules
// (package netns), which need a cluster started with --netns.
func (a Action) IsNetwork() bool { sp, ok := specOf(a); return ok && sp.network }

// TakesAmount reports whether the action is written with an amount before
// its target: loss 30%, bandwidth 1mbit, delay 100ms.
func (a Action) TakesAmount() bool { sp, ok := specOf(a); return ok && sp.amount != nil }

// modeName is a bare word that names a broker-wide mode.
var modeName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Switch reads an action <mode>-on or <mode>-off, which turns a
// broker-wide mode on or off (drivers.Switcher): Queen's maintenance-on.
// An action with an entry of its own (fsync-on) is none.
func (a Action) Switch() (name string, on, ok bool) {
	for _, sp := range actionTable {
		if !sp.mode && sp.action == a {
			return "", false, false
		}
	}
	if n, found := strings.CutSuffix(string(a), "-on"); found && modeName.MatchString(n) {
		return n, true, true
	}
	if n, found := strings.CutSuffix(string(a), "-off"); found && modeName.MatchString(n) {
		return n, false, true
	}
	return "", false, false
}

// SwitchAction is the action that turns the broker-wide mode name on or
// off (maintenance-on), the inverse of Action.Switch.
func SwitchAction(name string, on bool) Action {
	if on {
		return Action(name + "-on")
	}
	return Action(name + "-off")
}
