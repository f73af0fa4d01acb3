package queen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
)

// An address inside the namespaces' subnet is refused without --netns (it
// would leave the machine), and --netns must be a prefix ackcheck makes.
func TestNetnsAddressNeedsTheHub(t *testing.T) {
	for _, tc := range []struct {
		name, url, pg, netns string
		err                  string // "" when valid
	}{
		{"loopback", "http://127.0.0.1:26632", "postgres://postgres@127.0.0.1:26634/queen", "", ""},
		{"server in the subnet", "http://10.213.0.1:26632", "postgres://postgres@127.0.0.1:26634/queen", "", "only their hub reaches"},
		{"database in the subnet", "http://127.0.0.1:26632", "postgres://postgres@10.213.0.1:26634/queen", "", "only their hub reaches"},
		{"both, through the hub", "http://10.213.0.1:26632", "postgres://postgres@10.213.0.1:26634/queen", "ackc-0123456789", ""},
		{"a prefix ackcheck never makes", "http://10.213.0.1:26632", "postgres://postgres@10.213.0.1:26634/queen", "../etc", "not a network namespace prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{URL: tc.url, PostgresURL: tc.pg, NetNS: tc.netns}.WithDefaults().Validate()
			if tc.err == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want an error saying %q", err, tc.err)
			}
		})
	}
}

// With --netns every connection of the driver, HTTP and PostgreSQL, is
// made from the Net's hub: with a prefix whose namespaces do not exist,
// both fail on entering the hub's namespace, never by dialling from the
// machine's own namespace.
func TestDriverDialsThroughTheHub(t *testing.T) {
	const prefix = "akq-nonexistent"
	d, err := New(Config{URL: "http://10.213.0.1:26632", PostgresURL: "postgres://postgres@10.213.0.1:26634/queen", NetNS: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	want := "network namespace " + prefix + "-hub"
	if _, err := d.health(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("HTTP: %v, want a failure naming %q", err, want)
	}
	if err := d.db.Ping(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PostgreSQL: %v, want a failure naming %q", err, want)
	}
}

// A cluster created with --netns records its prefix, and everything
// ackcheck dials is then at 10.213.0.1 through the hub: the driver's
// flags, the proof's port, PostgreSQL's listen addresses. One opened
// again without --netns keeps it; one created without refuses it.
func TestNetnsClusterAddresses(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir, NetNS: true}, Home: dir})
	if err != nil {
		t.Fatal(err)
	}
	prefix := cluster.NetnsPrefix(dir)
	if n := q.Net(); n == nil || n.Prefix != prefix || len(n.Nodes) != 1 || n.Nodes[0] != ServerNode {
		t.Fatalf("Net %+v, want prefix %s with node 1 only", n, prefix)
	}
	if q.URL() != "http://10.213.0.1:26632" || q.PostgresURL() != "postgres://postgres@10.213.0.1:26634/queen?sslmode=disable" || q.ProbePort() != 26632 {
		t.Errorf("URL %s, PostgreSQL %s, probe port %d", q.URL(), q.PostgresURL(), q.ProbePort())
	}
	flags := map[string]string{}
	for _, f := range q.ClientFlags() {
		flags[f.Name] = f.Value
	}
	if flags["netns"] != prefix || flags["queen-url"] != q.URL() {
		t.Errorf("client flags %v", flags)
	}
	if err := os.MkdirAll(q.DataDir(DBNode), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := q.writeSettings(); err != nil {
		t.Fatal(err)
	}
	conf, _ := os.ReadFile(q.pgConf())
	if !strings.Contains(string(conf), "listen_addresses = '127.0.0.1,10.213.0.1'") {
		t.Errorf("ackcheck.conf:\n%s", conf)
	}
	again, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil || again.Net() == nil || again.Net().Prefix != prefix {
		t.Errorf("opened again: %v, %+v", err, again)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	p, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: plain}, Home: plain})
	if err != nil {
		t.Fatal(err)
	}
	if p.Net() != nil || p.ProbePort() != 0 || p.URL() != "http://127.0.0.1:26632" {
		t.Errorf("without --netns: Net %+v, probe port %d, URL %s", p.Net(), p.ProbePort(), p.URL())
	}
	os.MkdirAll(p.DataDir(DBNode), 0o755)
	if err := p.writeSettings(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: plain, NetNS: true}}); err == nil || !strings.Contains(err.Error(), "created without --netns") {
		t.Errorf("a cluster created without --netns opened with it: %v", err)
	}
}
