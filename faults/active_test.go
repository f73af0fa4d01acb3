package faults

import (
	"testing"
	"time"
)

func TestActiveOf(t *testing.T) {
	at := time.Unix(100, 0)
	rec := func(a Action, node int32, target string, res Result) Record {
		return Record{Action: a, Node: node, Target: target, Result: res, At: at}
	}
	ready := rec(PowerLoss, 0, "all", Applied)
	ready.Nodes, ready.ReadyAt = []int32{1, 2, 3}, at.Add(time.Second)
	notReady := rec(PowerLoss, 0, "all", Applied)
	notReady.Nodes = []int32{1, 2, 3}
	tests := []struct {
		name    string
		records []Record
		want    []string // "action target" of each active record
	}{
		{"nothing", nil, nil},
		{"kill then restart", []Record{rec(Kill, 2, "most-leaders:t", Applied), rec(Restart, 2, "previous", Applied)}, nil},
		{"kill not yet restarted", []Record{rec(Kill, 2, "most-leaders:t", Applied)}, []string{"kill most-leaders:t"}},
		{"a skipped kill is not in force", []Record{rec(Kill, 2, "leader:t/0", Skipped)}, nil},
		{"restart of another node", []Record{rec(Kill, 2, "node:2", Applied), rec(Restart, 3, "node:3", Applied)}, []string{"kill node:2"}},
		{"pause then resume, stop left", []Record{rec(Pause, 1, "node:1", Applied), rec(Stop, 3, "node:3", Applied), rec(Resume, 1, "previous", Applied)}, []string{"stop node:3"}},
		{"power loss until its nodes answer", []Record{notReady}, []string{"power-loss all"}},
		{"power loss, nodes back", []Record{ready}, nil},
		// A power loss of one node names it in Node only (Nodes empty).
		{"power loss of one node until it answers", []Record{rec(PowerLoss, 2, "node:2", Applied)}, []string{"power-loss node:2"}},
		{"fsync on then off", []Record{rec(FsyncOn, 0, "topic:t", Applied), rec(FsyncOff, 0, "topic:t", Applied)}, nil},
		{"fsync off left", []Record{rec(FsyncOff, 0, "brokers", Applied)}, []string{"fsync-off brokers"}},
		{"mode on left", []Record{rec("maintenance-on", 0, "cluster", Applied)}, []string{"maintenance-on cluster"}},
		{"mode on then off", []Record{rec("maintenance-on", 0, "cluster", Applied), rec("maintenance-off", 0, "cluster", Applied)}, nil},
		{"death seen", []Record{rec(UnexpectedDeath, 2, "node:2", Observed)}, []string{"unexpected-death node:2"}},
		{"disk errors until disk-ok", []Record{rec(DiskError, 2, "node:2", Applied), rec(DiskError, 3, "node:3", Applied), rec(DiskOK, 2, "node:2", Applied)}, []string{"disk-error node:3"}},
		{"a death on disk errors, until its restart", []Record{rec(DiskError, 2, "node:2", Applied), rec(DiedOnDiskError, 2, "node:2", Observed), rec(DiskOK, 2, "node:2", Applied)}, []string{"died-on-disk-error node:2"}},
		{"partition until heal-network", []Record{rec(Partition, 1, "node:1", Applied), rec(Loss, 2, "node:2", Applied)}, []string{"partition node:1", "loss node:2"}},
		{"heal-network ends every network fault", []Record{rec(Partition, 1, "node:1", Applied), rec(Pause, 3, "node:3", Applied), rec(Bandwidth, 2, "node:2", Applied), rec(HealNetwork, 0, "", Applied)}, []string{"pause node:3"}},
		{"a failed partition is not in force", []Record{rec(Partition, 1, "node:1", Failed)}, nil},
		{"in order applied", []Record{rec(Pause, 3, "node:3", Applied), rec(Kill, 1, "node:1", Applied)}, []string{"pause node:3", "kill node:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range ActiveOf(tc.records) {
				got = append(got, string(r.Action)+" "+r.Target)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("active %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("active %v, want %v", got, tc.want)
				}
			}
		})
	}
}
