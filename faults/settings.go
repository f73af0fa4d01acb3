package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The faults that change a setting rather than a process: fsync-before-ack
// for a topic or for every broker, and a broker-wide mode. Each journals
// the value it found before it changes it, once per setting: a later
// toggle of the same setting keeps the first undo, which holds the setting
// as it was before the run touched it.

// ackMeaning is what an ack means once a setting changed, as the running
// cluster says ("" when the driver cannot say).
func ackMeaning(ctx context.Context, w *world, rec *Record) string {
	if ad, ok := w.Driver.(drivers.AckDescriber); ok {
		if m, err := ad.AckMeaning(ctx, w.topic); err == nil {
			rec.AckMeaning = m
		}
	}
	return rec.AckMeaning
}

// allNodes is what a setting that goes through the brokers waits for: every
// earlier action on any node.
func allNodes(env Env) picked {
	if env.Nodes == nil {
		return picked{}
	}
	return picked{nodes: env.Nodes.IDs()}
}

// fsyncTopic switches a topic's fsync-before-ack through the admin API.
type fsyncTopic struct{}

func (fsyncTopic) available(ctx context.Context, env Env, st Step) error {
	if _, ok := env.Driver.(drivers.TopicConfigurer); !ok {
		return fmt.Errorf("the %s driver cannot change topic settings; use fsync-on brokers", env.Driver.Name())
	}
	return nil
}

// pick: no node; the admin API answers for the topic.
func (fsyncTopic) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return picked{}, nil
}

// apply journals the topic's own value, then switches it.
func (fsyncTopic) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	tc, ok := w.Driver.(drivers.TopicConfigurer)
	if !ok {
		return "", fmt.Errorf("the %s driver cannot change topic settings; use fsync-on brokers", w.Driver.Name())
	}
	key, onV, offV := tc.FsyncSetting()
	orig, err := tc.TopicConfig(ctx, st.Target.Topic, key)
	if err != nil {
		return "", err
	}
	if !w.journal.HasTopicConfig(st.Target.Topic, key) {
		if _, err := w.journal.Add(Undo{Kind: UndoTopicConfig, Topic: st.Target.Topic, Key: key, Value: orig,
			Why: fmt.Sprintf("%s %s", st.Action, st.Target)}); err != nil {
			return "", err
		}
	}
	v := offV
	if st.Action == FsyncOn {
		v = onV
	}
	if err := tc.SetTopicConfig(ctx, st.Target.Topic, key, &v); err != nil {
		return "", err
	}
	return ackMeaning(ctx, w, rec), nil
}

// undo sets the topic's setting back to its value before the run.
func (fsyncTopic) undo(ctx context.Context, w *world, u Undo) error {
	tc, ok := w.Driver.(drivers.TopicConfigurer)
	if !ok {
		return fmt.Errorf("the driver cannot change topic settings")
	}
	return tc.SetTopicConfig(ctx, u.Topic, u.Key, u.Value)
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

// pick: every node, for a rolling restart after every earlier action on
// any node.
func (fsyncBrokers) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return allNodes(env), nil
}

// apply edits each node's configuration file, journaling its content
// first, and restarts each node it changed, one at a time, each back in
// sync before the next.
func (fsyncBrokers) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	ce, ok := w.Nodes.(ConfigEditor)
	if !ok || w.Nodes == nil {
		return "", fmt.Errorf("broker-level fsync needs nodes described in a cluster file (config_file of each node)")
	}
	bf := w.ConfigFsync
	if bf == nil {
		return "", fmt.Errorf("the %s driver knows no fsync setting in its servers' configuration files", w.Driver.Name())
	}
	for _, id := range w.Nodes.IDs() {
		orig, err := ce.ReadConfig(ctx, id)
		if err != nil {
			return "", err
		}
		edited, err := bf.Edit(orig, st.Action == FsyncOn)
		if err != nil {
			return "", fmt.Errorf("node %d: %w", id, err)
		}
		if edited == orig {
			continue
		}
		if !w.journal.HasNodeConfig(id) {
			if _, err := w.journal.Add(Undo{Kind: UndoNodeConfig, Node: id, Content: &orig, Restart: true,
				Why: fmt.Sprintf("%s: %s", st.Action, bf.Setting)}); err != nil {
				return "", err
			}
		}
		if err := ce.WriteConfig(ctx, id, edited); err != nil {
			return "", err
		}
		if err := restartAndWait(ctx, w, id); err != nil {
			return "", err
		}
	}
	return ackMeaning(ctx, w, rec), nil
}

