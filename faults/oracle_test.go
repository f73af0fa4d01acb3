package faults

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/remote"
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

// fetchedLogs is a broker reader that notes the logs it was handed.
type fetchedLogs struct {
	logs   map[int32][]byte
	source string
}

func (f *fetchedLogs) RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	f.logs, f.source = logs, source
	return drivers.LogAccount{Source: "fake (" + source + ")", Ready: &drivers.LogEvent{At: since.Add(time.Second), What: "back"}}, nil
}

// A cluster file's nodes' logs (log: PATH) are fetched through each node's
// runner (here local commands; over SSH in drivers/kafka's
// TestRemoteLogOracle) and handed to the broker's reader whole, or their
// tail with the source saying so; a node without log:, a log that cannot
// be read, or a broker without a reader is an error that says which.
func TestScriptedLogOracle(t *testing.T) {
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b's.log")
	os.WriteFile(logA, []byte("line one\nline two\n"), 0o600)
	os.WriteFile(logB, []byte("0123456789"), 0o600)
	specs := func(logs ...string) []NodeSpec {
		var out []NodeSpec
		for i, l := range logs {
			out = append(out, NodeSpec{ID: int32(i + 1), PIDFile: "/p", Start: "true", Log: l})
		}
		return out
	}
	runners := map[int32]remote.Runner{1: remote.Local{}, 2: remote.Local{}}
	since := time.Now()
	tests := []struct {
		name    string
		logs    []string
		cap     int
		reader  bool
		want    map[int32]string
		source  string
		errWith string
	}{
		{"whole logs", []string{logA, logB}, 0, true, map[int32]string{1: "line one\nline two\n", 2: "0123456789"}, "read from local commands", ""},
		{"a tail, said", []string{logA, logB}, 4, true, map[int32]string{1: "two\n", 2: "6789"}, "node 1: the last 4 of 18 bytes, node 2: the last 4 of 10 bytes", ""},
		{"no log: in the file", []string{logA, ""}, 0, true, nil, "", "node 2 has no log in the cluster file: add `log: PATH`"},
		{"a log that is not there", []string{logA, filepath.Join(dir, "gone.log")}, 0, true, nil, "", "gone.log on localhost"},
		{"a broker whose oracle reads only local logs", []string{logA, logB}, 0, false, nil, "", "reads only a local cluster's logs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScripted(specs(tc.logs...), runners, "local commands")
			s.logCap = tc.cap
			f := &fetchedLogs{}
			if tc.reader {
				s.ReadLogsWith(f)
			}
			acc, err := s.RecoveryAccountContext(context.Background(), "t", []int32{1}, since, time.Time{})
			if tc.errWith != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWith) {
					t.Fatalf("error %v, want one saying %q", err, tc.errWith)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[int32]string{}
			for id, b := range f.logs {
				got[id] = string(b)
			}
			if !maps.Equal(got, tc.want) || !strings.Contains(f.source, tc.source) || acc.Ready == nil {
				t.Errorf("logs %q, source %q, account %+v; want %q and a source saying %q", got, f.source, acc, tc.want, tc.source)
			}
		})
	}
}

// silentNodes are nodes whose logs were read but say nothing of a return.
type silentNodes struct{ *fakeNodes }

func (silentNodes) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return drivers.LogAccount{Source: "fake logs"}, nil
}

// A log oracle that read the logs and found nothing is said in a line,
// never left as an empty account that looks like a cross-check; one that
// found the return prints nothing.
func TestReadOracleSaysSilence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes Nodes
		lines int
	}{
		{"silent logs", silentNodes{newFakeNodes(1, 2, 3)}, 1},
		{"logs with the return", &oracleNodes{fakeNodes: newFakeNodes(1, 2, 3)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			in := &Injector{Nodes: tc.nodes, Logf: func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }}
			in.init()
			t0 := time.Now()
			in.log.add(Record{Action: Kill, Node: 1, At: t0, Result: Applied, ReadyAt: t0.Add(2 * time.Second)})
			in.ReadOracle(context.Background(), "t", t0.Add(time.Minute))
			said := 0
			for _, l := range lines {
				if strings.Contains(l, "do not say when node(s) [1] came back") {
					said++
				}
			}
			if said != tc.lines {
				t.Errorf("lines %q: want %d saying the logs are silent", lines, tc.lines)
			}
		})
	}
}

