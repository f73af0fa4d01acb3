package nats_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// TestRealNATSBrokerFsyncRollingRestart drives the real local NATS cluster
// (ACKCHECK_NATS_DIR) through a cluster file of local commands, as a user
// would drive their own servers: fsync-on brokers edits each node's
// nats.conf to sync_interval: always and restarts the nodes one at a time
// (a reload does not change it), each back in sync before the next; the
// ack meaning read from /varz must follow, and every nats.conf must be
// restored byte for byte at the end.
func TestRealNATSBrokerFsyncRollingRestart(t *testing.T) {
	n := plainNATS.Get(t)
	bin := ackcheck.Path(t)
	var b strings.Builder
	fmt.Fprintf(&b, "broker: nats\nbrokers: [%s]\nnodes:\n", strings.Join(n.Servers(), ", "))
	var before []string
	for _, id := range n.Nodes() {
		nd := filepath.Join(n.Dir(), fmt.Sprintf("node%d", id))
		fmt.Fprintf(&b, "  - id: %d\n    host: local\n    pid_file: %s/pid\n    start: %s cluster nats start --dir %s --node %d\n    data_dir: %s/data\n    config_file: %s/nats.conf\n",
			id, nd, bin, n.Dir(), id, nd, nd)
		conf, err := os.ReadFile(filepath.Join(nd, "nats.conf"))
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, string(conf))
	}
	cf := filepath.Join(t.TempDir(), "nats-cluster.yaml")
	if err := os.WriteFile(cf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	topic := "nats-roll-" + time.Now().Format("150405")
	out := filepath.Join(t.TempDir(), "run")
	output, err := exec.Command(bin, "run", "--driver", "nats", "--cluster-file", cf, "--monitor-urls", strings.Join(n.MonitorURLs(), ","),
		"--topic", topic, "--partitions", "3", "--rate", "200", "--duration", "45s", "--progress-interval", "10s", "--out", out,
		"--fault", "at=1s fsync-on brokers").CombinedOutput()
	t.Logf("%s", output)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := scenariotest.ReadResult(t, out)
	if res.Lost != 0 || res.Verdict != "pass" || len(res.Faults) == 0 || res.Faults[0].Result != "applied" {
		t.Fatalf("lost %d verdict %s faults %+v", res.Lost, res.Verdict, res.Faults)
	}
	if len(res.AckMeanings) == 0 || !strings.Contains(res.AckMeanings[0].Meaning, "sync_interval=2m0s") {
		t.Fatalf("before the toggle an ack meant: %+v", res.AckMeanings)
	}
	if !strings.Contains(res.Faults[0].AckMeaning, "fsynced it (node 1: sync_interval=always, node 2: sync_interval=always, node 3: sync_interval=always)") {
		t.Fatalf("after fsync-on brokers an ack meant: %s", res.Faults[0].AckMeaning)
	}
	for i, id := range n.Nodes() {
		conf, _ := os.ReadFile(filepath.Join(n.Dir(), fmt.Sprintf("node%d/nats.conf", id)))
		if string(conf) != before[i] {
			t.Fatalf("node %d's nats.conf not restored:\n%s", id, conf)
		}
	}
	if !strings.Contains(string(output), "heal: restore node") {
		t.Fatal("the restore was not reported")
	}
	if err := n.WaitReady(t.Context(), time.Minute); err != nil {
		t.Fatalf("cluster not healthy after the test: %v", err)
	}
}
