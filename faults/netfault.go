package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/netns"
)

// Network faults on a local cluster started with --netns: each node runs
// in a network namespace of its own (package netns), and a fault installs
// nft rules (or a tbf qdisc) in the namespaces of the nodes it picked.
//
// Like a kill, each network fault picks its target when it is due, then:
//
//  1. probes every path (node to node, client to node) just before (on
//     SSH nodes, whose probe costs round trips: in its preparation, 3 s
//     before it is due; prepare.go);
//  2. journals each rule (UndoNetRule, with the Net's prefix), fsynced,
//     before it installs it, so that a crash of ackcheck leaves nothing
//     `ackcheck heal` cannot find and remove;
//  3. installs the rules, stamping At just before the first (on SSH
//     nodes: when the first install came back, as a signal over SSH);
//  4. probes again: a path the rules were meant to cut that still answers
//     makes the fault Failed, never Applied (its rules stay journaled and
//     are removed by the heal);
//  5. on heal-network (or the heal at the end of the run, on Ctrl-C, or
//     `ackcheck heal`) each rule is removed once, marked done in the
//     journal, and every path is probed a third time.
//
// The three probes are the fault's NetworkProof in result.json.

// Networked is implemented by a local cluster started with --netns: the
// seam between the faults and the cluster's namespaces. faults reaches the
// Net only through it.
type Networked interface {
	// Net is the cluster's network namespaces; nil when it was started
	// without --netns.
	Net() *netns.Net
	// ProbePort is the port every node listens on for its peers inside
	// the Net: the partition proof connects to it.
	ProbePort() int
}

// errNoNet says what to do when a network fault meets a cluster without
// namespaces.
var errNoNet = errors.New("network faults need a local cluster whose nodes run in network namespaces: start it with `ackcheck cluster <broker> up --netns --dir <dir>` (e.g. `ackcheck cluster kafka up --netns`) and give that --cluster-dir")

// errRemoteNet is what a network fault says on nodes that are neither a
// local cluster in namespaces nor a cluster file's (Scripted) nodes.
var errRemoteNet = errors.New("network faults run on a local cluster started with `ackcheck cluster <broker> up --netns`, or on the nodes of a --cluster-file with `ports:` given per node")

// Network is what a network fault acts on: a set of nodes whose traffic
// rules can be installed and removed one by one, and whose paths can be
// probed. Two kinds exist: a local cluster's namespaces (nsNetwork) and
// the SSH nodes of a cluster file (sshNet, netssh.go).
//
// Invariants: Name is stable across processes (it is journaled, and
// `ackcheck heal` finds the network again by it); Apply is all or
// nothing; Remove of a rule that is not there is no error.
type Network interface {
	// Name is the network's name in the journal and the proof.
	Name() string
	// Members are the node IDs whose paths Probe checks.
	Members() []int32
	// Port is the port the proof names (the probe's target port).
	Port() int
	Apply(ctx context.Context, r netns.Rule) error
	Remove(ctx context.Context, r netns.Rule) error
	// Probe connects over every path, each within timeout.
	Probe(ctx context.Context, timeout time.Duration) (netns.Reach, error)
}

// nsNetwork is a local cluster's namespaces as a Network.
type nsNetwork struct {
	n    *netns.Net
	port int
}

func (w nsNetwork) Name() string                                   { return w.n.Prefix }
func (w nsNetwork) Members() []int32                               { return w.n.Nodes }
func (w nsNetwork) Port() int                                      { return w.port }
func (w nsNetwork) Apply(ctx context.Context, r netns.Rule) error  { return w.n.Apply(ctx, r) }
func (w nsNetwork) Remove(ctx context.Context, r netns.Rule) error { return w.n.Remove(ctx, r) }
func (w nsNetwork) Probe(ctx context.Context, timeout time.Duration) (netns.Reach, error) {
	return w.n.Probe(ctx, w.port, timeout)
}

// netOf is the network of the cluster env acts on.
func netOf(env Env) (Network, error) {
	var nw Networked
	switch n := env.Nodes.(type) {
	case Networked:
		nw = n
	case Local:
		nw, _ = n.Cluster.(Networked)
	case *Scripted:
		return n.network()
	case nil:
		return nil, errNoNet
	default:
		return nil, errRemoteNet
	}
	if nw == nil || nw.Net() == nil {
		return nil, errNoNet
	}
	if nw.ProbePort() <= 0 || nw.ProbePort() > 65535 {
		return nil, fmt.Errorf("the cluster's probe port %d is not a TCP port: the partition proof cannot connect", nw.ProbePort())
	}
	return nsNetwork{nw.Net(), nw.ProbePort()}, nil
}

