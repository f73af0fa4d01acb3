package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
)

// newGroup is the run's consumer group (nil when it has none), with what
// an acknowledged commit means on the cluster recorded in the run's info.
func newGroup(ctx context.Context, cfg Config, lc load.Config, l *ledger.Ledger, run *ledger.RunInfo) (*load.Group, error) {
	if cfg.Group == nil {
		return nil, nil
	}
	if cfg.Shard != nil {
		return nil, fmt.Errorf("--group cannot run with --shard yet: run the group on a load of its own")
	}
	g, err := load.NewGroup(*cfg.Group, lc, cfg.Driver, l)
	if err != nil {
		return nil, err
	}
	info := &ledger.GroupInfo{Name: cfg.Group.Name, Members: max(1, cfg.Group.Members)}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := cfg.Driver.(drivers.GroupConsumer).CommitPromise(pctx, cfg.Group.Name)
	if err != nil {
		cfg.logf("warning: could not read what a commit of group %s means on this cluster: %v (a commit lost then gives no PASS: UNPROVEN)", cfg.Group.Name, err)
	} else {
		info.Promise, info.Durable = p.Meaning, p.Durable
		cfg.logf("group %s: %d members; an acknowledged commit means: %s", info.Name, info.Members, p.Meaning)
	}
	run.Group = info
	return g, nil
}

// startGroup joins the group's members before the load starts.
func startGroup(ctx context.Context, g *load.Group) error {
	if g == nil {
		return nil
	}
	return g.Start(ctx)
}

// stopGroup lets the group catch up with where the partitions ended
// (bounded), stops it, and records what it did in the run's info.
func stopGroup(ctx context.Context, cfg Config, g *load.Group, topic string, run *ledger.RunInfo) {
	if g == nil {
		return
	}
	// Where the partitions end, asked again until the catch-up's bound: a
	// broker still coming back from a fault answers late.
	var end drivers.Offsets
	var err error
	deadline := time.Now().Add(cfg.Group.CatchUpOrDefault())
	for {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		end, err = cfg.Driver.EndOffsets(ectx, topic)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		end = drivers.Offsets{}
		cfg.logf("warning: could not read where the partitions end for the group's catch-up: %v", err)
	}
	info := g.Stop(ctx, end.Map())
	info.Promise, info.Durable = run.Group.Promise, run.Group.Durable
	run.Group = &info
	cfg.logf("group %s: %d deliveries, %d commits acknowledged, %d refused or unanswered%s", info.Name, g.Delivered(), g.Commits(), g.Refused(), errText(info.Err))
}

func errText(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// groupProgress is the group's part of a progress line ("" without one).
func groupProgress(g *load.Group, now time.Time) string {
	if g == nil {
		return ""
	}
	since := "-"
	if t := g.LastProgress(); !t.IsZero() {
		since = max(0, now.Sub(t)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("  group delivered %d committed %d (last commit %s ago)", g.Delivered(), g.Commits(), since)
}
