package kafka

import (
	"strings"
	"testing"
	"time"
)

// Lines as the 3-node cluster logged them after a SIGKILL of node 3, the
// coordinator of group g1 (kill at 12:47:09.810).
const (
	groupLogController = `[2026-12-04 12:47:08,931] DEBUG [QuorumController id=2] No stale brokers found. (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-04 12:47:19,057] INFO [QuorumController id=2] Fencing broker 3 at epoch 11 because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)
[2026-12-04 12:47:19,556] INFO [GroupCoordinator id=2 topic=__consumer_offsets partition=21] Loaded classic group g1 with 3 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)
[2026-12-04 12:47:19,670] INFO [GroupCoordinator id=2 topic=__consumer_offsets partition=21] Stabilized group g1 generation 3 with 3 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)
`
	groupLogOther = `[2026-12-04 12:47:05,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=21] Loaded classic group g1 with 0 members. (x)
[2026-12-04 12:47:19,600] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] Loaded classic group g10 with 3 members. (x)
`
)

func TestReadGroupAccount(t *testing.T) {
	kill := time.Date(2026, 12, 4, 12, 47, 9, 810_000_000, time.Local)
	logs := func() []NodeLog {
		return []NodeLog{{Node: 1, Log: strings.NewReader(groupLogOther)}, {Node: 2, Log: strings.NewReader(groupLogController)}}
	}
	a, err := ReadGroupAccount(logs(), "g1", 3, kill, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// The line before the kill and group g10's are not g1's failover.
	if a.LoadedBy != 2 || a.Loaded.Sub(kill) != 9746*time.Millisecond || a.Fenced.Sub(kill) != 9247*time.Millisecond || a.Stabilized.Sub(kill) != 9860*time.Millisecond {
		t.Fatalf("account %+v", a)
	}
	for _, tc := range []struct {
		name    string
		a       GroupAccount
		untilMs float64
		want    bool
	}{
		{"progress after the load", a, 10035, true},
		{"progress before the coordinator loaded the group", a, 2000, false},
		{"no load line", GroupAccount{LoadedBy: -1}, 10035, false},
	} {
		ok, msg := tc.a.Explains(kill, tc.untilMs)
		if ok != tc.want || msg == "" {
			t.Errorf("%s: explains %v (%s), want %v", tc.name, ok, msg, tc.want)
		}
	}
	none, err := ReadGroupAccount(logs(), "g2", 3, kill, time.Time{})
	if err != nil || !none.Loaded.IsZero() || none.LoadedBy != -1 {
		t.Fatalf("a group no log names: %+v %v", none, err)
	}
}
