package kafka

import (
	"context"
	"fmt"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.CommitFsyncSetter = (*Driver)(nil)

// CommitFsyncSetting implements drivers.CommitFsyncSetter: a group's
// commit is a record on its __consumer_offsets partition, fsynced before
// the answer only with that topic's flush.messages=1.
func (d *Driver) CommitFsyncSetting() string { return offsetsTopic + " flush.messages" }

// CommitFsync implements drivers.CommitFsyncSetter: true when the offsets
// topic's flush.messages is 1 (a topic override or the brokers' own
// log.flush.interval.messages), as the brokers report it now.
func (d *Driver) CommitFsync(ctx context.Context) (bool, error) {
	rc, err := d.topicConfigs(ctx, offsetsTopic)
	if err != nil {
		return false, fmt.Errorf("read the commit fsync setting: %w (the offsets topic exists once a group has found its coordinator)", err)
	}
	return effective(rc, "flush.messages") == "1", nil
}

// SetCommitFsync implements drivers.CommitFsyncSetter: on sets the
// offsets topic's flush.messages=1; off deletes the topic's override, so
// the brokers' default (never by count) applies again. It returns once
// the brokers report the new value.
func (d *Driver) SetCommitFsync(ctx context.Context, on bool) error {
	var v *string
	if on {
		one := "1"
		v = &one
	}
	if err := d.SetTopicConfig(ctx, offsetsTopic, "flush.messages", v); err != nil {
		return fmt.Errorf("switch the commit fsync setting: %w (by hand: kafka-configs --alter --entity-type topics --entity-name %s, --add-config flush.messages=1 for on, --delete-config flush.messages for off)", err, offsetsTopic)
	}
	return nil
}
