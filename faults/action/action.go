// Package action is the fault vocabulary: the typed actions a fault
// schedule names (kill, pause, power-loss, ...) and what each is expected
// to cause. It imports nothing of ackcheck, so that every package that
// reads or describes faults (the broker profiles in drivers/<broker>, the
// reports, the verdict) compares actions as these typed values, never by
// their names, without importing the fault machinery (package faults,
// which re-exports them).
package action

import (
	"regexp"
	"strings"
)

// Action is what a fault does. Its value is its name as a schedule writes
// it and result.json stores it; past the parser (faults.ParseSchedule),
// code compares it with the constants below.
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
	// The network faults (local clusters started with --netns). Partition
	// cuts a node off from the other nodes (the client still reaches it),
	// or two sides from each other (target split:1|2), or one direction
	// (target one-way:1->2); PartitionClient cuts the node off from the
	// client as well. Loss drops a share of a node's (or a pair's)
	// packets, Bandwidth limits what a node sends, Delay delays its
	// packets (it needs netem). HealNetwork removes every network fault
	// in force.
	Partition       Action = "partition"
	PartitionClient Action = "partition-client"
	Loss            Action = "loss"
	Bandwidth       Action = "bandwidth"
	Delay           Action = "delay"
	HealNetwork     Action = "heal-network"
	// UnexpectedDeath is not done but observed: a node's process vanished
	// while no fault had taken it down; it fails the verdict.
	UnexpectedDeath Action = "unexpected-death"
)

// expectations are quoted next to each fault in reports, where the
// broker's profile has none of its own (faults.ActionExpecter).
var expectations = map[Action]string{
	Kill:            "the node dies at once; partitions it led elect new leaders from their in-sync replicas; no acked message is lost when an ack waits for the in-sync replicas",
	Stop:            "the node shuts down cleanly and hands its leaderships over; no acked message is lost",
	Restart:         "the node starts on the same data, rejoins as a follower, catches up, and its replicas return to the in-sync set",
	Pause:           "the node stops answering without dying; once the cluster declares it gone, leaders move; acks stall meanwhile for partitions it led",
	Resume:          "the node answers again, catches up and rejoins the in-sync set",
	FsyncOn:         "from now on a write is fsynced on each replica before it counts toward an ack: acks get slower, and a power loss loses nothing acked",
	FsyncOff:        "from now on acks come from memory (page cache): faster, and a power loss of the replicas can lose acked writes",
	Partition:       "the node keeps running but loses its peers; partitions it led elect new leaders among the others once it is fenced, and acks stall for them meanwhile; no acked message is lost when an ack waits for the in-sync replicas; on the heal it rejoins as a follower and truncates what only it had",
	PartitionClient: "the node loses its peers and the clients; partitions it led elect new leaders among the others; no acked message is lost when an ack waits for the in-sync replicas",
	Loss:            "a share of the packets is dropped: requests are retried, acks slow down; nothing acked is lost",
	Bandwidth:       "the node's sends are throttled: replication and acks slow down; nothing acked is lost",
	Delay:           "the node's packets are delayed: acks slow down; nothing acked is lost",
	HealNetwork:     "every network fault is removed; isolated nodes rejoin, catch up and return to the in-sync set",
	PowerLoss:       "the node dies and its disk keeps only what was fsynced; it starts again on that. Acks that meant fsynced on enough replicas survive; acks from memory on every replica that lost power do not",
}

// String is the action's name as a schedule writes it.
func (a Action) String() string { return string(a) }

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

// modeName is a bare word that names a broker-wide mode.
var modeName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Switch reads an action <mode>-on or <mode>-off, which turns a
// broker-wide mode on or off (drivers.Switcher): Queen's maintenance-on.
func (a Action) Switch() (name string, on, ok bool) {
	if a == FsyncOn || a == FsyncOff {
		return "", false, false
	}
	if n, found := strings.CutSuffix(string(a), "-on"); found && modeName.MatchString(n) {
		return n, true, true
	}
	if n, found := strings.CutSuffix(string(a), "-off"); found && modeName.MatchString(n) {
		return n, false, true
	}
	return "", false, false
}

// Switch is the action that turns the broker-wide mode name on or off
// (maintenance-on), the inverse of Action.Switch.
func Switch(name string, on bool) Action {
	if on {
		return Action(name + "-on")
	}
	return Action(name + "-off")
}

// IsFsync reports whether the action switches fsync-before-ack.
func (a Action) IsFsync() bool { return a == FsyncOn || a == FsyncOff }

// TakesNodeAway reports whether the action makes the node unavailable,
// so that its recovery is measured.
//
// A partition takes the node away from its peers (its process runs on):
// its recovery is measured from the partition, through the heal, to the
// node in sync again.
func (a Action) TakesNodeAway() bool {
	return a == Kill || a == Stop || a == Pause || a == PowerLoss || a == Partition || a == PartitionClient
}

// IsNetwork reports whether the action installs or removes network rules
// (package netns), which need a cluster started with --netns.
func (a Action) IsNetwork() bool {
	switch a {
	case Partition, PartitionClient, Loss, Bandwidth, Delay, HealNetwork:
		return true
	}
	return false
}

// TakesAmount reports whether the action is written with an amount before
// its target: loss 30%, bandwidth 1mbit, delay 100ms.
func (a Action) TakesAmount() bool { return a == Loss || a == Bandwidth || a == Delay }

// ReplacesProcess reports whether the node comes back from the action as
// a new process, which must be seen to rejoin, not merely found in an
// in-sync set that never let it go.
func (a Action) ReplacesProcess() bool {
	return a == Kill || a == Stop || a == PowerLoss
}
