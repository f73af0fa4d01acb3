package pulsar

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/cluster"
)

func TestNetnsConfigValidate(t *testing.T) {
	const svc, adm, bk = "pulsar://10.213.0.1:26650", "http://10.213.0.1:28080", "http://10.213.0.1:24181"
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"through the hub", Config{ServiceURL: svc, AdminURL: adm, BookieHTTPURL: bk, NetNS: "ackc-0123456789"}, ""},
		{"loopback", Config{ServiceURL: "pulsar://127.0.0.1:26650", AdminURL: "http://127.0.0.1:28080"}, ""},
		{"net service without netns", Config{ServiceURL: svc, AdminURL: "http://127.0.0.1:28080"}, "--cluster-dir, or --netns"},
		{"net admin without netns", Config{ServiceURL: "pulsar://127.0.0.1:26650", AdminURL: adm}, "--cluster-dir, or --netns"},
		{"net bookie without netns", Config{ServiceURL: "pulsar://127.0.0.1:26650", AdminURL: "http://127.0.0.1:28080", BookieHTTPURL: bk}, "--cluster-dir, or --netns"},
		{"bad prefix", Config{ServiceURL: svc, AdminURL: adm, NetNS: "A/b"}, "--netns"},
		{"no port to forward", Config{ServiceURL: "pulsar://10.213.0.1", AdminURL: adm, NetNS: "ackc-0123456789"}, "with its port"},
		{"tls not forwarded", Config{ServiceURL: "pulsar+ssl://10.213.0.1:6651", AdminURL: adm, NetNS: "ackc-0123456789"}, "TLS is not forwarded"},
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
	listen, target, err := (Config{ServiceURL: svc}).forwardAddrs()
	if err != nil || listen != "127.0.0.1:26650" || target != "10.213.0.1:26650" {
		t.Errorf("forwarder %s -> %s (%v): want 127.0.0.1:26650 -> 10.213.0.1:26650", listen, target, err)
	}
}

func TestOpenClusterNetns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	p, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir, NetNS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if nt := p.Net(); nt == nil || nt.Prefix != cluster.NetnsPrefix(dir) || fmt.Sprint(nt.Nodes) != "[1]" || p.ProbePort() != 26650 {
		t.Fatalf("Net() %+v, ProbePort %d: want prefix %s, node 1 and the broker port 26650", nt, p.ProbePort(), cluster.NetnsPrefix(dir))
	}
	if p.ServiceURL() != "pulsar://10.213.0.1:26650" || p.AdminURL() != "http://10.213.0.1:28080" || p.BookieHTTPURL() != "http://10.213.0.1:24181" {
		t.Errorf("addresses %s %s %s: want 10.213.0.1", p.ServiceURL(), p.AdminURL(), p.BookieHTTPURL())
	}
	conf := p.standaloneConf()
	// It listens on every address of its own namespace, and advertises
	// its loopback there, which is the forwarder's on the client side.
	for _, want := range []string{"bindAddress=0.0.0.0\n", "advertisedAddress=127.0.0.1\n", "brokerServicePort=26650\n", "httpServerHost=0.0.0.0\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("standalone.conf lacks %q:\n%s", want, conf)
		}
	}
	if !strings.Contains(fmt.Sprint(p.ClientFlags()), "{netns "+p.Net().Prefix+"}") {
		t.Errorf("ClientFlags %v: want the driver's --netns", p.ClientFlags())
	}
	plain, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: filepath.Join(t.TempDir(), "q")}})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Net() != nil || plain.ProbePort() != 0 || !strings.Contains(plain.standaloneConf(), "bindAddress=127.0.0.1\n") || strings.Contains(plain.standaloneConf(), "httpServerHost") {
		t.Errorf("without --netns: Net %v, probe port %d, conf:\n%s", plain.Net(), plain.ProbePort(), plain.standaloneConf())
	}
	// Recorded: reopened in the Net without the flag; one made without it
	// refuses --netns.
	for _, tc := range []struct {
		name   string
		pf     pulsarFile
		flag   bool
		prefix string
		err    string
	}{
		{"recorded", pulsarFile{Record: cluster.Record{Kind: pulsarKind, NetNS: "ackc-abc"}, ClusterOptions: &ClusterOptions{BrokerPort: 26650}}, false, "ackc-abc", ""},
		{"plain", pulsarFile{Record: cluster.Record{Kind: pulsarKind}, ClusterOptions: &ClusterOptions{BrokerPort: 26650}}, false, "", ""},
		{"plain with --netns", pulsarFile{Record: cluster.Record{Kind: pulsarKind}, ClusterOptions: &ClusterOptions{BrokerPort: 26650}}, true, "", "without --netns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			data, _ := json.Marshal(tc.pf)
			if err := os.WriteFile(filepath.Join(d, "cluster.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: d, NetNS: tc.flag}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if c.Net() != nil {
				got = c.Net().Prefix
			}
			if got != tc.prefix || (tc.prefix == "") != (c.ProbePort() == 0) {
				t.Fatalf("Net prefix %q ProbePort %d, want %q", got, c.ProbePort(), tc.prefix)
			}
		})
	}
}
