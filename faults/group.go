package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/ackcheck/ackcheck/drivers"
)

// Faults aimed at a run's consumer group (run --group): its own members
// restarted (restart-consumers), and the node that coordinates the group
// killed, stopped or powered off (coordinator:GROUP, a target of kill,
// stop and power-loss).

// GroupRestarter is a run's consumer group as the faults reach it:
// ackcheck's own members, which restart-consumers stops without
// committing and joins again (load.Group).
type GroupRestarter interface {
	RestartMembers(ctx context.Context) (string, error)
}

// restartMembers is restart-consumers: it acts on ackcheck's members,
// not on the cluster, and changes nothing to undo.
type restartMembers struct{}

func (restartMembers) available(_ context.Context, env Env, _ Step) error {
	if env.Group == nil && env.GroupName == "" {
		return errors.New("it restarts the run's consumer group: give --group")
	}
	return nil
}

func (restartMembers) pick(context.Context, *targets, Env, Step, *Record) (picked, error) {
	return picked{}, nil
}

func (restartMembers) apply(ctx context.Context, w *world, _ Step, _ picked, rec *Record) (string, error) {
	rec.Node = -1
	return w.Group.RestartMembers(ctx)
}

// coordinatorOf resolves coordinator:GROUP through the driver, bounded
// like a topology read.
func coordinatorOf(ctx context.Context, d drivers.Driver, group string) (int32, error) {
	cf, ok := d.(drivers.GroupCoordinatorFinder)
	if !ok {
		return -1, fmt.Errorf("coordinator:%s: the %s driver cannot say which node coordinates a group", group, d.Name())
	}
	cctx, cancel := context.WithTimeout(ctx, topologyTimeout)
	defer cancel()
	n, err := cf.GroupCoordinator(cctx, group)
	if err != nil {
		return -1, fmt.Errorf("coordinator:%s: %w: %w", group, err, ErrNoTarget)
	}
	return n, nil
}

// coordinatorAvailable refuses coordinator:GROUP before the load on a
// driver whose broker has no group coordinator to find.
func coordinatorAvailable(env Env, st Step) error {
	if st.Target.Kind != Coordinator {
		return nil
	}
	if env.Driver == nil {
		return errors.New("coordinator: no driver to ask which node coordinates the group")
	}
	if _, ok := env.Driver.(drivers.GroupCoordinatorFinder); !ok {
		return fmt.Errorf("coordinator:%s: the %s driver cannot say which node coordinates a group (the kafka, nats and pulsar drivers can)", st.Target.Group, env.Driver.Name())
	}
	return nil
}
