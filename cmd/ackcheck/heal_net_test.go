package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/runner"
)

// `ackcheck heal` on a run directory whose journal holds a network rule
// still in force (the run's ackcheck died mid-partition) removes it
// without the cluster's broker, says the probe after shows every path
// answering, and a second heal has nothing to do. The crash itself is
// faults.TestHealAfterCrashMidPartition's; here the journal is written
// as the run writes it, before the rule.
func TestHealCommandRemovesNetworkRule(t *testing.T) {
	why := ""
	if os.Geteuid() != 0 {
		why = "network namespaces need root"
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = tool + " is not installed"
		}
	}
	if why != "" {
		if os.Getenv("ACKCHECK_REQUIRE_NETNS") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	ctx := context.Background()
	n, err := netns.Create(ctx, fmt.Sprintf("akfh%d", os.Getpid()%100000), []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(context.Background()) }) //nolint:errcheck // best effort; a failure shows in ip netns list
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "run.json"), []byte(`{"driver":"kafka"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := faults.OpenJournal(runner.JournalPath(out))
	if err != nil {
		t.Fatal(err)
	}
	rule := netns.Rule{Name: "h1", Kind: netns.Cut, Node: 2, Client: true}
	if _, err := j.Add(faults.Undo{Kind: faults.UndoNetRule, Net: n.Prefix, Port: 9092, Rule: &rule, Why: "partition-client node:2"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := n.Apply(ctx, rule); err != nil {
		t.Fatal(err)
	}
	if reach, err := n.Probe(ctx, 9092, time.Second); err != nil || len(reach.Cut()) != 5 {
		t.Fatalf("before the heal: %v, %v; want node 2 cut off (5 paths)", reach, err)
	}
	heal := func() (string, error) {
		cmd := newHealCmd()
		var buf bytes.Buffer
		cmd.SetOut(&buf)
		cmd.SetErr(&buf)
		cmd.SetArgs([]string{"--out", out})
		err := cmd.ExecuteContext(ctx)
		return buf.String(), err
	}
	said, err := heal()
	t.Logf("heal:\n%s", said)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"healed: remove the rule h1 (node 2 cut off from every peer and from the clients) from network " + n.Prefix,
		"healed: network probed after the heal: all 9 paths answer"} {
		if !strings.Contains(said, want) {
			t.Errorf("heal did not say %q", want)
		}
	}
	if reach, err := n.Probe(ctx, 9092, time.Second); err != nil || len(reach.Cut()) != 0 {
		t.Errorf("after the heal: %v, %v", reach, err)
	}
	if again, err := heal(); err != nil || !strings.Contains(again, "nothing to heal") {
		t.Errorf("second heal: %q, %v", again, err)
	}
}
