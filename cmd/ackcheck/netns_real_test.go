package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/netns"
)

// envKafkaNetns names a running local Kafka started with `cluster kafka
// up --netns` (.ci/run starts one); its tests skip without it.
const envKafkaNetns = "ACKCHECK_KAFKA_NETNS_DIR"

func kafkaNetnsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envKafkaNetns)
	if dir == "" {
		t.Skipf("%s is not set (.ci/run starts a Kafka in network namespaces: ackcheck cluster kafka up --netns --dir D)", envKafkaNetns)
	}
	return dir
}

// netHeld lists what of the subnet 10.213.0.0/24 (netns.DefaultSubnet)
// the machine's own namespace holds: addresses and routes, but for the
// guard route that refuses the subnet (prohibit ... proto 213). It must
// hold nothing else: the nodes are reached only from the Net's hub.
func netHeld(t *testing.T) []string { return netHeldIn(t, "10.213.0.") }

// netHeldIn is netHeld for the addresses starting with start.
func netHeldIn(t *testing.T, start string) []string {
	t.Helper()
	var held []string
	for _, args := range [][]string{{"-o", "addr"}, {"route", "show", "table", "all"}} {
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			t.Fatalf("ip %v: %v", args, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			guard := strings.HasPrefix(line, "prohibit ") && strings.Contains(line, "proto 213")
			if strings.Contains(line, start) && !guard {
				held = append(held, line)
			}
		}
	}
	return held
}

// guardRoute is `ip route get addr` in the machine's own namespace (it
// sends nothing): whether the guard route refuses a packet for addr.
func guardRoute(t *testing.T, addr string) (refused bool, said string) {
	t.Helper()
	out, err := exec.Command("ip", "route", "get", addr).CombinedOutput()
	said = strings.TrimSpace(string(out))
	return err != nil && strings.Contains(said, "Permission denied"), said
}

// An ordinary leader kill (load, kill of the node leading most
// partitions, restart, read-back) on the 3-node Kafka in network
// namespaces: every call of ackcheck's reaches the nodes through the hub,
// and the verdict is PASS with nothing lost.
func TestRealNetnsKafkaLeaderKill(t *testing.T) {
	dir := kafkaNetnsDir(t)
	if held := netHeld(t); len(held) > 0 {
		t.Fatalf("the machine's own namespace holds addresses of the Net: %v", held)
	}
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "run")
	output, err := exec.Command(bin, "leader-kill", "--cluster-dir", dir, "--topic", "netns-lk-"+time.Now().Format("150405"),
		"--partitions", "6", "--rate", "300", "--duration", "30s", "--kill-at", "8s", "--restart-after", "10s",
		"--progress-interval", "10s", "--out", out).CombinedOutput()
	t.Logf("%s", output)
	if err != nil {
		t.Fatalf("leader-kill: %v", err)
	}
	res := readResult(t, out)
	if res.Verdict != "pass" || res.Lost != 0 || res.Acked < 5000 {
		t.Fatalf("verdict %s, lost %d of %d acked: want PASS with nothing lost", res.Verdict, res.Lost, res.Acked)
	}
	if len(res.Faults) == 0 || res.Faults[0].Result != "applied" {
		t.Fatalf("the kill did not apply: %+v", res.Faults)
	}
	// The driver's settings, as run.json records them: the Net's
	// addresses, dialled from its hub.
	runJSON, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"netns": "` + cluster.NetnsPrefix(dir) + `"`; !strings.Contains(string(runJSON), want) || !strings.Contains(string(runJSON), "10.213.0.1:9092") {
		t.Errorf("run.json does not record the brokers at 10.213.0.N dialled through %s:\n%s", want, runJSON)
	}
}

// envNATSNetns names a running local NATS cluster started with `cluster
// nats up --netns` (.ci/run starts one).
const envNATSNetns = "ACKCHECK_NATS_NETNS_DIR"

// The same leader kill on NATS in network namespaces: client connections
// and the monitoring requests (what an ack meant, health) through the hub.
func TestRealNetnsNATSLeaderKill(t *testing.T) {
	dir := os.Getenv(envNATSNetns)
	if dir == "" {
		t.Skipf("%s is not set (.ci/run starts NATS in network namespaces: ackcheck cluster nats up --netns --dir D)", envNATSNetns)
	}
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "run")
	output, err := exec.Command(bin, "leader-kill", "--cluster-dir", dir, "--topic", "netns-lk-"+time.Now().Format("150405"),
		"--partitions", "3", "--rate", "200", "--duration", "25s", "--kill-at", "6s", "--restart-after", "8s",
		"--progress-interval", "10s", "--out", out).CombinedOutput()
	t.Logf("%s", output)
	if err != nil {
		t.Fatalf("leader-kill: %v", err)
	}
	res := readResult(t, out)
	if res.Verdict != "pass" || res.Lost != 0 || res.Acked < 3000 || len(res.Faults) == 0 || res.Faults[0].Result != "applied" {
		t.Fatalf("verdict %s, lost %d of %d acked, faults %+v: want PASS with nothing lost and the kill applied", res.Verdict, res.Lost, res.Acked, res.Faults)
	}
	// The ack meaning comes from each server's /varz: the monitoring
	// ports were reached through the hub too.
	if !strings.Contains(string(output), "node 3: sync_interval=") {
		t.Errorf("no server's sync_interval read from its monitoring port")
	}
}

