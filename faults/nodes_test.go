package faults

import "github.com/ackcheck/ackcheck/cluster"

// The local clusters implement LocalCluster. Checked here, in a test, so
// that faults does not import cluster for assertions alone.
var (
	_ LocalCluster = (*cluster.Kafka)(nil)
	_ LocalCluster = (*cluster.Pulsar)(nil)
	_ LocalCluster = (*cluster.NATS)(nil)
)
