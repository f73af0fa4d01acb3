package nats

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/netns"
)

func TestNetnsConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"through the hub", Config{Servers: []string{"nats://10.213.0.1:4222"}, MonitorURLs: []string{"http://10.213.0.1:8222"}, NetNS: "ackc-0123456789"}, ""},
		{"loopback", Config{Servers: []string{"nats://127.0.0.1:4222"}}, ""},
		{"net server without netns", Config{Servers: []string{"nats://10.213.0.1:4222"}}, "--cluster-dir, or --netns"},
		{"net monitor without netns", Config{Servers: []string{"nats://127.0.0.1:4222"}, MonitorURLs: []string{"http://10.213.0.1:8222"}}, "--cluster-dir, or --netns"},
		{"bad prefix", Config{Servers: []string{"nats://10.213.0.1:4222"}, NetNS: "A/b"}, "--netns"},
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

func TestOpenClusterNetns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	c, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir, NetNS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if nt := c.Net(); nt == nil || nt.Prefix != cluster.NetnsPrefix(dir) || c.ProbePort() != 6222 {
		t.Fatalf("Net() %+v, ProbePort %d: want prefix %s and the route port 6222", nt, c.ProbePort(), cluster.NetnsPrefix(dir))
	}
	if got := strings.Join(c.Servers(), ","); got != "nats://10.213.0.1:4222,nats://10.213.0.2:4222,nats://10.213.0.3:4222" {
		t.Errorf("servers %s", got)
	}
	if got := c.MonitorURLs()[1]; got != "http://10.213.0.2:8222" {
		t.Errorf("node 2's monitoring URL %s", got)
	}
	conf := c.conf(2)
	for _, want := range []string{`listen: "10.213.0.2:4222"`, `http: "10.213.0.2:8222"`, `listen: "10.213.0.2:6222"`, `"nats-route://10.213.0.3:6222"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("node 2's nats.conf lacks %s:\n%s", want, conf)
		}
	}
	if !strings.Contains(fmt.Sprint(c.ClientFlags()), "{netns "+c.Net().Prefix+"}") {
		t.Errorf("ClientFlags %v: want the driver's --netns", c.ClientFlags())
	}
	// Recorded: reopened in the Net without the flag; a cluster made
	// without it refuses --netns.
	for _, tc := range []struct {
		name   string
		nf     natsFile
		flag   bool
		prefix string
		err    string
	}{
		{"recorded", natsFile{Record: cluster.Record{Kind: natsKind, NetNS: "ackc-abc"}, ClusterOptions: &ClusterOptions{Nodes: 3, BasePort: 24222}}, false, "ackc-abc", ""},
		{"plain", natsFile{Record: cluster.Record{Kind: natsKind}, ClusterOptions: &ClusterOptions{Nodes: 3, BasePort: 24222}}, false, "", ""},
		{"plain with --netns", natsFile{Record: cluster.Record{Kind: natsKind}, ClusterOptions: &ClusterOptions{Nodes: 3, BasePort: 24222}}, true, "", "without --netns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			data, _ := json.Marshal(tc.nf)
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

// fakeServer answers the NATS handshake (INFO, then PONG to each PING)
// on l, enough for nats.Connect to succeed.
func fakeServer(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "INFO {\"server_id\":\"fake\",\"server_name\":\"fake\",\"version\":\"2.15.2\",\"proto\":1,\"max_payload\":1048576,\"headers\":true}\r\n")
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "PING") {
					fmt.Fprint(c, "PONG\r\n")
				}
			}
		}()
	}
}

// The driver's client connections and its monitoring requests reach a
// server that listens only inside a node's namespace through the hub,
// and fail without the Net.
func TestDriverDialsThroughNet(t *testing.T) {
	need.NetnsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nt, err := netns.Create(ctx, fmt.Sprintf("acktn%d", os.Getpid()%100000), []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nt.Delete(context.Background()) })
	host := nt.NodeAddr(1).String()
	cl, err := nt.Listen(1, "tcp", host+":4222")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go fakeServer(cl)
	ml, err := nt.Listen(1, "tcp", host+":8222")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"server_name":"fake","version":"2.15.2"}`)
	})}
	go srv.Serve(ml)
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		prefix string
		wantOK bool
	}{
		{"through the hub", nt.Prefix, true},
		{"no such net", nt.Prefix + "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Servers: []string{"nats://" + host + ":4222"}, MonitorURLs: []string{"http://" + host + ":8222"}, NetNS: tc.prefix}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			nc, err := cfg.connect("netns-test")
			if err == nil {
				nc.Close()
			}
			if (err == nil) != tc.wantOK {
				t.Fatalf("client connection: %v, want ok %v", err, tc.wantOK)
			}
			var v varz
			err = (&Driver{cfg: cfg}).monitor(ctx, 1, "/varz", &v)
			if (err == nil) != tc.wantOK || (tc.wantOK && v.ServerName != "fake") {
				t.Fatalf("monitoring: %v (server %q), want ok %v", err, v.ServerName, tc.wantOK)
			}
		})
	}
}
