package scenarios

import (
	"context"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	natsdriver "github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/drivers/queen"
)

// auditSettings are p's durability settings as the audit runs them,
// switched by set (nil: the cluster runs them already).
func auditSettings(p drivers.Profile, set func(ctx context.Context, on bool) error) []AuditSetting {
	d, ok := p.Durability()
	if !ok {
		panic(p.Name() + " has no fsync audit")
	}
	return AuditSettings(d, set)
}

var (
	kafkaProfile  = kafka.Profile{}
	natsProfile   = natsdriver.Profile{}
	pulsarProfile = pulsar.Profile{}
	queenProfile  = queen.Profile{}
)