// openNet finds the network a journal entry names again: the run's own
// (an SSH cluster's, or its namespaces), else the namespaces of that
// prefix, which `ackcheck heal` reopens after a crash. ok is false when
// the network no longer exists (cluster down deleted it).
func openNet(ctx context.Context, env Env, name string, port int) (Network, bool, error) {
	if n, err := netOf(env); err == nil && n.Name() == name {
		return n, true, nil
	}
	if isSSHNet(name) {
		return nil, false, fmt.Errorf("network %s is a cluster file's SSH nodes: heal it with the run's cluster file (`ackcheck heal --out <run dir>` reconnects to the nodes the run's settings name)", name)
	}
	n, ok, err := netns.Open(ctx, name)
	if err != nil || !ok {
		return nil, ok, err
	}
	return nsNetwork{n, port}, true, nil
}

// probeTimeout bounds each path's TCP connect in the probes a verdict
// rests on (after the rules, after the heal). A cut path takes all of it,
// an open one (accepted or refused) a fraction of a millisecond on one
// machine; a second keeps a busy machine's slow connect from passing for
// a cut. So the probe after a cut holds the actions after it on the same
// nodes for a second (ontime.go's chain); the fault itself is not delayed.
//
// beforeTimeout bounds the probe just before the rules, which only
// informs: a path an earlier fault already cut would otherwise hold this
// fault back a whole probeTimeout.
const (
	probeTimeout  = time.Second
	beforeTimeout = 250 * time.Millisecond
)

// ProbeShot is one probe of every path of the Net: how many paths were
// tried and which of them did not answer (cut).
type ProbeShot struct {
	At    time.Time `json:"at"`
	Paths int       `json:"paths"`
	// Cut are the paths that timed out, "node 2 -> node 1", "client ->
	// node 2"; every other path answered.
	Cut   []string `json:"cut,omitempty"`
	Error string   `json:"error,omitempty"`
	// TimeoutMs is how long a path had to answer before it counted as cut.
	TimeoutMs int64 `json:"timeout_ms"`
	// Gone: the Net no longer exists (cluster down deleted it, and every
	// rule in it): nothing to probe, and nothing left cut.
	Gone string `json:"gone,omitempty"`
}

func (p *ProbeShot) String() string {
	switch {
	case p == nil:
		return "not probed"
	case p.Gone != "":
		return "network " + p.Gone + " no longer exists (cluster down): its rules went with it"
	case p.Error != "":
		return "probe failed: " + p.Error
	case len(p.Cut) == 0:
		return fmt.Sprintf("all %d paths answer", p.Paths)
	}
	return fmt.Sprintf("%d of %d paths cut (%s)", len(p.Cut), p.Paths, strings.Join(p.Cut, ", "))
}

// probe probes every path of n, each within timeout.
func probe(ctx context.Context, n Network, timeout time.Duration) *ProbeShot {
	at := time.Now()
	reach, err := n.Probe(ctx, timeout)
	shot := &ProbeShot{At: at, Paths: len(reach), TimeoutMs: timeout.Milliseconds()}
	for _, p := range reach.Cut() {
		shot.Cut = append(shot.Cut, p.String())
	}
	if err != nil {
		shot.Error = err.Error()
	}
	return shot
}

// NetworkProof is a network fault's proof that it took effect and was
// undone, as the kill proof is a kill's: the rules it installed, the paths
// they were meant to cut, and every path probed just before the rules,
// just after, and after the heal.
type NetworkProof struct {
	Net   string       `json:"net"`
	Port  int          `json:"port"`
	Rules []netns.Rule `json:"rules"`
	// MeantCut are the paths the rules must cut; the fault is Failed when
	// After shows one of them answering. Empty for a loss below 100% and a
	// bandwidth limit, which cut nothing for sure.
	MeantCut []string   `json:"meant_cut,omitempty"`
	Before   *ProbeShot `json:"before,omitempty"`
	After    *ProbeShot `json:"after,omitempty"`
	// Healed is the probe after its rules were removed; nil while they
	// are in force (or when the run ended before the heal).
	Healed *ProbeShot `json:"healed,omitempty"`
	// Removed marks heal-network's proof: Rules are the rules it removed,
	// After the probe once they were gone.
	Removed bool `json:"removed,omitempty"`
}

