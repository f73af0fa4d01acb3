package faults

import "github.com/ackcheck/ackcheck/cluster"

// Every local cluster (cluster.Local, which each broker's launcher
// implements) is a LocalCluster. Checked here, in a test, so that faults
// does not import cluster for assertions alone, and names no broker.
var _ LocalCluster = cluster.Local(nil)
