// Package faults injects faults into a broker cluster while ackcheck's load
// runs, and records what happened.
//
// A fault composes an action with a target, as etcd's robustness tests do:
// the action says what happens to a node (kill, stop, restart, pause,
// resume), the target says which node, chosen at the moment the fault fires
// from the topology the broker reports then (leader:orders/3,
// most-leaders:orders, controller, node:2). Actions reach the broker's
// process through Nodes, which a local cluster implements and an SSH runner
// will.
//
// Every fault is recorded (Record) with its wall-clock time,
// target, node, result and kill proof; a target that cannot be found (no
// leader, node gone) is recorded as skipped and the run goes on.
package faults

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
)

// TargetKind is how a target picks its node.
type TargetKind string

const (
	// Leader: the leader of one partition.
	Leader TargetKind = "leader"
	// MostLeaders: the node that leads the most partitions of a topic.
	MostLeaders TargetKind = "most-leaders"
	// Controller: the active controller.
	Controller TargetKind = "controller"
	// Node: a node by ID.
	Node TargetKind = "node"
	// Previous: the node the previous fault hit (the default of restart
	// and resume).
	Previous TargetKind = "previous"
	// Topic: a topic's own settings (fsync-on topic:orders).
	Topic TargetKind = "topic"
	// Brokers: every node's broker configuration (fsync-on brokers).
	Brokers TargetKind = "brokers"
	// All: every node at once (power-loss all).
	All TargetKind = "all"
	// Cluster: the cluster as a whole, for a broker-wide mode
	// (maintenance-on cluster); the default of <mode>-on and <mode>-off.
	Cluster TargetKind = "cluster"
	// Named: a node by the name its cluster gives it (db, for Queen's
	// PostgreSQL), resolved through NodeNamer.
	Named TargetKind = "named"
	// Follower: a replica of one partition that is not its leader (an
	// in-sync one first, then the lowest ID), chosen when the fault fires.
	Follower TargetKind = "follower"
	// Split: two sides of nodes cut from each other (partition
	// split:1|2,3), in Sides.
	Split TargetKind = "split"
	// OneWayPath: what Node sends to Peer is dropped (partition
	// one-way:1->2).
	OneWayPath TargetKind = "one-way"
	// Pair: the traffic between Node and Peer (loss 30% pair:1-2).
	Pair TargetKind = "pair"
	// Minority and Majority split the nodes in two when the fault fires:
	// a minority side of (n-1)/2 nodes cut off from the rest. Minority
	// puts the node leading the most partitions of Topic on the minority
	// side (its leaderships must move), Majority keeps it on the majority
	// side (a minority of followers is cut off). Partition only.
	Minority TargetKind = "minority"
	Majority TargetKind = "majority"
	// Coordinator: the node that coordinates a consumer group, asked of
	// the driver when the fault fires (drivers.GroupCoordinatorFinder;
	// Kafka: the leader of the group's __consumer_offsets partition).
	Coordinator TargetKind = "coordinator"
)

// NodeNamer is implemented by Nodes whose nodes have names as well as IDs
// (a Queen cluster's db).
type NodeNamer interface {
	NodeNames() map[int32]string
}

// nodeNamed is the node nodes call name.
func nodeNamed(nodes Nodes, name string) (int32, error) {
	nn, ok := nodes.(NodeNamer)
	if ok {
		for id, n := range nn.NodeNames() {
			if n == name {
				return id, nil
			}
		}
	}
	var names []string
	if ok {
		for _, n := range nn.NodeNames() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return -1, fmt.Errorf("no node is named %q: the nodes of %s have no names (use node:<id>)", name, nodes.Where())
	}
	return -1, fmt.Errorf("no node is named %q (the nodes of %s are named %s)", name, nodes.Where(), strings.Join(names, ", "))
}

// nodeName is a bare word that names a node.
var nodeName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Target picks a node when a fault fires.
type Target struct {
	Kind      TargetKind
	Topic     string
	Partition int32
	Node      int32
	Name      string // Named
	Group     string // Coordinator
	// Peer is the other end of a one-way or pair target.
	Peer int32
	// Sides are the two sides of a split (a set each, so that a Target
	// stays comparable).
	Sides [2]NodeSet
}

func (t Target) String() string {
	switch t.Kind {
	case Leader:
		return fmt.Sprintf("leader:%s/%d", t.Topic, t.Partition)
	case MostLeaders, Minority, Majority:
		return string(t.Kind) + ":" + t.Topic
	case Node:
		return fmt.Sprintf("node:%d", t.Node)
	case Topic:
		return "topic:" + t.Topic
	case Coordinator:
		return "coordinator:" + t.Group
	case Named:
		return t.Name
	case Follower:
		return fmt.Sprintf("follower:%s/%d", t.Topic, t.Partition)
	case Split:
		return "split:" + idsText(t.Sides[0].IDs()) + "|" + idsText(t.Sides[1].IDs())
	case OneWayPath:
		return fmt.Sprintf("one-way:%d->%d", t.Node, t.Peer)
	case Pair:
		return fmt.Sprintf("pair:%d-%d", t.Node, t.Peer)
	}
	return string(t.Kind)
}