// String is the proof as the summary and the reports state it.
func (p NetworkProof) String() string {
	var rules []string
	for _, r := range p.Rules {
		rules = append(rules, r.String())
	}
	if p.Removed {
		return fmt.Sprintf("removed %d rule(s) (%s); after: %s", len(p.Rules), strings.Join(rules, "; "), p.After)
	}
	meant := "no path meant to be cut for sure"
	if len(p.MeantCut) > 0 {
		meant = fmt.Sprintf("%d path(s) meant to be cut", len(p.MeantCut))
	}
	return fmt.Sprintf("%s; %s; before: %s; after: %s; after the heal: %s",
		strings.Join(rules, "; "), meant, p.Before, p.After, p.Healed)
}

// missed are the paths meant to be cut that the probe after the rules
// found answering (or all of them when that probe failed).
func (p NetworkProof) missed() []string {
	if p.After == nil || p.After.Error != "" {
		return p.MeantCut
	}
	var open []string
	for _, m := range p.MeantCut {
		if !slices.Contains(p.After.Cut, m) {
			open = append(open, m)
		}
	}
	return open
}

// netShape is what one kind of network fault installs once its target is
// picked: the rules (named later), the paths they must cut, and the nodes
// it isolates, whose recovery is watched once they are healed.
type netShape interface {
	kinds(st Step) []netns.Kind
	plan(nodes []int32, st Step, on picked) (rules []netns.Rule, meant []netns.Path, isolated []int32)
}

// The shapes.
type (
	cutNode   struct{ client bool } // partition / partition-client <node>
	splitCut  struct{}              // partition split:A|B
	oneWayCut struct{}              // partition one-way:A->B
	lossy     struct{}              // loss P% <node> | pair:A-B
	throttled struct{}              // bandwidth RATE <node>
)

func (cutNode) kinds(Step) []netns.Kind { return []netns.Kind{netns.Cut} }

// plan: the node drops everything to and from the other nodes (and the
// hub, with client): every path between it and them is cut both ways.
func (c cutNode) plan(nodes []int32, _ Step, on picked) ([]netns.Rule, []netns.Path, []int32) {
	node := on.nodes[0]
	var meant []netns.Path
	for _, p := range nodes {
		if p != node {
			meant = append(meant, netns.Path{From: node, To: p}, netns.Path{From: p, To: node})
		}
	}
	if c.client {
		meant = append(meant, netns.Path{From: 0, To: node})
	}
	return []netns.Rule{{Kind: netns.Cut, Node: node, Client: c.client}}, meant, []int32{node}
}

func (splitCut) kinds(Step) []netns.Kind { return []netns.Kind{netns.Cut} }

// plan: each node of the first side drops everything to and from the
// second side; both sides still reach the client. The smaller side (the
// first on a tie) is the one isolated.
func (splitCut) plan(_ []int32, st Step, on picked) ([]netns.Rule, []netns.Path, []int32) {
	sides := st.Target.Sides
	if st.Target.Kind == Minority || st.Target.Kind == Majority {
		sides = on.sides
	}
	a, b := sides[0].IDs(), sides[1].IDs()
	var rules []netns.Rule
	var meant []netns.Path
	for _, x := range a {
		rules = append(rules, netns.Rule{Kind: netns.Cut, Node: x, Peers: slices.Clone(b)})
		for _, y := range b {
			meant = append(meant, netns.Path{From: x, To: y}, netns.Path{From: y, To: x})
		}
	}
	isolated := a
	if len(b) < len(a) {
		isolated = b
	}
	return rules, meant, slices.Clone(isolated)
}

func (oneWayCut) kinds(Step) []netns.Kind { return []netns.Kind{netns.OneWay} }

// plan: what A sends to B is dropped. A TCP connect needs both
// directions, so a probe sees B -> A cut too (A's answer is dropped); only
// A -> B is claimed.
func (oneWayCut) plan(_ []int32, st Step, _ picked) ([]netns.Rule, []netns.Path, []int32) {
	a, b := st.Target.Node, st.Target.Peer
	return []netns.Rule{{Kind: netns.OneWay, Node: a, Peers: []int32{b}}}, []netns.Path{{From: a, To: b}}, []int32{a}
}

