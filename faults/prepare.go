package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/remote"
)

// Faults over SSH on time.
//
// A fault on a node reached by commands used to cost, at its due time, a
// session for the PID lookup and another for the signal (for a network
// fault: a probe of every path, a session to read the SSH tuple and one
// to install the rule): 390 to 530 ms on this machine's sshd, each
// session a channel, a shell, a fork. Now, three seconds before the fault
// is due (prepareLead), the injector asks the nodes to prepare: each node
// gets a shell kept open (remote.Shell) and its broker's PID is read in
// it with the process's start time. At the due time the signal is one
// command through that shell, which checks only what can have changed
// since: that the PID still names the process read then (its start time in
// /proc, read by the shell's builtins: no lookup, no fork). Only when it
// does not (the broker restarted in between) does the command look the PID
// up again, in the same round trip. A network fault's probe before its
// rules is taken in the preparation too, and its rules go through the same
// shell, whose SSH session is the one preflight checked (a redialled
// connection closes the shell, and the fault falls back to a fresh check).

// prepareLead is how long before a step's due time the injector prepares
// the nodes (Preparer) and, for a network fault, probes the paths: the
// topology's earliest read in advance (prefetchLeads). On this machine,
// loaded (load average 11 on 2 cores), a new SSH session took 230 to 720
// ms and a first preparation of three nodes with its probe 2.5 s; once the
// shells are open, a preparation is a few commands through them.
const prepareLead = 3 * time.Second

// preparedShellTimeout bounds a command through a prepared shell; past it
// the shell is closed and the command is run by the node's Runner.
const preparedShellTimeout = 5 * time.Second

// Preparer is implemented by Nodes whose actions cost a round trip to
// another machine (SSH). Prepare, called before a fault is due, does then
// what the action would otherwise do at its due time: it opens a shell on
// each of ids (kept while it lives) and reads each broker's PID.
type Preparer interface {
	Prepare(ctx context.Context, ids []int32) error
}

// preparedNode is what Prepare opened and read on one node.
type preparedNode struct {
	shell *remote.Shell
	// pid and start are the broker's PID and its start time in
	// /proc/PID/stat (field 22) when prepared; pid 0: it did not run.
	pid   int
	start string
	// session is the node's SSH session tuple and tools as read in the
	// shell (network faults); nil until read.
	session *sshSession
}

// preparedSet holds the prepared nodes of a Scripted.
type preparedSet struct {
	// running: one Prepare at a time (two steps due close together are
	// prepared one after the other, each node keeping one shell).
	running sync.Mutex
	mu      sync.Mutex
	nodes   map[int32]*preparedNode
}

// get returns a copy of node id's preparation while its shell lives.
func (p *preparedSet) get(id int32) *preparedNode {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[id]
	if n == nil || !n.shell.Alive() {
		return nil
	}
	cp := *n
	return &cp
}

func (p *preparedSet) put(id int32, n *preparedNode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = map[int32]*preparedNode{}
	}
	if old := p.nodes[id]; old != nil && old.shell != n.shell {
		old.shell.Close()
	}
	p.nodes[id] = n
}

// setSession records the session read in node id's shell sh, if that is
// still the node's shell.
func (p *preparedSet) setSession(id int32, sh *remote.Shell, s sshSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.nodes[id]; n != nil && n.shell == sh {
		n.session = &s
	}
}

// shellRunner runs commands through a prepared shell, each bounded by
// preparedShellTimeout, as a remote.Runner.
type shellRunner struct{ sh *remote.Shell }

func (r shellRunner) Run(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, preparedShellTimeout)
	defer cancel()
	return r.sh.Run(ctx, cmd)
}

func (r shellRunner) Where() string { return r.sh.Where() }
func (r shellRunner) Close() error  { return nil }

func (p *preparedSet) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.nodes {
		n.shell.Close()
	}
	p.nodes = nil
}

var _ Preparer = (*Scripted)(nil)

// Prepare implements Preparer: on each node (all at once) a shell, opened
// once and kept while it lives, and the broker's PID and start time read
// through it. A runner that cannot open a shell leaves its node
// unprepared: its faults run as before, by commands of their own.
func (s *Scripted) Prepare(ctx context.Context, ids []int32) error {
	s.prep.running.Lock()
	defer s.prep.running.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.prepare(ctx, id)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Scripted) prepare(ctx context.Context, id int32) error {
	spec, r, err := s.node(id)
	if err != nil {
		return err
	}
	opener, ok := r.(remote.ShellOpener)
	if !ok {
		return nil
	}
	p := s.prep.get(id)
	sh := (*remote.Shell)(nil)
	if p != nil {
		sh = p.shell
	} else if sh, err = opener.OpenShell(ctx); err != nil {
		return fmt.Errorf("prepare node %d: %w", id, err)
	}
	cctx, cancel := context.WithTimeout(ctx, preparedShellTimeout)
	defer cancel()
	out, err := sh.Run(cctx, `p=$(`+s.pidCmd(spec)+`); if [ -n "$p" ] && [ "$p" != 0 ] && read -r s 2>/dev/null < /proc/"$p"/stat; then s=${s##*") "}; set -- $s; echo "$p ${20}"; fi`)
	if err != nil {
		sh.Close()
		return fmt.Errorf("prepare node %d: read its PID: %w", id, err)
	}
	np := &preparedNode{shell: sh}
	if f := strings.Fields(out); len(f) == 2 {
		np.pid, _ = strconv.Atoi(f[0])
		np.start = f[1]
	}
	if p != nil {
		np.session = p.session
	}
	s.prep.put(id, np)
	return nil
}

