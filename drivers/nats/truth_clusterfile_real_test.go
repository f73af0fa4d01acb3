package nats_test

import (
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/internal/mdcheck"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// TestRealNATSOracleThroughClusterFile runs ackcheck as a user would on
// their own servers: the real local NATS cluster (ACKCHECK_NATS_DIR)
// through a cluster file whose nodes name their logs (log: PATH), with a
// kill and a restart. After the load the nodes' logs are fetched through
// the nodes' runners and read by NATS's oracle: result.json, the summary,
// report.md and the HTML page each show the figures beside the log's
// bounds, and report.md's tables still parse.
func TestRealNATSOracleThroughClusterFile(t *testing.T) {
	n := plainNATS.Get(t)
	bin := ackcheck.Path(t)
	var b strings.Builder
	fmt.Fprintf(&b, "broker: nats\nbrokers: [%s]\nnodes:\n", strings.Join(n.Servers(), ", "))
	for _, id := range n.Nodes() {
		nd := filepath.Join(n.Dir(), fmt.Sprintf("node%d", id))
		fmt.Fprintf(&b, "  - id: %d\n    host: local\n    pid_file: %s/pid\n    start: %s cluster nats start --dir %s --node %d\n    data_dir: %s/data\n    log: %s\n",
			id, nd, bin, n.Dir(), id, nd, n.LogFile(id))
	}
	cf := filepath.Join(t.TempDir(), "nats-cluster.yaml")
	if err := os.WriteFile(cf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	output, err := exec.Command(bin, "run", "--driver", "nats", "--cluster-file", cf, "--monitor-urls", strings.Join(n.MonitorURLs(), ","),
		"--topic", fmt.Sprintf("nats-oracle-%d", os.Getpid()), "--partitions", "3", "--rate", "300", "--duration", "30s", "--progress-interval", "10s", "--out", out,
		"--fault", "at=8s kill node:2; at=14s restart").CombinedOutput()
	t.Logf("%s", output)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := scenariotest.ReadResult(t, out)
	if res.Verdict != "pass" || len(res.Faults) == 0 {
		t.Fatalf("verdict %s, faults %+v", res.Verdict, res.Faults)
	}
	f := res.Faults[0]
	if f.Oracle == nil || f.Oracle.Ready == nil || f.Oracle.InSync == nil || f.OracleReadyMs == nil ||
		f.Oracle.Ready.Bound != drivers.NotBefore || !strings.Contains(f.Oracle.Source, "read from local commands") {
		t.Fatalf("result.json's oracle of the kill: %+v", f.Oracle)
	}
	// The bound is the restarted server's own: after the restart 6 s
	// after the kill, before ackcheck saw it ready (500 ms tolerance).
	if *f.OracleReadyMs < 5000 || *f.OracleReadyMs > f.ReadyMs+500 {
		t.Errorf("ready %.0f ms, the log's bound %.0f ms (%s)", f.ReadyMs, *f.OracleReadyMs, f.Oracle.Ready.What)
	}
	want := fmt.Sprintf("(%s: no earlier than %s at %.0f ms)", f.Oracle.Source, f.Oracle.Ready.What, *f.OracleReadyMs)
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"the summary": string(output), "report.md": strings.ReplaceAll(string(md), `\|`, "|"),
		"report.html": html.UnescapeString(string(page))} {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}
	for _, err := range mdcheck.Tables(md) {
		t.Errorf("report.md: %v", err)
	}
	t.Logf("kill node 2: ready %.0f ms %s; in sync %.0f ms%s; warnings %q", f.ReadyMs, f.OracleText(true), f.InSyncMs, f.OracleText(false), res.Warnings)
}