// Aliases maps a broker's own words for target kinds to ackcheck's (a
// broker that calls a partition's leader its owner: "owner" -> leader).
// The brokers' profiles declare them (drivers.TargetWords); faults knows
// none of its own.
type Aliases map[string]TargetKind

// Add makes word a broker's own word for target kind k. It refuses a
// kind ackcheck does not have and a word that is already one of its own.
func (a Aliases) Add(word string, k TargetKind) error {
	if targetForms[k] == "" || k == Named {
		return fmt.Errorf("fault target word %q: %q is no target kind of ackcheck's", word, k)
	}
	if targetForms[TargetKind(word)] != "" || word == "" || strings.ContainsAny(word, ": ") {
		return fmt.Errorf("fault target word %q: not a word of its own (ackcheck's target kinds are taken)", word)
	}
	a[word] = k
	return nil
}

// ParseTarget reads leader:T/P, most-leaders:T, controller, node:N,
// previous, all, topic:T, brokers, cluster, or a bare word: a node's name.
func ParseTarget(s string) (Target, error) { return Aliases(nil).ParseTarget(s) }

// ParseTarget is ParseTarget, with a's words for target kinds.
func (a Aliases) ParseTarget(s string) (Target, error) {
	kind, arg, _ := strings.Cut(s, ":")
	if k, ok := a[kind]; ok {
		kind = string(k)
	}
	switch TargetKind(kind) {
	case Leader, Follower:
		topic, part, ok := strings.Cut(arg, "/")
		p, err := strconv.ParseInt(part, 10, 32)
		if !ok || topic == "" || err != nil || p < 0 {
			return Target{}, fmt.Errorf("target %q: write %s:<topic>/<partition>, e.g. %s:orders/3", s, kind, kind)
		}
		return Target{Kind: TargetKind(kind), Topic: topic, Partition: int32(p)}, nil
	case Split, OneWayPath, Pair:
		return parseNetTarget(TargetKind(kind), arg, s)
	case MostLeaders, Minority, Majority:
		if arg == "" {
			return Target{}, fmt.Errorf("target %q: write %s:<topic>", s, kind)
		}
		return Target{Kind: TargetKind(kind), Topic: arg}, nil
	case Topic:
		if arg == "" {
			return Target{}, fmt.Errorf("target %q: write topic:<topic>", s)
		}
		return Target{Kind: Topic, Topic: arg}, nil
	case Coordinator:
		if arg == "" {
			return Target{}, fmt.Errorf("target %q: write coordinator:<group>", s)
		}
		return Target{Kind: Coordinator, Group: arg}, nil
	case Controller, Previous, Brokers, All, Cluster:
		if arg != "" {
			return Target{}, fmt.Errorf("target %q takes no argument", s)
		}
		return Target{Kind: TargetKind(kind)}, nil
	case Node:
		n, err := strconv.ParseInt(arg, 10, 32)
		if err != nil {
			return Target{}, fmt.Errorf("target %q: write node:<id>, e.g. node:2", s)
		}
		return Target{Kind: Node, Node: int32(n)}, nil
	}
	if nodeName.MatchString(s) && TargetKind(s) != Named {
		return Target{Kind: Named, Name: s}, nil
	}
	return Target{}, fmt.Errorf("target %q: use %s", s, targetsText(allTargetKinds))
}

// ErrNoTarget is wrapped by Resolve when the target names no node now.
var ErrNoTarget = fmt.Errorf("target not found")

// Resolve picks the node from a topology read just now. previous is the
// node of the last fault (-1 if none).
func (t Target) Resolve(topo drivers.Topology, previous int32) (int32, error) {
	switch t.Kind {
	case Leader:
		for _, p := range topo.Partitions {
			if p.Partition == t.Partition {
				if p.Leader < 0 {
					return -1, fmt.Errorf("%s: partition has no leader now: %w", t, ErrNoTarget)
				}
				return p.Leader, nil
			}
		}
		return -1, fmt.Errorf("%s: no such partition: %w", t, ErrNoTarget)
	case Follower:
		return t.follower(topo)
	case MostLeaders:
		counts := map[int32]int{}
		best, bestN := int32(-1), 0
		for _, p := range topo.Partitions {
			if p.Leader < 0 {
				continue
			}
			counts[p.Leader]++
			if n := counts[p.Leader]; n > bestN || (n == bestN && p.Leader < best) {
				best, bestN = p.Leader, n
			}
		}
		if best < 0 {
			return -1, fmt.Errorf("%s: no partition has a leader now: %w", t, ErrNoTarget)
		}
		return best, nil
	case Controller:
		if topo.Controller < 0 {
			return -1, fmt.Errorf("controller: the cluster names none now: %w", ErrNoTarget)
		}
		return topo.Controller, nil
	case Node:
		return t.Node, nil
	case Previous:
		if previous < 0 {
			return -1, fmt.Errorf("previous: no earlier fault picked a node: %w", ErrNoTarget)
		}
		return previous, nil
	}
	return -1, fmt.Errorf("target kind %q: %w", t.Kind, ErrNoTarget)
}

// needsTopology reports whether resolving the target reads the cluster's
// topology (targets chosen by role) or not (a node ID, the previous node).
func (t Target) needsTopology() bool {
	return t.Kind == Leader || t.Kind == MostLeaders || t.Kind == Controller || t.Kind == Follower
}