// up and down of a cluster of its own in network namespaces, per broker
// (Kafka with one node, to keep it short), in a subnet of its own
// (--netns-subnet): up makes the Net and the guard route that refuses its
// subnet in the machine's own namespace, status says so, and down leaves
// no namespace of its prefix, no guard route, and no link in the machine's
// namespace that was not there before.
func TestRealNetnsUpDown(t *testing.T) {
	for _, tc := range []struct {
		kind, env string
		upArgs    []string
		status    string // node 1's row in status, from its addresses on
		ns        []string
	}{
		{"kafka", envKafkaNetns, []string{"--nodes", "1", "--heap-mb", "256"}, "10.213.230.1:9092  10.213.230.1:9093  true", []string{"hub", "n1"}},
		{"nats", envNATSNetns, []string{"--nodes", "2"}, "nats://10.213.230.1:4222  http://10.213.230.1:8222  true", []string{"hub", "n1", "n2"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if os.Getenv(tc.env) == "" {
				t.Skipf("%s is not set: this machine is not known to run %s in network namespaces", tc.env, tc.kind)
			}
			upDown(t, tc.kind, tc.upArgs, tc.status, tc.ns)
		})
	}
}

func upDown(t *testing.T, kind string, upArgs []string, status string, ns []string) {
	bin := binary(t)
	dir := filepath.Join(t.TempDir(), kind)
	prefix := cluster.NetnsPrefix(dir)
	links := func() []string {
		out, err := exec.Command("ip", "-o", "link").Output()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				names = append(names, f[1])
			}
		}
		slices.Sort(names)
		return names
	}
	ours := func() []string {
		out, err := exec.Command("ip", "netns", "list").Output()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
				names = append(names, f[0])
			}
		}
		slices.Sort(names)
		return names
	}
	before := links()
	t.Cleanup(func() {
		exec.Command(bin, "cluster", kind, "down", "--dir", dir).Run()
		// Whatever down left (it failed, or is broken): this test made them.
		if n, ok, _ := netns.Open(context.Background(), prefix); ok {
			n.Delete(context.Background())
		}
	})
	const subnet, node1 = "10.213.230.0/24", "10.213.230.1"
	if refused, said := guardRoute(t, node1); refused {
		t.Fatalf("before up, the subnet %s is refused already (%s): another cluster of this test left?", subnet, said)
	}
	up := append([]string{"cluster", kind, "up", "--netns", "--netns-subnet", subnet, "--dir", dir}, upArgs...)
	if out, err := exec.Command(bin, up...).CombinedOutput(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "--netns "+prefix) {
		t.Errorf("up's ready line does not give the driver's --netns %s:\n%s", prefix, out)
	}
	var want []string
	for _, n := range ns {
		want = append(want, prefix+"-"+n)
	}
	if got := ours(); !slices.Equal(got, want) {
		t.Fatalf("namespaces after up: %v, want %v", got, want)
	}
	st, err := exec.Command(bin, "cluster", kind, "status", "--dir", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "runs in network namespaces: "+prefix+"-n1") || !strings.Contains(string(st), status) {
		t.Fatalf("status (%v), want a line saying it runs in namespaces and node 1 as %q:\n%s", err, status, st)
	}
	if held := netHeldIn(t, "10.213.230."); len(held) > 0 {
		t.Fatalf("the machine's own namespace holds addresses of the Net: %v", held)
	}
	if refused, said := guardRoute(t, node1); !refused {
		t.Fatalf("after up, ip route get %s from the machine's namespace: %q; want it refused by the guard route", node1, said)
	}
	if out, err := exec.Command(bin, "cluster", kind, "down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if got := ours(); len(got) > 0 {
		t.Errorf("namespaces left after down: %v", got)
	}
	if refused, said := guardRoute(t, node1); refused {
		t.Errorf("after down, the guard route of %s is still there (%s)", subnet, said)
	}
	if after := links(); !slices.Equal(before, after) {
		t.Errorf("links of the machine's namespace before up %v, after down %v", before, after)
	}
}
