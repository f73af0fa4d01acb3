package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
)

// kafkaLogs writes a local cluster's node logs: node -> lines.
func kafkaLogs(t *testing.T, logs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for node, text := range logs {
		os.MkdirAll(filepath.Join(dir, node), 0o755)
		if err := os.WriteFile(filepath.Join(dir, node, "kafka.log"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKafkaLogInSync(t *testing.T) {
	kill := time.Date(2026, 12, 2, 4, 9, 0, 0, time.Local)
	controller := `[2026-12-02 04:08:50,000] INFO [QuorumController id=2] The request from broker 1 to unfence has been granted because it has caught up (earlier run)
[2026-12-02 04:09:05,000] INFO [QuorumController id=2] Fencing broker 1 at epoch 7 because its session has timed out.
[2026-12-02 04:09:20,500] INFO [QuorumController id=2] The request from broker 1 to unfence has been granted because it has caught up with the offset 3236.
[2026-12-02 04:09:21,000] INFO [QuorumController id=2] Replayed partition change for t-1 with topic ID abc: isr: [2, 3] -> [2, 3, 1] (controller)
`
	leader := `[2026-12-02 04:09:03,000] INFO [Partition t-0 broker=3] ISR updated to 2,3  and version updated to 3 (kafka.cluster.Partition)
[2026-12-02 04:09:22,250] INFO [Partition t-0 broker=3] ISR updated to 1,2,3  and version updated to 4 (kafka.cluster.Partition)
[2026-12-02 04:09:40,000] INFO [Partition other-0 broker=3] ISR updated to 1,2,3  and version updated to 9 (kafka.cluster.Partition)
[2026-12-02 04:09:45,000] INFO [Partition t-0 broker=3] ISR updated to 1,2,3  and version updated to 5 (kafka.cluster.Partition)
`
	// The second t-0 line (04:09:45) is a later run's: only a bound at the
	// run's end keeps it out when the first is missing.
	leaderMissing := strings.Replace(leader, "04:09:22,250] INFO [Partition t-0", "04:09:22,250] INFO [Partition zz-0", 1)
	tests := []struct {
		name   string
		logs   map[string]string
		topic  string
		wantOK bool
		wantMs float64
	}{
		{"unfenced, then the last partition back", map[string]string{"node2": controller, "node3": leader}, "t", true, 22250},
		{"another topic's lines do not count", map[string]string{"node2": controller, "node3": leader}, "u", true, 20500},
		{"no unfencing after the kill", map[string]string{"node3": leader}, "t", false, 0},
		{"no logs", nil, "t", false, 0},
		{"a later run's lines do not count", map[string]string{"node2": controller, "node3": leaderMissing}, "t", true, 21000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			back, ok, err := KafkaLogInSync(kafkaLogs(t, tc.logs), tc.topic, 1, kill, kill.Add(30*time.Second))
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok %v, err %v", ok, err)
			}
			if got := float64(back.Sub(kill)) / float64(time.Millisecond); ok && got != tc.wantMs {
				t.Fatalf("back %.0f ms after the kill, want %.0f", got, tc.wantMs)
			}
		})
	}
}

// The scorecard's log row reads the run's cluster dir from run.json.
func TestScorecardLogRow(t *testing.T) {
	kill := time.Date(2026, 12, 2, 4, 9, 0, 0, time.Local)
	logs := kafkaLogs(t, map[string]string{"node2": "[2026-12-02 04:09:20,500] INFO The request from broker 1 to unfence has been granted because\n"})
	dir := t.TempDir()
	res := killRun(0, 1, 1, 1)
	res.Topic = "t"
	res.Faults[0].Record = faults.Record{Action: faults.Kill, Node: 1, At: kill}
	writeRun(t, filepath.Join(dir, "a/1"), res, 1)
	data, _ := json.Marshal(runner.Settings{Driver: "kafka", Faults: &runner.FaultSource{ClusterDir: logs}})
	os.WriteFile(filepath.Join(dir, "a/1/run.json"), data, 0o644)
	os.Chtimes(filepath.Join(dir, "a/1/result.json"), kill.Add(time.Minute), kill.Add(time.Minute)) // the run's end
	writeRun(t, filepath.Join(dir, "b/1"), res, 1)                                                  // no cluster dir in run.json
	tb := Build(dir, "t", []TableSpec{{Title: "x", Columns: []Column{{Label: "a", Runs: []string{filepath.Join(dir, "a/1")}}, {Label: "b", Runs: []string{filepath.Join(dir, "b/1")}}}}}).Tables[0]
	r := rowOf(t, tb, "all replicas in sync, by the brokers' logs")
	if p := r.Cells[0].Runs[0]; p.Value == nil || *p.Value != 20500 {
		t.Fatalf("log figure %+v", p)
	}
	if p := r.Cells[1].Runs[0]; p.Value != nil || p.Text != "no broker logs read (only a local Kafka cluster dir's)" {
		t.Fatalf("without a cluster dir %+v", p)
	}
}
