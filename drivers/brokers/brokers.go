// Package brokers is the one list of the brokers ackcheck knows. A broker
// is one directory under drivers/ (its driver, profile, local launcher and
// log oracle) and one line here; the command line, the cluster commands
// and every lookup by name read this list and nothing else.
package brokers

import (
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/drivers/queen"
)

// All returns the brokers' profiles, in the order the command line lists
// them; the first is --driver's default.
func All() []drivers.Profile {
	return []drivers.Profile{
		kafka.Profile{},
		pulsar.Profile{},
		nats.Profile{},
		queen.Profile{},
	}
}
