package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/remote"
)

// ErrNoLogOracle: the nodes' brokers' logs cannot be read.
var ErrNoLogOracle = errors.New("the brokers' logs cannot be read here")

// RecoveryAccount implements drivers.LogOracle when the local cluster
// does; ErrNoLogOracle otherwise.
func (l Local) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	o, ok := l.Cluster.(drivers.LogOracle)
	if !ok {
		return drivers.LogAccount{}, ErrNoLogOracle
	}
	return o.RecoveryAccount(topic, nodes, since, until)
}

// GroupRecovery implements drivers.GroupLogOracle when the local cluster
// does; ErrNoLogOracle otherwise.
func (l Local) GroupRecovery(group string, node int32, since, until time.Time) (*drivers.LogEvent, error) {
	o, ok := l.Cluster.(drivers.GroupLogOracle)
	if !ok {
		return nil, ErrNoLogOracle
	}
	return o.GroupRecovery(group, node, since, until)
}

// coordinatorGroup is the group a fault's target named as
// coordinator:GROUP, or "".
func coordinatorGroup(target string) string {
	g, _ := strings.CutPrefix(target, "coordinator:")
	if g == target {
		return ""
	}
	return g
}

// ReadOracle records, for every applied fault that took nodes away and
// whose return ackcheck saw, the brokers' own account of that return
// (Record.Oracle), when the nodes can read their logs. Each fault's
// window ends where the next such fault began, or at end. It reads logs
// only: call it once the recovery watches are done.
func (in *Injector) ReadOracle(ctx context.Context, topic string, end time.Time) {
	in.init()
	var read func(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error)
	switch o := in.Nodes.(type) {
	case ctxLogOracle:
		read = func(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
			return o.RecoveryAccountContext(ctx, topic, nodes, since, until)
		}
	case drivers.LogOracle:
		read = o.RecoveryAccount
	default:
		return
	}
	recs := in.Records()
	for i, r := range recs {
		// A coordinator's takeover comes while its node is away, so it
		// is read even when ackcheck never saw the node back (CI: a
		// restart late in a loaded run was not ready by the end, and
		// the group's stall went out without the logs' account).
		seen := !r.ReadyAt.IsZero() || !r.InSyncAt.IsZero()
		group := coordinatorGroup(r.Target)
		if r.Result != Applied || !r.Action.TakesNodeAway() || (!seen && group == "") || ctx.Err() != nil {
			continue
		}
		until := end
		for _, later := range recs[i+1:] {
			if later.Result == Applied && later.Action.TakesNodeAway() && later.At.After(r.At) {
				until = later.At
				break
			}
		}
		nodes := slices.Clone(r.Nodes)
		if len(nodes) == 0 {
			nodes = []int32{r.Node}
		}
		acc, err := read(topic, nodes, r.At, until)
		if err != nil {
			if !errors.Is(err, ErrNoLogOracle) {
				in.w.logf("the brokers' logs for the %s at %s: %v", r.Action, r.At.Format("15:04:05.000"), err)
			}
			continue
		}
		if group != "" {
			if o, ok := in.Nodes.(drivers.GroupLogOracle); ok {
				ev, err := o.GroupRecovery(group, r.Node, r.At, until)
				switch {
				case err != nil && !errors.Is(err, ErrNoLogOracle):
					in.w.logf("the brokers' logs for group %s after the %s at %s: %v", group, r.Action, r.At.Format("15:04:05.000"), err)
				case err == nil && ev == nil:
					in.w.logf("the brokers' logs do not say when another node took group %s over after the %s at %s", group, r.Action, r.At.Format("15:04:05.000"))
				}
				acc.Group = ev
			}
		}
		if seen && acc.Ready == nil && acc.InSync == nil {
			// Read, but silent on this fault: said, so that no figure
			// looks cross-checked when it is not.
			in.w.logf("the brokers' logs for the %s at %s: %s do not say when node(s) %v came back", r.Action, r.At.Format("15:04:05.000"), acc.Source, nodes)
		}
		in.log.update(i, func(rec *Record) { rec.Oracle = &acc })
	}
}

// ctxLogOracle is a LogOracle whose logs are fetched over a connection
// (Scripted, over SSH), so that reading them blocks on ctx.
type ctxLogOracle interface {
	RecoveryAccountContext(ctx context.Context, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error)
}

// MaxLogBytes caps what is fetched of each node's log for the oracle: its
// last MaxLogBytes bytes. The window the oracle reads starts at the
// fault, within the run, so the tail holds it unless the log grew by more
// than this since; when the file is larger the account's source says how
// much of it was read.
const MaxLogBytes = 64 << 20

// ReadLogsWith lets the cluster read its nodes' logs (NodeSpec.Log) for
// the log oracle, with the broker profile's reader; without it, or for a
// broker whose profile cannot read fetched logs, there is no account.
func (s *Scripted) ReadLogsWith(r drivers.LogReader) { s.logs = r }

// RecoveryAccountContext implements the log oracle for a cluster file's
// nodes: it fetches every node's log (the last MaxLogBytes bytes; `tail
// -c` on the node, over the node's SSH connection or locally) and hands
// them to the broker's reader. A node without a log path, a log that
// cannot be read, or a broker whose oracle reads only local clusters is
// an error that says which and what to do: never an empty account.
func (s *Scripted) RecoveryAccountContext(ctx context.Context, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	if s.logs == nil {
		return drivers.LogAccount{}, fmt.Errorf("this broker's log oracle reads only a local cluster's logs (--cluster-dir), not a cluster file's nodes")
	}
	logs := map[int32][]byte{}
	var cut []string
	for _, id := range s.ids {
		data, size, err := s.fetchLog(ctx, id)
		if err != nil {
			return drivers.LogAccount{}, err
		}
		logs[id] = data
		if size > int64(len(data)) {
			cut = append(cut, fmt.Sprintf("node %d: the last %d of %d bytes", id, len(data), size))
		}
	}
	source := "read from " + s.where
	if len(cut) > 0 {
		source += "; " + strings.Join(cut, ", ")
	}
	return s.logs.RecoveryAccountFrom(logs, source, topic, nodes, since, until)
}

// fetchLog returns the last MaxLogBytes bytes of node id's log and the
// file's size.
func (s *Scripted) fetchLog(ctx context.Context, id int32) ([]byte, int64, error) {
	n, r, err := s.node(id)
	if err != nil {
		return nil, 0, err
	}
	if n.Log == "" {
		return nil, 0, fmt.Errorf("node %d has no log in the cluster file: add `log: PATH` (its broker log, e.g. /var/log/kafka/server.log) to read the brokers' account", id)
	}
	// The size first, on a line of its own, then the tail: one command,
	// so one round trip and one view of the file.
	q, capBytes := remote.Quote(n.Log), s.logCap
	if capBytes == 0 {
		capBytes = MaxLogBytes
	}
	out, err := r.Run(ctx, fmt.Sprintf("wc -c < %s && tail -c %d %s", q, capBytes, q))
	if err != nil {
		return nil, 0, fmt.Errorf("node %d's log %s on %s: %w (check the path and that %s may read it)", id, n.Log, r.Where(), err, r.Where())
	}
	line, data, ok := strings.Cut(out, "\n")
	size, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if !ok || perr != nil {
		return nil, 0, fmt.Errorf("node %d's log %s on %s: the size read was %q, not a number", id, n.Log, r.Where(), line)
	}
	return []byte(data), size, nil
}
