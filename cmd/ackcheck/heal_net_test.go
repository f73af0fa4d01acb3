package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/remote/sshdtest"
	"github.com/ackcheck/ackcheck/runner"
)

// `ackcheck heal` on a run directory whose journal holds a network rule
// still in force (the run's ackcheck died mid-partition) removes it
// without the cluster's broker, says the probe after shows every path
// answering, and a second heal has nothing to do. The crash itself is
// faults.TestHealAfterCrashMidPartition's; here the journal is written
// as the run writes it, before the rule.
func TestHealCommandRemovesNetworkRule(t *testing.T) {
	need.NetnsTools(t)
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

// `ackcheck heal --out DIR --cluster-file F` on a run whose journal holds
// a rule on SSH nodes (the run died mid-partition) reconnects to the
// nodes over SSH, removes the rule there and probes: the real binary, in
// the hub namespace (where ackcheck's client side is), against the
// project's sshd on three node namespaces. The rule is installed by the
// test itself (an nft chain as a run names it), so the heal finds
// nothing it made itself.
func TestHealCommandOverSSHRemovesNetworkRule(t *testing.T) {
	need.NetnsTools(t)
	need.SSHDTools(t)
	ctx := context.Background()
	bin := binary(t)
	n, err := netns.Create(ctx, fmt.Sprintf("akfs%d", os.Getpid()%100000), []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(context.Background()) }) //nolint:errcheck // best effort; a failure shows in ip netns list
	const sshPort, brokerPort = 2222, 19092
	var specs []faults.NodeSpec
	var yml, known strings.Builder
	fmt.Fprintf(&yml, "broker: kafka\nbrokers: [%s:%d]\nknown_hosts: %s\nnodes:\n", n.NodeAddr(1), brokerPort, filepath.Join(t.TempDir(), "known_hosts"))
	for _, id := range n.Nodes {
		addr := n.NodeAddr(id).String()
		srv := sshdtest.StartWith(t, sshdtest.Options{Netns: n.NodeNS(id), Addr: addr, Port: sshPort,
			Dial: func(network, a string) (net.Conn, error) { return n.Dial(ctx, network, a) }})
		hosts, err := os.ReadFile(srv.KnownHosts)
		if err != nil {
			t.Fatal(err)
		}
		known.Write(hosts)
		l, err := n.Listen(id, "tcp", net.JoinHostPort(addr, fmt.Sprint(brokerPort)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		fmt.Fprintf(&yml, "  - {id: %d, host: %s, port: %d, user: %s, key_file: %s, pgrep: sshd, start: \"true\", ports: [%d]}\n",
			id, addr, sshPort, srv.User, srv.KeyFile, brokerPort)
		specs = append(specs, faults.NodeSpec{ID: id, Host: addr})
	}
	clusterFile := filepath.Join(t.TempDir(), "cluster.yaml")
	knownFile := strings.Split(strings.Split(yml.String(), "known_hosts: ")[1], "\n")[0]
	if err := os.WriteFile(knownFile, []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clusterFile, []byte(yml.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// The run's directory: its settings name no cluster file (it moved),
	// its journal the rule, added before the rule as a run adds it.
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "run.json"), []byte(`{"driver":"kafka"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := faults.OpenJournal(runner.JournalPath(out))
	if err != nil {
		t.Fatal(err)
	}
	rule := netns.Rule{Name: "h2", Kind: netns.Cut, Node: 2}
	if _, err := j.Add(faults.Undo{Kind: faults.UndoNetRule, Net: faults.SSHNetworkName(specs), Port: brokerPort, Rule: &rule, Why: "partition node:2"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	script := fmt.Sprintf("add table inet ackcheck\n"+
		"add chain inet ackcheck h2_out { type filter hook output priority 0; policy accept; }\n"+
		"add rule inet ackcheck h2_out ip daddr { %[1]s, %[2]s } tcp sport %[3]d drop\n"+
		"add rule inet ackcheck h2_out ip daddr { %[1]s, %[2]s } tcp dport %[3]d drop\n"+
		"add chain inet ackcheck h2_in { type filter hook input priority 0; policy accept; }\n"+
		"add rule inet ackcheck h2_in ip saddr { %[1]s, %[2]s } tcp dport %[3]d drop\n",
		n.NodeAddr(1), n.NodeAddr(3), brokerPort)
	nft := exec.Command("ip", "netns", "exec", n.NodeNS(2), "nft", "-f", "-")
	nft.Stdin = strings.NewReader(script)
	if b, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("install the rule: %v\n%s", err, b)
	}
	if reach, err := n.Probe(ctx, brokerPort, time.Second); err != nil || len(reach.Cut()) != 4 {
		t.Fatalf("before the heal: %v, %v; want node 2 cut off from its peers (4 paths)", reach, err)
	}

	heal := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Hub(), bin, "heal", "--out", out}, args...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// Without the cluster file, the heal cannot reach the nodes and says
	// what to give it; the rule stays journaled.
	said, err := heal()
	t.Logf("heal without --cluster-file:\n%s", said)
	if err == nil || !strings.Contains(said, "cluster") {
		t.Errorf("a heal that cannot reach the SSH nodes: %v, %q; want an error naming the cluster file", err, said)
	}
	said, err = heal("--cluster-file", clusterFile)
	t.Logf("heal:\n%s", said)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"healed: remove the rule h2", "all 9 paths answer"} {
		if !strings.Contains(said, want) {
			t.Errorf("heal did not say %q", want)
		}
	}
	if reach, err := n.Probe(ctx, brokerPort, time.Second); err != nil || len(reach.Cut()) != 0 {
		t.Errorf("after the heal: %v, %v", reach, err)
	}
	if b, err := exec.Command("ip", "netns", "exec", n.NodeNS(2), "nft", "list", "tables").CombinedOutput(); err != nil || strings.Contains(string(b), "ackcheck") {
		t.Errorf("node 2's tables after the heal: %q %v", b, err)
	}
	if again, err := heal("--cluster-file", clusterFile); err != nil || !strings.Contains(again, "nothing to heal") {
		t.Errorf("second heal: %q, %v", again, err)
	}
}
