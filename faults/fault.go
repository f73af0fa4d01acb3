package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// Env is what faults act through: the nodes' processes, the broker's
// admin API (the driver), and the broker's configuration-file fsync edit.
type Env struct {
	Nodes       Nodes // nil: no cluster to act on
	Driver      drivers.Driver
	ConfigFsync *drivers.ConfigEdit
}

// fault is one action applied to one kind of target, in the manner of
// etcd's robustness failpoints: it says before the load whether it can run
// where it is scheduled (available), and does its work when it fires.
type fault interface {
	// available reports what would stop st from running in env, checked
	// without applying anything; nil when it can run.
	available(ctx context.Context, env Env, st Step) error
	// fire resolves st's target now, in schedule order, without waiting on
	// any node, and returns the plan that applies it.
	fire(ctx context.Context, in *Injector, st Step, rec Record) plan
}

// faultOf is the fault a step schedules.
func faultOf(st Step) (fault, error) {
	switch st.Action {
	case Kill:
		return kill{}, nil
	case Stop:
		return stop{}, nil
	case Pause:
		return pause{}, nil
	case Resume:
		return resume{}, nil
	case Restart:
		return restart{}, nil
	case PowerLoss:
		if st.Target.Kind == All {
			return powerLossAll{}, nil
		}
		return powerLossNode{}, nil
	case FsyncOn, FsyncOff:
		switch st.Target.Kind {
		case Topic:
			return fsyncTopic{}, nil
		case Brokers:
			return fsyncBrokers{}, nil
		}
		return nil, fmt.Errorf("%s takes topic:<topic> or brokers, not %s", st.Action, st.Target)
	}
	if _, _, ok := st.Action.Switch(); ok {
		return switchMode{}, nil
	}
	return nil, fmt.Errorf("unknown action %q", st.Action)
}

// nodeAction is what a fault on one node does to it.
type nodeAction interface {
	act(ctx context.Context, in *Injector, node int32, rec *Record) error
}

// The faults on one node, its target chosen when it fires.
type (
	kill          struct{} // SIGKILL
	stop          struct{} // SIGTERM, waited for
	pause         struct{} // SIGSTOP
	resume        struct{} // SIGCONT
	restart       struct{} // start again on the same data
	powerLossNode struct{} // SIGKILL and lose what was not fsynced
)

func (f kill) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}
func (f stop) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}
func (f pause) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}
func (f resume) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}
func (f restart) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}
func (f powerLossNode) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return in.onNode(ctx, st, rec, f)
}

func (kill) available(ctx context.Context, env Env, st Step) error    { return nodeAvailable(env, st) }
func (stop) available(ctx context.Context, env Env, st Step) error    { return nodeAvailable(env, st) }
func (pause) available(ctx context.Context, env Env, st Step) error   { return nodeAvailable(env, st) }
func (resume) available(ctx context.Context, env Env, st Step) error  { return nodeAvailable(env, st) }
func (restart) available(ctx context.Context, env Env, st Step) error { return nodeAvailable(env, st) }

// available: the node, or every node a role may pick, can lose what it
// had not fsynced.
func (powerLossNode) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	ids := env.Nodes.IDs()
	switch st.Target.Kind {
	case Node:
		ids = []int32{st.Target.Node}
	case Named:
		id, _ := nodeNamed(env.Nodes, st.Target.Name)
		ids = []int32{id}
	}
	return canLoseUnsynced(env.Nodes, ids)
}

// nodeAvailable: there are nodes to act on, and a node named by ID is one
// of them.
func nodeAvailable(env Env, st Step) error {
	if env.Nodes == nil {
		return fmt.Errorf("it needs the cluster it acts on: pass --cluster-dir of a local cluster or --cluster-file")
	}
	if st.Target.Kind == Node && !slices.Contains(env.Nodes.IDs(), st.Target.Node) {
		return fmt.Errorf("node %d is not one of the nodes %s describes (%v)", st.Target.Node, env.Nodes.Where(), env.Nodes.IDs())
	}
	if st.Target.Kind == Named {
		if _, err := nodeNamed(env.Nodes, st.Target.Name); err != nil {
			return err
		}
	}
	return nil
}