func (lossy) kinds(Step) []netns.Kind { return []netns.Kind{netns.Loss} }

// plan: on a node, its packets to and from every other node and the
// client; on a pair, between the two. Only a 100% loss is sure to cut.
func (lossy) plan(nodes []int32, st Step, on picked) ([]netns.Rule, []netns.Path, []int32) {
	r := netns.Rule{Kind: netns.Loss, Node: on.nodes[0], Percent: st.Amount.Percent, Client: true}
	if st.Target.Kind == Pair {
		r.Peers, r.Client = []int32{st.Target.Peer}, false
	}
	var meant []netns.Path
	if r.Percent == 100 {
		for _, p := range nodes {
			if p != r.Node && (len(r.Peers) == 0 || slices.Contains(r.Peers, p)) {
				meant = append(meant, netns.Path{From: r.Node, To: p}, netns.Path{From: p, To: r.Node})
			}
		}
		if r.Client {
			meant = append(meant, netns.Path{From: 0, To: r.Node})
		}
	}
	return []netns.Rule{r}, meant, nil
}

func (throttled) kinds(Step) []netns.Kind { return []netns.Kind{netns.Bandwidth} }

func (throttled) plan(_ []int32, st Step, on picked) ([]netns.Rule, []netns.Path, []int32) {
	return []netns.Rule{{Kind: netns.Bandwidth, Node: on.nodes[0], RateBits: st.Amount.RateBits}}, nil, nil
}

// onNet composes a network shape with the target that picks its nodes
// when the fault is due, and proves what it did (NetworkProof).
type onNet struct{ s netShape }

// available: the cluster runs in namespaces, the nodes named are its
// nodes, and this machine can install the rule kinds the shape needs.
func (f onNet) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	n, err := netOf(env)
	if err != nil {
		return err
	}
	for _, id := range targetIDs(st.Target) {
		if !slices.Contains(n.Members(), id) {
			return fmt.Errorf("node %d is not in the cluster's network (nodes %v)", id, n.Members())
		}
	}
	if c, ok := f.s.(cutNode); ok && !c.client && len(n.Members()) < 2 {
		// Nothing to cut it from: a single node (Pulsar standalone, Queen)
		// is cut off only from its clients.
		return fmt.Errorf("the cluster has one node, with no peers to cut it from: use partition-client, which cuts it off from the client")
	}
	if sn, ok := n.(*sshNet); ok {
		return sn.preflight(ctx, f.s.kinds(st))
	}
	caps := env.capabilities(ctx)
	for _, k := range f.s.kinds(st) {
		if err := capable(caps, k); err != nil {
			return err
		}
	}
	return nil
}

// targetIDs are the node IDs a network target names outright.
func targetIDs(t Target) []int32 {
	switch t.Kind {
	case Split:
		return append(t.Sides[0].IDs(), t.Sides[1].IDs()...)
	case OneWayPath, Pair:
		return []int32{t.Node, t.Peer}
	}
	return nil
}

// capabilities is netns.Preflight's answer, read once per Preflight.
func (env Env) capabilities(ctx context.Context) []netns.Capability {
	if env.netCaps != nil {
		return env.netCaps
	}
	return netns.Preflight(ctx)
}

// capable says why kind cannot run here, naming what can instead:
// "netem is not available in this kernel: delay cannot run; loss and
// bandwidth can".
func capable(caps []netns.Capability, kind netns.Kind) error {
	var why string
	found := false
	var can []string
	for _, c := range caps {
		if c.Kind == kind {
			found, why = true, c.Why
			if c.OK {
				return nil
			}
		} else if c.OK {
			can = append(can, kindWord(c.Kind))
		}
	}
	if !found {
		return fmt.Errorf("%s: this machine's network preflight does not know it", kindWord(kind))
	}
	then := "no network fault can"
	if len(can) > 0 {
		then = strings.Join(can, ", ") + " can"
	}
	return fmt.Errorf("%s: %s cannot run; %s", why, kindWord(kind), then)
}

