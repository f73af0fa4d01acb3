package faults

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// oracleNodes are fake nodes whose brokers' logs say each node was back
// 1 s after the fault, and note the windows they were asked about.
type oracleNodes struct {
	*fakeNodes
	asked [][2]time.Time
	nodes [][]int32
}

func (o *oracleNodes) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	o.asked = append(o.asked, [2]time.Time{since, until})
	o.nodes = append(o.nodes, nodes)
	return drivers.LogAccount{Source: "fake logs", Ready: &drivers.LogEvent{At: since.Add(time.Second), What: "back"}}, nil
}

// ReadOracle asks the logs about every applied fault that took nodes away
// and whose return was seen, over the window up to the next such fault,
// and records their account; other faults get none.
func TestReadOracleWindows(t *testing.T) {
	nodes := &oracleNodes{fakeNodes: newFakeNodes(1, 2, 3)}
	in := &Injector{Nodes: nodes}
	in.init()
	t0 := time.Now()
	end := t0.Add(time.Minute)
	for _, r := range []Record{
		{Action: Kill, Node: 1, At: t0, Result: Applied, ReadyAt: t0.Add(2 * time.Second)},
		{Action: Restart, Node: 1, At: t0.Add(time.Second), Result: Applied},                                     // brings nodes back: no account
		{Action: Kill, Node: 2, At: t0.Add(10 * time.Second), Result: Failed, ReadyAt: t0.Add(11 * time.Second)}, // did not apply
		{Action: PowerLoss, Nodes: []int32{1, 2, 3}, At: t0.Add(20 * time.Second), Result: Applied, InSyncAt: t0.Add(30 * time.Second)},
		{Action: Pause, Node: 3, At: t0.Add(40 * time.Second), Result: Applied}, // its return never seen
	} {
		in.log.add(r)
	}
	in.ReadOracle(context.Background(), "t", end)
	recs := in.Records()
	for i, want := range []bool{true, false, false, true, false} {
		if got := recs[i].Oracle != nil; got != want {
			t.Errorf("record %d (%s): account %v, want %v", i, recs[i].Action, got, want)
		}
	}
	wantWindows := [][2]time.Time{{t0, t0.Add(20 * time.Second)}, {t0.Add(20 * time.Second), t0.Add(40 * time.Second)}}
	if !slices.Equal(nodes.asked, wantWindows) {
		t.Errorf("windows asked %v, want %v", nodes.asked, wantWindows)
	}
	if len(nodes.nodes) != 2 || !slices.Equal(nodes.nodes[0], []int32{1}) || !slices.Equal(nodes.nodes[1], []int32{1, 2, 3}) {
		t.Errorf("nodes asked %v", nodes.nodes)
	}
}