func canLoseUnsynced(nodes Nodes, ids []int32) error {
	pl, ok := nodes.(PowerLosser)
	if !ok {
		return fmt.Errorf("these nodes (%s) cannot lose unsynced writes: start the local cluster with --lazyfs, or give each node a lose_command in the cluster file", nodes.Where())
	}
	for _, id := range ids {
		if err := pl.CanLoseUnsynced(id); err != nil {
			return err
		}
	}
	return nil
}

func (kill) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	return in.takeDown(ctx, Kill, node, rec, func() (int, error) { return in.Nodes.Signal(ctx, node, syscall.SIGKILL) })
}

func (stop) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	return in.takeDown(ctx, Stop, node, rec, func() (int, error) {
		pid, _ := in.Nodes.PID(ctx, node)
		return pid, in.Nodes.Stop(ctx, node, 30*time.Second)
	})
}

func (pause) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	id, err := in.Journal.Add(Undo{Kind: UndoResume, Node: node, Why: fmt.Sprintf("pause of node %d", node)})
	if err != nil {
		return err
	}
	rec.At = time.Now() // the signal's time, after the journal's fsync (takeDown)
	if rec.PID, err = in.Nodes.Signal(ctx, node, syscall.SIGSTOP); err != nil {
		in.Journal.Done(id)
		return err
	}
	in.setState(node, nodePaused)
	return nil
}

func (resume) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	var err error
	if rec.PID, err = in.Nodes.Signal(ctx, node, syscall.SIGCONT); err != nil {
		return err
	}
	in.setState(node, nodeUp)
	if id, ok := in.Journal.Find(UndoResume, node); ok {
		return in.Journal.Done(id)
	}
	return nil
}

func (restart) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	if pid, _ := in.Nodes.PID(ctx, node); pid != 0 {
		return fmt.Errorf("node %d still runs as PID %d: nothing to restart", node, pid)
	}
	if err := in.Nodes.Start(ctx, node); err != nil {
		return err
	}
	rec.PID = in.waitPID(ctx, node)
	in.setState(node, nodeUp)
	if id, ok := in.Journal.Find(UndoStart, node); ok {
		return in.Journal.Done(id)
	}
	return nil
}

func (powerLossNode) act(ctx context.Context, in *Injector, node int32, rec *Record) error {
	return in.powerLoss(ctx, []int32{node}, rec)
}

// powerLossAll cuts the power of every node at once.
type powerLossAll struct{}

func (powerLossAll) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	return canLoseUnsynced(env.Nodes, env.Nodes.IDs())
}

func (powerLossAll) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	if in.Nodes == nil {
		rec.Result, rec.Error = Skipped, "no cluster to act on: give --cluster-dir or --cluster-file"
		in.add(rec)
		return plan{rec: rec}
	}
	ids := in.Nodes.IDs()
	before := in.cachedBefore()
	return plan{rec: rec, nodes: ids, act: func(ctx context.Context, rec Record) Record {
		rec.At = time.Now()
		err := in.powerLoss(ctx, ids, &rec)
		if err != nil {
			rec.Result, rec.Error = Failed, err.Error()
			in.logf("fault power-loss all failed: %v", err)
		} else {
			rec.Result = Applied
			in.logf("fault power-loss all: nodes %v lost what they had not fsynced and started again%s", ids, slipText(rec))
		}
		i := in.add(rec)
		if err == nil && in.Driver != nil {
			in.watch(ctx, i, ids, before)
		}
		return rec
	}}
}

// fsyncTopic switches a topic's fsync-before-ack through the admin API.
type fsyncTopic struct{}

func (fsyncTopic) available(ctx context.Context, env Env, st Step) error {
	if _, ok := env.Driver.(drivers.TopicConfigurer); !ok {
		return fmt.Errorf("the %s driver cannot change topic settings; use fsync-on brokers", env.Driver.Name())
	}
	return nil
}