// kindWord is a rule kind as a schedule names it.
func kindWord(k netns.Kind) string {
	switch k {
	case netns.Cut:
		return "partition"
	case netns.OneWay:
		return "partition one-way"
	}
	return string(k)
}

// pick resolves the target now: a node (as a kill's), or the nodes a
// split, one-way or pair names, which must be nodes of the cluster.
func (f onNet) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	if st.Target.Kind == Minority || st.Target.Kind == Majority {
		return pickSides(ctx, t, env, st, rec)
	}
	ids := targetIDs(st.Target)
	if len(ids) == 0 {
		return onNode{}.pick(ctx, t, env, st, rec)
	}
	if env.Nodes == nil {
		return picked{}, errors.New("no cluster to act on: give --cluster-dir")
	}
	for _, id := range ids {
		if !slices.Contains(env.Nodes.IDs(), id) {
			return picked{}, fmt.Errorf("node %d is not one this run controls (%s)", id, env.Nodes.Where())
		}
	}
	on := picked{nodes: []int32{st.Target.Node}, before: t.cachedBefore()}
	if st.Target.Kind == Split {
		_, _, on.nodes = f.s.plan(nil, st, on)
	}
	rec.Node = on.nodes[0]
	return on, nil
}

// apply probes, journals and installs the rules, probes again, and fails
// the fault when a path meant to be cut still answers.
func (f onNet) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	n, err := netOf(w.Env)
	if err != nil {
		return "", err
	}
	port := n.Port()
	rules, meant, isolated := f.s.plan(n.Members(), st, on)
	proof := &NetworkProof{Net: n.Name(), Port: port}
	for _, p := range meant {
		proof.MeantCut = append(proof.MeantCut, p.String())
	}
	rec.NetworkProof = proof
	// On SSH nodes the probe before the rules was taken in the step's
	// preparation, 3 s before it was due (its At says when): taken now it
	// would make the fault late by its round trips, and by its whole
	// timeout for a path an earlier fault cut.
	if proof.Before = on.prep.probed(ctx); proof.Before == nil {
		proof.Before = probe(ctx, n, beforeTimeout)
	}
	live := w.net.begin(isolated)
	for i := range rules {
		rules[i].Name = w.net.ruleName()
		r := rules[i]
		id, err := w.journal.Add(Undo{Kind: UndoNetRule, Net: n.Name(), Port: port, Rule: &r,
			Why: fmt.Sprintf("%s %s: %s", st.Action, st.Target, r)})
		if err != nil {
			return "", err
		}
		left := time.Now()
		if i == 0 {
			rec.At = left // the first rule's time, after the journal's fsync (as a kill's signal)
		}
		err = n.Apply(ctx, r)
		if i == 0 && err == nil {
			// Stamped when the install came back, the earliest time the
			// rule is known to be in force: unlike a signal, a rule takes
			// a command (nft in the namespace, or a round trip over SSH)
			// to go in, and a message sent while it runs may still pass
			// and be acked (CI saw one acked 22 ms after a local cut's
			// start, counted as the cut's first ack).
			rec.At = time.Now()
			rec.AtWithinMs = float64(rec.At.Sub(left)) / float64(time.Millisecond)
		}
		if err != nil {
			// Apply is all or nothing for nft, but iptables on an SSH node
			// is one transaction per family, and its own rollback may fail
			// too: the entry is marked done only once a removal succeeded,
			// else it stays for the heal.
			if rerr := n.Remove(ctx, r); rerr != nil {
				return "", fmt.Errorf("%w; and removing what it may have installed failed (%v): the rule stays journaled, and the heal removes it", err, rerr)
			}
			w.journal.Done(id) //nolint:errcheck // removed: nothing left to undo
			return "", err
		}
		proof.Rules = append(proof.Rules, r)
		w.net.add(live, r.Name)
	}
	proof.After = probe(ctx, n, probeTimeout)
	if open := proof.missed(); len(open) > 0 {
		return "", fmt.Errorf("the rules are installed but the probe after them does not show the cut: %s still answer (%s); the rules stay journaled and the heal removes them", strings.Join(open, ", "), proof.After)
	}
	return fmt.Sprintf("%s; after: %s", rulesText(proof.Rules), proof.After), nil
}