// groupOracleNodes' logs also say when another node took a group over,
// for the groups in loaded, 3 s after the fault.
type groupOracleNodes struct {
	oracleNodes
	loaded map[string]bool
	asked  []string
}

func (o *groupOracleNodes) GroupRecovery(group string, node int32, since, until time.Time) (*drivers.LogEvent, error) {
	o.asked = append(o.asked, fmt.Sprintf("%s/%d", group, node))
	if !o.loaded[group] {
		return nil, nil
	}
	return &drivers.LogEvent{At: since.Add(3 * time.Second), What: "node 2 loaded group " + group}, nil
}

// A kill aimed at a group's coordinator also gets the logs' account of
// the group's takeover; a kill aimed at a node does not ask for one, and
// logs silent on the group are said in a line.
func TestReadOracleGroupTakeover(t *testing.T) {
	nodes := &groupOracleNodes{oracleNodes: oracleNodes{fakeNodes: newFakeNodes(1, 2, 3)}, loaded: map[string]bool{"g1": true}}
	var lines []string
	in := &Injector{Nodes: nodes, Logf: func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }}
	in.init()
	t0 := time.Now()
	for _, r := range []Record{
		// Never seen back (a restart late in a loaded run): the takeover
		// came while the node was away, and is read all the same.
		{Action: Kill, Target: "coordinator:g1", Node: 1, At: t0, Result: Applied},
		{Action: Kill, Target: "node:2", Node: 2, At: t0.Add(20 * time.Second), Result: Applied, ReadyAt: t0.Add(29 * time.Second)},
		{Action: Kill, Target: "coordinator:g2", Node: 3, At: t0.Add(40 * time.Second), Result: Applied, ReadyAt: t0.Add(49 * time.Second)},
		// A node never seen back, no group: nothing to hold the logs against.
		{Action: Kill, Target: "node:1", Node: 1, At: t0.Add(50 * time.Second), Result: Applied},
	} {
		in.log.add(r)
	}
	in.ReadOracle(context.Background(), "t", t0.Add(time.Minute))
	recs := in.Records()
	if recs[0].Oracle == nil {
		t.Fatal("no account read for the coordinator kill whose node was never seen back")
	}
	if g := recs[0].Oracle.Group; g == nil || !g.At.Equal(t0.Add(3*time.Second)) || g.What != "node 2 loaded group g1" {
		t.Errorf("coordinator kill's group account %+v", g)
	}
	if recs[3].Oracle != nil {
		t.Errorf("the logs read for a kill whose node was never seen back: %+v", recs[3].Oracle)
	}
	if recs[1].Oracle.Group != nil || recs[2].Oracle.Group != nil {
		t.Errorf("group accounts where none was due or said: %+v, %+v", recs[1].Oracle.Group, recs[2].Oracle.Group)
	}
	if !slices.Equal(nodes.asked, []string{"g1/1", "g2/3"}) {
		t.Errorf("groups asked %v", nodes.asked)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "do not say when another node took group g2 over") {
		t.Errorf("lines %q do not say the logs are silent on g2", lines)
	}
}

func TestCoordinatorGroup(t *testing.T) {
	for target, want := range map[string]string{"coordinator:g": "g", "coordinator:a:b": "a:b", "node:1": "", "coordinator": "", "": ""} {
		if got := coordinatorGroup(target); got != want {
			t.Errorf("coordinatorGroup(%q) = %q, want %q", target, got, want)
		}
	}
}