func (fsyncTopic) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	return plan{rec: rec, act: func(ctx context.Context, rec Record) Record { return in.fsyncRecord(ctx, st, rec, in.fsyncTopic) }}
}

// fsyncBrokers switches every node's configuration file and restarts the
// nodes one at a time.
type fsyncBrokers struct{}

// available: the broker has a configuration-file fsync setting, and each
// node's configuration file can be read.
func (fsyncBrokers) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	ce, ok := env.Nodes.(ConfigEditor)
	if !ok {
		return fmt.Errorf("it edits each node's configuration file: describe the nodes in a cluster file with config_file")
	}
	if env.ConfigFsync == nil {
		return fmt.Errorf("the %s driver knows no fsync setting in its servers' configuration files", env.Driver.Name())
	}
	for _, id := range env.Nodes.IDs() {
		if _, err := ce.ReadConfig(ctx, id); err != nil {
			return fmt.Errorf("node %d: its configuration file cannot be read: %w", id, err)
		}
	}
	return nil
}

func (fsyncBrokers) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	var ids []int32
	if in.Nodes != nil {
		ids = in.Nodes.IDs() // a rolling restart: after every earlier action on any node
	}
	return plan{rec: rec, nodes: ids, act: func(ctx context.Context, rec Record) Record { return in.fsyncRecord(ctx, st, rec, in.fsyncBrokers) }}
}

// switchMode turns a broker-wide mode on or off through the broker's own
// API (drivers.Switcher), journaling the mode's value first.
type switchMode struct{}

func (switchMode) available(ctx context.Context, env Env, st Step) error {
	name, _, _ := st.Action.Switch()
	sw, ok := env.Driver.(drivers.Switcher)
	if !ok {
		return fmt.Errorf("the %s driver has no broker-wide modes to switch", env.Driver.Name())
	}
	if !slices.Contains(sw.Switches(), name) {
		return fmt.Errorf("the %s driver has no mode %q (it has %v)", env.Driver.Name(), name, sw.Switches())
	}
	return nil
}

// fire orders the switch after every earlier action on any node: the
// mode is switched through the broker's API, which a node still being
// stopped or restarted by an earlier step cannot answer (CI: Queen's
// maintenance-off at 20 s, due while the server's restart from 14 s was
// still waiting for its clean stop, failed with "connection refused" and
// left maintenance mode on). Such a switch fires late, and its record
// says how late (Due), rather than failing on time.
func (switchMode) fire(ctx context.Context, in *Injector, st Step, rec Record) plan {
	var ids []int32
	if in.Nodes != nil {
		ids = in.Nodes.IDs()
	}
	return plan{rec: rec, nodes: ids, act: func(ctx context.Context, rec Record) Record {
		in.waitAnswers(ctx, st)
		return in.fsyncRecord(ctx, st, rec, in.switchMode)
	}}
}

// switchAnswerWait bounds how long a switch waits for a broker that does
// not answer, such as a server an earlier step restarted that is still
// starting.
const switchAnswerWait = 2 * time.Minute

// waitAnswers waits, up to switchAnswerWait, until the broker answers
// for the switch's mode. An earlier restart ends when the process runs,
// not when it serves: under load Queen's server took 23 s to answer after
// its restart, and a maintenance-off due meanwhile failed with "connection
// refused" and left maintenance mode on for the rest of the load. The
// switch then fires late, and its record says how late.
func (in *Injector) waitAnswers(ctx context.Context, st Step) {
	name, _, _ := st.Action.Switch()
	sw, ok := in.Driver.(drivers.Switcher)
	if !ok {
		return
	}
	deadline := time.Now().Add(switchAnswerWait)
	for said := false; time.Now().Before(deadline); {
		if _, err := sw.Switch(ctx, name); !errors.Is(err, drivers.ErrUnreachable) {
			return
		}
		if !said {
			in.logf("fault %s: the broker does not answer yet; waiting up to %s for it", st.Action, switchAnswerWait)
			said = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