func rulesText(rules []netns.Rule) string {
	s := make([]string, len(rules))
	for i, r := range rules {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

// netRule is the undoer of UndoNetRule: it removes one rule from the Net
// the journal names, found again by its prefix (netns.Open), so that it
// works in `ackcheck heal` after a crash as well as in the run.
type netRule struct{}

// undo removes the rule. A Net that no longer exists (cluster down) took
// its rules with it: nothing to do.
func (netRule) undo(ctx context.Context, w *world, u Undo) error {
	if u.Rule == nil || u.Net == "" {
		return fmt.Errorf("journal entry %q names no rule or network: remove the rules with `ackcheck cluster <broker> down`", u.Why)
	}
	n, ok, err := openNet(ctx, w.Env, u.Net, u.Port)
	if err != nil {
		return err
	}
	if ok {
		if err := n.Remove(ctx, *u.Rule); err != nil {
			return err
		}
	}
	w.net.removed(u.Net, u.Port, u.Rule.Name)
	return nil
}

// netDelay is the delay fault. This kernel has no netem, and package
// netns installs no delay rule: it is refused up front, saying which
// network faults can run instead.
type netDelay struct{}

func (netDelay) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	if _, err := netOf(env); err != nil {
		return err
	}
	if err := capable(env.capabilities(ctx), netns.Delay); err != nil {
		return err
	}
	return errors.New("delay: netem is available, but ackcheck installs no delay rule yet; use loss or bandwidth")
}

func (netDelay) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return onNode{}.pick(ctx, t, env, st, rec)
}

func (f netDelay) apply(ctx context.Context, w *world, st Step, _ picked, _ *Record) (string, error) {
	return "", f.available(ctx, w.Env, st)
}

// healNet is heal-network: it removes every network rule the journal holds
// as in force, newest first, then probes every path once.
type healNet struct{}

func (healNet) available(_ context.Context, env Env, _ Step) error {
	_, err := netOf(env)
	return err
}

// pick: every node, so that the heal follows the network faults before it.
func (healNet) pick(_ context.Context, _ *targets, env Env, _ Step, _ *Record) (picked, error) {
	if env.Nodes == nil {
		return picked{}, errors.New("no cluster to act on: give --cluster-dir")
	}
	return picked{nodes: env.Nodes.IDs()}, nil
}

// apply removes the rules and fails when a path is still cut after.
func (healNet) apply(ctx context.Context, w *world, _ Step, _ picked, rec *Record) (string, error) {
	n, err := netOf(w.Env)
	if err != nil {
		return "", err
	}
	rec.At = time.Now()
	removed, err := w.healNetRules(ctx)
	if err != nil {
		return "", err
	}
	shot := w.net.healed(ctx, w.Env)
	if shot == nil {
		shot = probe(ctx, n, probeTimeout)
	}
	rec.NetworkProof = &NetworkProof{Net: n.Name(), Port: n.Port(), Rules: removed, After: shot, Removed: true}
	if shot.Error != "" || len(shot.Cut) > 0 {
		return "", fmt.Errorf("after removing %d rule(s), not every path answers: %s", len(removed), shot)
	}
	return fmt.Sprintf("%d rule(s) removed; %s", len(removed), shot), nil
}

// healNetRules removes every network rule in force by the journal, newest
// first, each marked done once removed.
func (w *world) healNetRules(ctx context.Context) ([]netns.Rule, error) {
	ids, undos := w.journal.Pending()
	var removed []netns.Rule
	var errs []error
	for i, u := range undos {
		if u.Kind != UndoNetRule {
			continue
		}
		if err := (netRule{}).undo(ctx, w, u); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if err := w.journal.Done(ids[i]); err != nil {
			errs = append(errs, err)
		}
		removed = append(removed, *u.Rule)
	}
	return removed, errors.Join(errs...)
}

// netLive tracks the network faults in force in a run: the rules of each,
// the nodes it isolates (whose recovery waits for the heal), and how to
// stamp its record's NetworkProof once its rules are removed.
type netLive struct {
	mu     sync.Mutex
	count  int
	faults []*liveFault
	// pending: the Net and port of rules removed since the last healed
	// probe.
	pendingNet  string
	pendingPort int
}

type liveFault struct {
	rules    []string // in force
	isolated []int32
	gone     bool // every rule removed; its Healed probe is due
	stamp    func(func(*Record))
}