// undo puts a node's configuration file back and restarts the node, unless
// the file is already back.
func (fsyncBrokers) undo(ctx context.Context, w *world, u Undo) error {
	if err := w.needNodes(); err != nil {
		return err
	}
	ce, ok := w.Nodes.(ConfigEditor)
	if !ok || u.Content == nil {
		return fmt.Errorf("cannot restore node %d's config here", u.Node)
	}
	cur, err := ce.ReadConfig(ctx, u.Node)
	if err != nil {
		return err
	}
	if cur == *u.Content {
		return nil
	}
	if err := ce.WriteConfig(ctx, u.Node, *u.Content); err != nil {
		return err
	}
	if u.Restart {
		return restartAndWait(ctx, w, u.Node)
	}
	return nil
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

// pick orders the switch after every earlier action on any node: the
// mode is switched through the broker's API, which a node still being
// stopped or restarted by an earlier step cannot answer (CI: Queen's
// maintenance-off at 20 s, due while the server's restart from 14 s was
// still waiting for its clean stop, failed with "connection refused" and
// left maintenance mode on). Such a switch fires late, and its record
// says how late (Due), rather than failing on time.
func (switchMode) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return allNodes(env), nil
}

// apply journals the mode's value unless an undo of it is pending, then
// switches it; switched back to that value, nothing is left to undo.
func (switchMode) apply(ctx context.Context, w *world, st Step, _ picked, rec *Record) (string, error) {
	name, on, _ := st.Action.Switch()
	sw, ok := w.Driver.(drivers.Switcher)
	if !ok {
		return "", fmt.Errorf("the %s driver has no broker-wide modes to switch", w.Driver.Name())
	}
	waitAnswers(ctx, w, st, sw, name)
	rec.At = time.Now() // when the broker answered, the switch's own time
	was, err := sw.Switch(ctx, name)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	id, undo, pending := w.journal.FindSwitch(name)
	if !pending {
		v := onOff(was)
		if _, err := w.journal.Add(Undo{Kind: UndoSwitch, Key: name, Value: &v, Why: st.Action.String()}); err != nil {
			return "", err
		}
	}
	if err := sw.SetSwitch(ctx, name, on); err != nil {
		return "", err
	}
	if pending && undo.Value != nil && *undo.Value == onOff(on) {
		if err := w.journal.Done(id); err != nil {
			return "", err
		}
	}
	return ackMeaning(ctx, w, rec), nil
}

// switchAnswerWait bounds how long a switch waits for a broker that does
// not answer, such as a server an earlier step restarted that is still
// starting.
const switchAnswerWait = 2 * time.Minute

// waitAnswers waits, up to switchAnswerWait, until the broker answers
// for the mode. An earlier restart ends when the process runs, not when
// it serves: under load Queen's server took 23 s to answer after its
// restart, and a maintenance-off due meanwhile failed with "connection
// refused" and left maintenance mode on for the rest of the load. The
// switch then fires late, and its record says how late.
func waitAnswers(ctx context.Context, w *world, st Step, sw drivers.Switcher, name string) {
	deadline := time.Now().Add(switchAnswerWait)
	for said := false; time.Now().Before(deadline); {
		if _, err := sw.Switch(ctx, name); !errors.Is(err, drivers.ErrUnreachable) {
			return
		}
		if !said {
			w.logf("fault %s: the broker does not answer yet; waiting up to %s for it", st.Action, switchAnswerWait)
			said = true
		}
		if sleepCtx(ctx, 250*time.Millisecond) != nil {
			return
		}
	}
}

// undo turns the mode back to the value it had before the run.
func (switchMode) undo(ctx context.Context, w *world, u Undo) error {
	sw, ok := w.Driver.(drivers.Switcher)
	if !ok {
		return fmt.Errorf("the driver cannot switch %s", u.Key)
	}
	return sw.SetSwitch(ctx, u.Key, u.Value != nil && *u.Value == onOff(true))
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// restartAndWait restarts one node cleanly and waits until it answers and
// is back in sync as its new process (see rejoin), so that a rolling
// restart never takes two replicas away at once.
func restartAndWait(ctx context.Context, w *world, id int32) error {
	var before *drivers.Topology
	if w.Driver != nil {
		if t, err := w.read(ctx); err == nil {
			before = &t
		}
	}
	w.states.set(nodeDown, id)
	if err := w.Nodes.Stop(ctx, id, time.Minute); err != nil {
		return fmt.Errorf("restart node %d: %w", id, err)
	}
	rj := newRejoin([]int32{id}, true, before)
	if topo, err := w.read(ctx); err == nil {
		rj.observe(topo)
	}
	if err := w.Nodes.Start(ctx, id); err != nil {
		return fmt.Errorf("restart node %d: %w", id, err)
	}
	w.states.set(nodeUp, id)
	deadline := time.Now().Add(3 * time.Minute)
	why := "no topology read yet"
	for {
		if topo, err := w.read(ctx); err == nil {
			rj.observe(topo)
			var inSync bool
			if _, inSync, why = rj.advance(topo, func(t drivers.Topology) bool { return w.allAnswer(ctx, t, []int32{id}) }); inSync {
				w.logf("node %d restarted and back in sync (%s)", id, rj.evidence())
				return nil
			}
		} else {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d did not come back in sync within 3 minutes: %s", id, why)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}
