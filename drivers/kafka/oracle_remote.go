package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// RecoveryAccountFrom implements drivers.LogReader: Cluster.RecoveryAccount
// on logs fetched from the nodes of a cluster file, each node's log as
// bytes. Every log given is read, as the local oracle reads every node's:
// the active controller, which logs the unfencing, may be any of them.
func (Profile) RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	ids := make([]int32, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return recoveryAccount(fmt.Sprintf("Kafka's logs (nodes %v, %s)", ids, source), topic, nodes, func(node int32) (Account, error) {
		readers := make([]NodeLog, 0, len(ids))
		for _, id := range ids {
			readers = append(readers, NodeLog{Node: id, Log: bytes.NewReader(logs[id])})
		}
		return ReadAccount(readers, topic, node, since, until)
	})
}

var _ drivers.LogReader = Profile{}