// ruleName is a name no other rule in force in the Net has: the process
// ID tells this run's from a crashed run's, the count this run's apart.
func (l *netLive) ruleName() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	return fmt.Sprintf("a%d_%d", os.Getpid()%1000000, l.count)
}

func (l *netLive) begin(isolated []int32) *liveFault {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := &liveFault{isolated: isolated}
	l.faults = append(l.faults, f)
	return f
}

func (l *netLive) add(f *liveFault, rule string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f.rules = append(f.rules, rule)
}

// attach gives the fault whose first rule is rule the function that
// updates its record.
func (l *netLive) attach(rule string, stamp func(func(*Record))) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.faults {
		if len(f.rules) > 0 && f.rules[0] == rule {
			f.stamp = stamp
		}
	}
}

// removed notes that a rule is gone; a fault without rules left no longer
// isolates its nodes.
func (l *netLive) removed(net string, port int, rule string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pendingNet, l.pendingPort = net, port
	for _, f := range l.faults {
		if i := slices.Index(f.rules, rule); i >= 0 {
			f.rules = slices.Delete(f.rules, i, i+1)
			f.gone = len(f.rules) == 0
		}
	}
}

// isolates reports whether a network fault in force isolates one of nodes.
func (l *netLive) isolates(nodes ...int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.faults {
		if len(f.rules) > 0 && slices.ContainsFunc(nodes, func(n int32) bool { return slices.Contains(f.isolated, n) }) {
			return true
		}
	}
	return false
}

// healed probes the Net of the rules removed since the last call, once,
// and stamps the probe on every fault whose rules are all gone. It
// returns the probe, nil when no rule was removed.
func (l *netLive) healed(ctx context.Context, env Env) *ProbeShot {
	l.mu.Lock()
	prefix, port := l.pendingNet, l.pendingPort
	l.pendingNet = ""
	var done []*liveFault
	l.faults = slices.DeleteFunc(l.faults, func(f *liveFault) bool {
		if f.gone {
			done = append(done, f)
		}
		return f.gone
	})
	l.mu.Unlock()
	if prefix == "" {
		return nil
	}
	n, ok, err := openNet(ctx, env, prefix, port)
	var shot *ProbeShot
	switch {
	case err != nil:
		shot = &ProbeShot{At: time.Now(), Error: err.Error()}
	case !ok:
		shot = &ProbeShot{At: time.Now(), Gone: prefix}
	default:
		shot = probe(ctx, n, probeTimeout)
	}
	for _, f := range done {
		if f.stamp != nil {
			f.stamp(func(r *Record) {
				if r.NetworkProof != nil {
					r.NetworkProof.Healed = shot
				}
			})
		}
	}
	return shot
}

// pickSides resolves a minority or majority split when it fires: the node
// leading the most partitions of the target's topic (picked as a kill's
// most-leaders is), then a minority side of (n-1)/2 nodes, holding that
// node (minority) or not (majority), filled with the lowest other IDs. The
// minority side is the first, the one isolated.
func pickSides(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	lead := st
	lead.Target = Target{Kind: MostLeaders, Topic: st.Target.Topic}
	on, err := onNode{}.pick(ctx, t, env, lead, rec)
	if err != nil {
		return picked{}, err
	}
	leader := on.nodes[0]
	ids := slices.Clone(env.Nodes.IDs())
	slices.Sort(ids)
	sides, err := splitSides(st.Target.Kind, ids, leader)
	if err != nil {
		return picked{}, err
	}
	on.sides = sides
	on.nodes = sides[0].IDs()
	rec.Node = on.nodes[0]
	return on, nil
}

// splitSides makes the two sides of a minority or majority split of ids
// (sorted) around leader: the minority side first.
func splitSides(kind TargetKind, ids []int32, leader int32) ([2]NodeSet, error) {
	var sides [2]NodeSet
	m := (len(ids) - 1) / 2
	if m < 1 {
		return sides, fmt.Errorf("a %s split needs at least 3 nodes, the cluster has %d", kind, len(ids))
	}
	if kind == Minority {
		sides[0].add(leader)
	}
	for _, id := range ids {
		if len(sides[0].IDs()) == m {
			break
		}
		if id != leader {
			sides[0].add(id)
		}
	}
	for _, id := range ids {
		if !sides[0].Has(id) {
			sides[1].add(id)
		}
	}
	return sides, nil
}