// signalPrepared sends sig to node id through its prepared shell: one
// command that checks the prepared PID still names the process prepared
// (its start time), or else looks the PID up again, and signals it. ok is
// false when the node is not prepared or its shell failed: the caller
// then signals by commands of its own.
func (s *Scripted) signalPrepared(ctx context.Context, id int32, sig syscall.Signal) (pid int, sent time.Time, within time.Duration, ok bool, err error) {
	p := s.prep.get(id)
	if p == nil {
		return 0, time.Time{}, 0, false, nil
	}
	spec, _, err := s.node(id)
	if err != nil {
		return 0, time.Time{}, 0, true, err
	}
	// Builtins only on the path that finds the prepared process again:
	// read, parameter expansion, set, test, kill, echo.
	cmd := fmt.Sprintf(`p=%d; s=; if [ "$p" != 0 ] && read -r s 2>/dev/null < /proc/$p/stat; then s=${s##*") "}; set -- $s; if [ "$1" = Z ] || [ "${20}" != %q ]; then p=; fi; else p=; fi; `+
		`[ -n "$p" ] || p=$(%s); if [ -n "$p" ] && [ "$p" != 0 ]; then kill -%d "$p" && echo "$p"; else echo none; fi`,
		p.pid, p.start, s.pidCmd(spec), int(sig))
	cctx, cancel := context.WithTimeout(ctx, preparedShellTimeout)
	defer cancel()
	left := time.Now()
	out, err := p.shell.Run(cctx, cmd)
	sent = time.Now()
	var ee *remote.ExitError
	switch {
	case errors.As(err, &ee):
		return 0, time.Time{}, 0, true, fmt.Errorf("signal %v to node %d: %w", sig, id, err)
	case err != nil:
		return 0, time.Time{}, 0, false, nil // the shell died: by commands of its own
	}
	out = strings.TrimSpace(out)
	if out == "none" {
		return 0, time.Time{}, 0, true, fmt.Errorf("node %d does not run", id)
	}
	if pid, err = strconv.Atoi(out); err != nil {
		return 0, time.Time{}, 0, true, fmt.Errorf("signal %v to node %d: unexpected output %q", sig, id, out)
	}
	return pid, sent, sent.Sub(left), true, nil
}

// stepPrep is what the injector prepared for one step before it was due:
// done closes once the preparation ended; before is the probe of every
// path a network fault takes before its rules (nil for other faults, or
// when the cluster has no network).
type stepPrep struct {
	done   chan struct{}
	before *ProbeShot
}

// probed returns the probe taken in the preparation, waiting for the
// preparation to end (it began prepareLead before the due time, so it has
// normally ended); nil when no preparation probed.
func (sp *stepPrep) probed(ctx context.Context) *ProbeShot {
	if sp == nil {
		return nil
	}
	select {
	case <-sp.done:
		return sp.before
	case <-ctx.Done():
		return nil
	}
}

// prepares reports whether st's fault acts on nodes, and so gains from a
// preparation (its nodes' shells and PIDs, its network's probe).
func prepares(st Step) bool {
	f, err := faultOf(st)
	if err != nil {
		return false
	}
	switch f.(type) {
	case onNode, onNet:
		return true
	}
	return false
}

// schedulePrepare prepares st prepareLead before due (at once when that
// has passed), on a goroutine of its own: the nodes (Preparer), and for a
// network fault on SSH nodes, their sessions and the probe before its
// rules.
// A preparation that fails is logged; the fault then does at its due time
// what was not prepared.
func (in *Injector) schedulePrepare(ctx context.Context, st Step, due time.Time, wg *sync.WaitGroup) *stepPrep {
	sp := &stepPrep{done: make(chan struct{})}
	_, isNet := mustFault(st).(onNet)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(sp.done)
		t := time.NewTimer(time.Until(due.Add(-prepareLead)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p, ok := in.Nodes.(Preparer); ok {
			if err := p.Prepare(ctx, in.Nodes.IDs()); err != nil {
				in.w.logf("prepare %s %s: %v (it runs unprepared)", st.Action, st.Target, err)
			}
		}
		if !isNet {
			return
		}
		n, err := netOf(in.w.Env)
		if err != nil {
			return // the fault says why when it is due
		}
		sn, ok := n.(*sshNet)
		if !ok {
			// A local cluster's namespaces: the probe costs a few
			// milliseconds at the due time (no round trip), and there it
			// also sees what an earlier fault cut in the meantime.
			return
		}
		if err := sn.prepareSessions(ctx); err != nil {
			in.w.logf("prepare %s %s: %v (its rules check the session afresh)", st.Action, st.Target, err)
		}
		sp.before = probe(ctx, n, beforeTimeout)
	}()
	return sp
}

// mustFault is faultOf's fault, nil on an error.
func mustFault(st Step) fault {
	f, _ := faultOf(st)
	return f
}
