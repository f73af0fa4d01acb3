package faults

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
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

// ReadOracle records, for every applied fault that took nodes away and
// whose return ackcheck saw, the brokers' own account of that return
// (Record.Oracle), when the nodes can read their logs. Each fault's
// window ends where the next such fault began, or at end. It reads logs
// only: call it once the recovery watches are done.
func (in *Injector) ReadOracle(ctx context.Context, topic string, end time.Time) {
	in.init()
	o, ok := in.Nodes.(drivers.LogOracle)
	if !ok {
		return
	}
	recs := in.Records()
	for i, r := range recs {
		if r.Result != Applied || !r.Action.TakesNodeAway() || (r.ReadyAt.IsZero() && r.InSyncAt.IsZero()) || ctx.Err() != nil {
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
		acc, err := o.RecoveryAccount(topic, nodes, r.At, until)
		if err != nil {
			if !errors.Is(err, ErrNoLogOracle) {
				in.w.logf("the brokers' logs for the %s at %s: %v", r.Action, r.At.Format("15:04:05.000"), err)
			}
			continue
		}
		in.log.update(i, func(rec *Record) { rec.Oracle = &acc })
	}
}
