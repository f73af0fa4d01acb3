package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestNetnsConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"through the hub", Config{Brokers: []string{"10.213.0.1:9092"}, NetNS: "ackc-0123456789"}, ""},
		{"loopback, no netns", Config{Brokers: []string{"127.0.0.1:9092"}}, ""},
		// Dialled from the machine's own namespace, the Net's address
		// would follow the default route out of the machine.
		{"net address without netns", Config{Brokers: []string{"127.0.0.1:9092", "10.213.0.2:9092"}}, "--cluster-dir, or --netns"},
		{"bad prefix", Config{Brokers: []string{"10.213.0.1:9092"}, NetNS: "../x"}, "--netns"},
		{"netns and tls", Config{Brokers: []string{"10.213.0.1:9092"}, NetNS: "ackc-1", TLS: true}, "--tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// writeClusterJSON records a cluster in a new directory as create would.
func writeClusterJSON(t *testing.T, cf clusterFile) string {
	t.Helper()
	dir := t.TempDir()
	data, _ := json.Marshal(cf)
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenClusterNetns(t *testing.T) {
	// A new directory with --netns: named after the directory.
	dir := filepath.Join(t.TempDir(), "k")
	k, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir, NetNS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if n := k.Net(); n == nil || n.Prefix != cluster.NetnsPrefix(dir) || len(n.Nodes) != 3 {
		t.Fatalf("Net() = %+v, want prefix %s and 3 nodes", n, cluster.NetnsPrefix(dir))
	}
	if got := strings.Join(k.Brokers(), ","); got != "10.213.0.1:9092,10.213.0.2:9092,10.213.0.3:9092" {
		t.Errorf("brokers %s, want each node's own address in the Net", got)
	}
	if k.ProbePort() != 9092 {
		t.Errorf("ProbePort %d, want the inter-broker listener's 9092", k.ProbePort())
	}
	if p := k.serverProps(2); p["controller.quorum.voters"] != "1@10.213.0.1:9093,2@10.213.0.2:9093,3@10.213.0.3:9093" ||
		p["advertised.listeners"] != "PLAINTEXT://10.213.0.2:9092" || p["listeners"] != "PLAINTEXT://10.213.0.2:9092,CONTROLLER://10.213.0.2:9093" {
		t.Errorf("node 2's listeners and quorum are not on the Net's addresses: %v", p)
	}
	flags := fmt.Sprint(k.ClientFlags())
	if !strings.Contains(flags, "{netns "+k.Net().Prefix+"}") {
		t.Errorf("ClientFlags %s: want the driver's --netns", flags)
	}

	// Recorded in cluster.json: reopened in the Net without the flag, as
	// `down`, `heal` and --cluster-dir open it.
	rec := writeClusterJSON(t, clusterFile{Record: cluster.Record{Kind: kafkaKind, NetNS: "ackc-abc"}, ClusterOptions: &ClusterOptions{Nodes: 3, BasePort: 29091}})
	k, err = OpenCluster(ClusterOptions{Options: cluster.Options{Dir: rec}})
	if err != nil {
		t.Fatal(err)
	}
	if n := k.Net(); n == nil || n.Prefix != "ackc-abc" {
		t.Fatalf("reopened Net() = %+v, want the recorded ackc-abc", n)
	}

	// Without --netns: nil, loopback, no driver flag.
	plain := writeClusterJSON(t, clusterFile{Record: cluster.Record{Kind: kafkaKind}, ClusterOptions: &ClusterOptions{Nodes: 3, BasePort: 29091}})
	k, err = OpenCluster(ClusterOptions{Options: cluster.Options{Dir: plain}})
	if err != nil {
		t.Fatal(err)
	}
	if k.Net() != nil || k.ProbePort() != 0 || strings.Contains(fmt.Sprint(k.ClientFlags()), "netns") || k.Brokers()[0] != "127.0.0.1:29091" {
		t.Errorf("a cluster without --netns: Net %v, ProbePort %d, flags %v, brokers %v", k.Net(), k.ProbePort(), k.ClientFlags(), k.Brokers())
	}
	// --netns on it is refused: its nodes already run in this namespace.
	if _, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: plain, NetNS: true}}); err == nil || !strings.Contains(err.Error(), "without --netns") {
		t.Errorf("--netns on a cluster created without: %v", err)
	}
}

// The driver reaches a broker that listens only inside a node's
// namespace through the hub (kfake, listening in node 1 of a Net of this
// test's own), and does not without the Net's hub.
func TestDriverDialsThroughNet(t *testing.T) {
	need.NetnsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := netns.Create(ctx, fmt.Sprintf("acktk%d", os.Getpid()%100000), []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete(context.Background()) })
	addr := net.JoinHostPort(n.NodeAddr(1).String(), "39092")
	c := newKfake(t, kfake.NumBrokers(1), kfake.Ports(39092), kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return n.Listen(1, network, addr)
	}))
	if got := c.ListenAddrs(); len(got) != 1 || got[0] != addr {
		t.Fatalf("kfake listens on %v, want %s inside the Net", got, addr)
	}
	for _, tc := range []struct {
		name   string
		prefix string
		wantOK bool
	}{
		{"through the hub", n.Prefix, true},
		// A Net that does not exist: every dial fails, nothing is sent
		// from the machine's own namespace.
		{"no such net", n.Prefix + "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Config{Brokers: []string{addr}, NetNS: tc.prefix, DeliveryTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err = d.EnsureTopic(cctx, drivers.TopicSpec{Name: "through-hub", Partitions: 1, ReplicationFactor: 1})
			if tc.wantOK && err != nil {
				t.Fatalf("create a topic through the hub: %v", err)
			}
			if !tc.wantOK && err == nil {
				t.Fatal("created a topic without reaching the Net's hub")
			}
		})
	}
}
