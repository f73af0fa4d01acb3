package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	_ drivers.TopicConfigurer = (*Driver)(nil)
	_ drivers.AckDescriber    = (*Driver)(nil)
)

// longMax is Kafka's "never by count" for flush.messages.
const longMax = "9223372036854775807"

// FsyncSetting implements drivers.TopicConfigurer: flush.messages=1 makes
// each broker fsync after every append, before it answers or reports the
// write to the leader.
func (d *Driver) FsyncSetting() (key, on, off string) { return "flush.messages", "1", longMax }

func (d *Driver) topicConfigs(ctx context.Context, topic string) (kadm.ResourceConfig, error) {
	rcs, err := d.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kadm.ResourceConfig{}, d.unreachable("describe configs of "+topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return kadm.ResourceConfig{}, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	if rc.Err != nil {
		return rc, fmt.Errorf("describe configs of %s: %w", topic, rc.Err)
	}
	return rc, nil
}

// TopicConfig implements drivers.TopicConfigurer.
func (d *Driver) TopicConfig(ctx context.Context, topic, key string) (*string, error) {
	rc, err := d.topicConfigs(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				return c.Value, nil
			}
			return nil, nil
		}
	}
	return nil, nil
}

// SetTopicConfig implements drivers.TopicConfigurer.
func (d *Driver) SetTopicConfig(ctx context.Context, topic, key string, value *string) error {
	op := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: value}
	if value == nil {
		op.Op = kadm.DeleteConfig
	}
	resps, err := d.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{op}, topic)
	if err != nil {
		return d.unreachable("alter configs of "+topic, err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("set %s on topic %s: %w %s", key, topic, r.Err, r.ErrMessage)
		}
	}
	// The controller takes the change; other brokers learn it a moment
	// later. Return once three reads in a row (from whichever brokers
	// answer) show it, so that what ackcheck reports next is the new
	// setting.
	same := func(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
	deadline := time.Now().Add(15 * time.Second)
	for agree := 0; agree < 3; {
		got, err := d.TopicConfig(ctx, topic, key)
		if err == nil && same(got, value) {
			agree++
		} else {
			agree = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("set %s on topic %s: the brokers still do not report it after 15s", key, topic)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// effective returns the value in force for key (whatever its source).
func effective(rc kadm.ResourceConfig, key string) string {
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return "?"
}

// AckMeaning implements drivers.AckDescriber from the producer's acks and
// the topic's settings as the brokers report them.
func (d *Driver) AckMeaning(ctx context.Context, topic string) (string, error) {
	rc, err := d.topicConfigs(ctx, topic)
	if err != nil {
		return "", err
	}
	return ackMeaning(d.cfg.Acks, effective(rc, "flush.messages"), effective(rc, "min.insync.replicas")), nil
}

func ackMeaning(acks, flush, minISR string) string {
	synced := " to its page cache; none fsyncs it before answering, so a power loss of those brokers can lose it"
	switch flush {
	case "1":
		synced = " and fsynced it"
	case "?":
		synced = "; whether it was fsynced is unknown: the brokers did not report flush.messages"
	}
	switch acks {
	case "0":
		return "acks=0: not answered; the producer does not wait for any broker"
	case "1":
		return fmt.Sprintf("acks=1, flush.messages=%s: answered after the leader alone wrote it%s; followers copy it later", flush, synced)
	}
	replicas := "replicas"
	if minISR == "1" {
		replicas = "replica"
	}
	return fmt.Sprintf("acks=all, min.insync.replicas=%s, flush.messages=%s: answered after the leader and each in-sync follower (at least %s %s) wrote it%s", minISR, flush, minISR, replicas, synced)
}
