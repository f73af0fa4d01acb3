package kafka

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Lines as Kafka 4.3 logs them (the ISR, fencing and unclean-election
// lines seen in CI's kafka.log files), two nodes' logs.
const (
	controllerLog = `[2026-12-01 10:00:00,500] INFO [QuorumController id=1] Fencing broker 2 at epoch 40 because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:00,600] INFO [QuorumController id=1] Fencing broker 3 at epoch 41 because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,000] INFO [QuorumController id=1] Replayed RegisterBrokerRecord establishing a new incarnation of broker 2: RegisterBrokerRecord(brokerId=2) (org.apache.kafka.controller.ClusterControlManager)
[2026-12-01 10:00:10,000] INFO [QuorumController id=1] The request from broker 2 to unfence has been granted because it has caught up with the offset of its register broker record 97. (org.apache.kafka.controller.BrokerHeartbeatManager)
[2026-12-01 10:00:11,000] INFO [QuorumController id=1] UNCLEAN partition change for orders-1 with topic ID abc: isr: [3] -> [1], leader: -1 -> 1, leaderEpoch: 4 -> 5 (org.apache.kafka.controller.PartitionChangeBuilder)
[2026-12-01 10:00:11,100] INFO [QuorumController id=1] UNCLEAN partition change for orders-2 with topic ID abc: isr: [] -> [3], leader: -1 -> 3, elr: [], lastKnownElr: [3] (org.apache.kafka.controller.PartitionChangeBuilder)
`
	leaderLog = `[2026-12-01 09:59:00,000] INFO [Partition orders-0 broker=1] ISR updated to 1,3 and version updated to 5 (kafka.cluster.Partition)
[2026-12-01 10:00:02,000] INFO [Partition orders-0 broker=1] ISR updated to 1,3 and version updated to 6 (kafka.cluster.Partition)
[2026-12-01 10:00:12,000] INFO [Partition orders-0 broker=1] ISR updated to 1,3,2 and version updated to 7 (kafka.cluster.Partition)
[2026-12-01 10:00:12,500] INFO [Partition other-0 broker=1] ISR updated to 1,2,3 and version updated to 7 (kafka.cluster.Partition)
[2026-12-01 10:00:13,000] INFO [Partition orders-3 broker=1] ISR updated to 1,3 and version updated to 2 (kafka.cluster.Partition)
[2026-12-01 10:00:14,000] INFO [ReplicaFetcher replicaId=3, leaderId=1, fetcherId=0] Truncating partition orders-1 with TruncationState(offset=1200, completed=true) due to leader epoch and offset EpochEndOffset (kafka.server.ReplicaFetcherThread)
[2026-12-01 10:00:15,000] INFO [ReplicaFetcher replicaId=3, leaderId=1, fetcherId=0] Truncating partition orders-1 with TruncationState(offset=1100, completed=true) due to leader epoch and offset EpochEndOffset (kafka.server.ReplicaFetcherThread)
`
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04:05,000", s, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func logs() []NodeLog {
	return []NodeLog{{1, strings.NewReader(controllerLog)}, {2, strings.NewReader(leaderLog)}}
}

func TestReadAccount(t *testing.T) {
	since := at(t, "2026-12-01 10:00:00,000")
	tests := []struct {
		name     string
		node     int32
		until    time.Time
		fenced   string
		unfenced string
		inSync   string
		back     int
		notBack  []int32
	}{
		// Broker 2: fenced, back, and in orders-0's ISR again after the
		// unfencing; orders-3's last ISR leaves it out (a gap, not proof).
		// orders-1 and orders-2 are left out by the unclean changes.
		{"fires", 2, time.Time{}, "10:00:00,500", "10:00:10,000", "10:00:12,000", 1, []int32{1, 2, 3}},
		// Lines after until belong to a later fault: nothing of the return.
		{"bounded", 2, at(t, "2026-12-01 10:00:05,000"), "10:00:00,500", "", "", 0, []int32{0}},
		// Broker 3 was fenced and never unfenced: no ISR line counts.
		{"quiet for another broker", 3, time.Time{}, "10:00:00,600", "", "", 0, []int32{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAccount(logs(), "orders", tc.node, since, tc.until)
			if err != nil {
				t.Fatal(err)
			}
			clock := func(v time.Time) string {
				if v.IsZero() {
					return ""
				}
				return v.Format("15:04:05,000")
			}
			if clock(a.Fenced) != tc.fenced || clock(a.Unfenced) != tc.unfenced || len(a.ISRBack) != tc.back {
				t.Errorf("fenced %q unfenced %q, %d partitions back; want %q %q %d", clock(a.Fenced), clock(a.Unfenced), len(a.ISRBack), tc.fenced, tc.unfenced, tc.back)
			}
			if tc.unfenced != "" && clock(a.InSync()) != tc.inSync {
				t.Errorf("in sync %q, want %q", clock(a.InSync()), tc.inSync)
			}
			if fmt.Sprint(a.NotBack) != fmt.Sprint(tc.notBack) {
				t.Errorf("not back %v, want %v", a.NotBack, tc.notBack)
			}
		})
	}
}

func TestReadUnclean(t *testing.T) {
	u, err := ReadUnclean(logs(), "orders", at(t, "2026-12-01 10:00:00,000"))
	if err != nil {
		t.Fatal(err)
	}
	// orders-1: leader 1 was not in the ISR [3]: unclean, and replica 3
	// truncated to 1100 at the lowest. orders-2's new leader 3 was the
	// last known eligible leader: no unclean election.
	e, ok := u.Elections[1]
	if !ok || e.NewLeader != 1 || len(e.OldISR) != 1 || e.OldISR[0] != 3 {
		t.Errorf("orders-1: %+v, %v", e, ok)
	}
	if _, ok := u.Elections[2]; ok {
		t.Errorf("orders-2 counted unclean: its new leader was the last known ELR")
	}
	if u.TruncatedTo[1] != 1100 || len(u.TruncatedTo) != 1 {
		t.Errorf("truncated to %v, want orders-1 at 1100", u.TruncatedTo)
	}
	if len(u.Lines) != 4 {
		t.Errorf("evidence: %d lines, want 4: %q", len(u.Lines), u.Lines)
	}
	// Quiet: another topic, or a window after every line.
	for _, tc := range []struct {
		topic string
		since time.Time
	}{{"other", time.Time{}}, {"orders", at(t, "2026-12-01 11:00:00,000")}} {
		u, err := ReadUnclean(logs(), tc.topic, tc.since)
		if err != nil || len(u.Elections) != 0 || len(u.TruncatedTo) != 0 {
			t.Errorf("%s since %s: %+v, %v", tc.topic, tc.since, u, err)
		}
	}
}

// The controllers' partition changes, as Kafka 4.3 logs them at DEBUG
// (clean) and INFO (UNCLEAN), each replayed by every controller: broker 2
// killed at 10:00:00, its partitions orders-0 and orders-1 moved, orders-4
// only dropped it from its ISR; orders-5 moved away from broker 3, and
// other-0 is another topic.
const electionsLog = `[2026-12-01 09:59:59,000] DEBUG [QuorumController id=1] partition change for orders-0 with topic ID abc: leader: 2 -> 1, leaderEpoch: 3 -> 4 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,500] DEBUG [QuorumController id=3] partition change for orders-0 with topic ID abc: isr: [2, 1, 3] -> [1, 3], leader: 2 -> 1, leaderEpoch: 4 -> 5, partitionEpoch: 7 -> 8 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,400] DEBUG [QuorumController id=1] partition change for orders-0 with topic ID abc: isr: [2, 1, 3] -> [1, 3], leader: 2 -> 1, leaderEpoch: 4 -> 5, partitionEpoch: 7 -> 8 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,410] INFO [QuorumController id=1] UNCLEAN partition change for orders-1 with topic ID abc: isr: [2] -> [3], leader: 2 -> 3, leaderEpoch: 1 -> 2 (org.apache.kafka.controller.PartitionChangeBuilder)
[2026-12-01 10:00:09,420] DEBUG [QuorumController id=1] partition change for orders-4 with topic ID abc: isr: [1, 2, 3] -> [1, 3], partitionEpoch: 2 -> 3 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,430] DEBUG [QuorumController id=1] partition change for orders-5 with topic ID abc: isr: [3, 1] -> [1], leader: 3 -> 1 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:09,440] DEBUG [QuorumController id=1] partition change for other-0 with topic ID def: isr: [2, 1] -> [1], leader: 2 -> 1 (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-01 10:00:20,000] DEBUG [QuorumController id=1] partition change for orders-0 with topic ID abc: isr: [1, 3] -> [1, 3, 2], partitionEpoch: 8 -> 9 (org.apache.kafka.controller.ReplicationControlManager)
`

func TestReadElections(t *testing.T) {
	e, err := ReadElections([]NodeLog{{1, strings.NewReader(electionsLog)}}, "orders", 2, at(t, "2026-12-01 10:00:00,000"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]Election{
		0: {At: at(t, "2026-12-01 10:00:09,400"), NewLeader: 1},
		1: {At: at(t, "2026-12-01 10:00:09,410"), NewLeader: 3, Unclean: true},
	}
	if fmt.Sprint(e.Moved) != fmt.Sprint(want) {
		t.Errorf("moved %v, want %v", e.Moved, want)
	}
	wantShrunk := map[int32]time.Time{0: at(t, "2026-12-01 10:00:09,400"), 1: at(t, "2026-12-01 10:00:09,410"), 4: at(t, "2026-12-01 10:00:09,420")}
	if fmt.Sprint(e.Shrunk) != fmt.Sprint(wantShrunk) {
		t.Errorf("shrunk %v, want %v", e.Shrunk, wantShrunk)
	}
	// Broker 1 lost no leadership after the fault.
	if e, _ := ReadElections([]NodeLog{{1, strings.NewReader(electionsLog)}}, "orders", 1, at(t, "2026-12-01 10:00:00,000"), time.Time{}); len(e.Moved) != 0 {
		t.Errorf("broker 1 moved: %v", e.Moved)
	}
}
