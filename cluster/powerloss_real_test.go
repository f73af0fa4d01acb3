package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/jackc/pgx/v5"
)

// These tests take the lazyfs clusters .ci/run starts (ACKCHECK_KAFKA_LAZYFS_DIR,
// ACKCHECK_PULSAR_LAZYFS_DIR, ACKCHECK_NATS_LAZYFS_DIR, ACKCHECK_QUEEN_DIR)
// through a power loss of every node, as the power-loss fault does it
// (SIGKILL of every broker, then each lazyfs drops what was not fsynced),
// and bring them up again. The cluster package's tests run first in `make
// test`, so the clusters are as `cluster up` left them: a setup file that
// `up` wrote without fsync is gone here, as in issue 24, where PostgreSQL
// came back on port 5432 and the Queen server never started.

// powerLossAll is a power loss of every node of c: each broker SIGKILLed,
// then, once all are gone, each node's lazyfs loses what was not fsynced.
func powerLossAll(ctx context.Context, t *testing.T, c cluster.Local) {
	t.Helper()
	for _, id := range c.Nodes() {
		if _, err := c.Signal(id, syscall.SIGKILL); err != nil {
			t.Fatalf("power loss: %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range c.Nodes() {
		for {
			if pid, err := c.PID(id); err == nil && pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d did not die within 30 s of SIGKILL", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, id := range c.Nodes() {
		lost, err := c.LoseUnsynced(ctx, id)
		if err != nil {
			t.Fatalf("power loss of node %d: %v", id, err)
		}
		t.Logf("power loss of node %d: %s", id, lost)
	}
}

// endpoints lists every node's addresses.
func endpoints(ctx context.Context, c cluster.Local) map[int32]string {
	out := map[int32]string{}
	for _, s := range c.Health(ctx) {
		out[s.ID] = fmt.Sprint(s.Endpoints)
	}
	return out
}

// getJSON decodes the JSON at url.
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// pick reads the fields at the given dotted paths of a decoded JSON
// object, each as text ("<none>" when absent).
func pick(v map[string]any, prefix string, paths ...string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		var cur any = v
		for _, k := range strings.Split(p, ".") {
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		if cur == nil {
			out[prefix+p] = "<none>"
		} else {
			out[prefix+p] = fmt.Sprint(cur)
		}
	}
	return out
}

// The settings each broker runs with, read from the broker itself (not
// from ackcheck's files): the same before and after the power loss.
var settingsOf = map[string]func(ctx context.Context, c cluster.Local) (map[string]string, error){
	"kafka": func(ctx context.Context, c cluster.Local) (map[string]string, error) {
		k := c.(*cluster.Kafka)
		out := map[string]string{}
		for _, id := range k.Nodes() {
			// Written by the storage format, on lazyfs: the cluster and
			// node IDs the broker starts with.
			data, err := os.ReadFile(filepath.Join(k.DataDir(id), "meta.properties"))
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, "cluster.id=") || strings.HasPrefix(line, "node.id=") {
					out[fmt.Sprintf("node%d %s", id, line)] = "set"
				}
			}
		}
		return out, nil
	},
	"nats": func(ctx context.Context, c cluster.Local) (map[string]string, error) {
		n := c.(*cluster.NATS)
		out := map[string]string{}
		for i, mon := range n.MonitorURLs() {
			var v map[string]any
			if err := getJSON(ctx, mon+"/varz", &v); err != nil {
				return nil, err
			}
			for k, val := range pick(v, fmt.Sprintf("node%d ", i+1), "server_name", "port", "http_port", "cluster.name", "cluster.cluster_port", "cluster.urls",
				"jetstream.config.store_dir", "jetstream.config.sync_interval", "jetstream.config.max_storage") {
				out[k] = val
			}
		}
		return out, nil
	},
	"pulsar": func(ctx context.Context, c cluster.Local) (map[string]string, error) {
		p := c.(*cluster.Pulsar)
		var bookie, broker map[string]any
		if err := getJSON(ctx, p.BookieHTTPURL()+"/api/v1/config/server_config", &bookie); err != nil {
			return nil, err
		}
		if err := getJSON(ctx, p.AdminURL()+"/admin/v2/brokers/configuration/runtime", &broker); err != nil {
			return nil, err
		}
		out := pick(bookie, "bookie ", "journalSyncData")
		for k, v := range pick(broker, "broker ", "brokerServicePort", "webServicePort", "allowAutoTopicCreation", "managedLedgerDefaultAckQuorum") {
			out[k] = v
		}
		return out, nil
	},
	"queen": func(ctx context.Context, c cluster.Local) (map[string]string, error) {
		q := c.(*cluster.Queen)
		conn, err := pgx.Connect(ctx, q.PostgresURL()+"&connect_timeout=5")
		if err != nil {
			return nil, err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		out := map[string]string{}
		for _, name := range []string{"port", "unix_socket_directories", "listen_addresses", "synchronous_commit", "max_connections"} {
			var v string
			if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
				return nil, err
			}
			out["postgresql "+name] = v
		}
		return out, nil
	},
}

// Every launcher: up, a power loss of every node, up again on the same
// ports with the same settings, every node healthy.
func TestRealPowerLossUpAgain(t *testing.T) {
	tests := []struct {
		kind string
		open func(t *testing.T) cluster.Local
	}{
		{"kafka", func(t *testing.T) cluster.Local { return clustertest.KafkaLazyFS(t) }},
		{"pulsar", func(t *testing.T) cluster.Local { return clustertest.PulsarLazyFS(t) }},
		{"nats", func(t *testing.T) cluster.Local { return clustertest.NATSLazyFS(t) }},
		{"queen", func(t *testing.T) cluster.Local { return clustertest.Queen(t) }},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			c := tc.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			settings := settingsOf[tc.kind]
			before, err := settings(ctx, c)
			if err != nil {
				t.Fatalf("settings before the power loss: %v", err)
			}
			addrs := endpoints(ctx, c)
			powerLossAll(ctx, t, c)
			start := time.Now()
			if err := c.Up(ctx); err != nil {
				t.Fatalf("up after a power loss of every node: %v", err)
			}
			t.Logf("%s up again %.1f s after the power loss", tc.kind, time.Since(start).Seconds())
			for _, s := range c.Health(ctx) {
				if !s.Healthy {
					t.Errorf("node %d after the power loss: %s", s.ID, s.Health)
				}
			}
			if got := endpoints(ctx, c); fmt.Sprint(got) != fmt.Sprint(addrs) {
				t.Errorf("addresses after the power loss: %v, before: %v", got, addrs)
			}
			after, err := settings(ctx, c)
			if err != nil {
				t.Fatalf("settings after the power loss: %v", err)
			}
			if len(before) == 0 {
				t.Fatal("no settings read")
			}
			for k, v := range before {
				if after[k] != v {
					t.Errorf("%s after the power loss: %q, before: %q", k, after[k], v)
				}
			}
			t.Logf("%s settings kept: %v", tc.kind, before)
		})
	}
}

// `ackcheck fsync-audit --driver queen` on the Queen cluster of
// ACKCHECK_QUEEN_DIR, which `cluster queen up --lazyfs` made: both
// settings complete (synchronous_commit on, then off, each with a power
// loss of the database and the server), and the setting is put back.
// Issue 24: it ended with "heal the cluster after the faults: start node
// 1: start the Queen server: context deadline exceeded", exit 2. The
// ackcheck binary is the one that made the cluster (cluster.json's
// lazyfs_binary; .ci/run's bin/ackcheck). Measured on 2026-12-02 on a
// fresh cluster made by the code before the fix: that message and exit 2
// after 102 s (PostgreSQL back on port 5432); made by this code: both
// settings in 30 s (on: 0 of 2400 acked lost; off: 31).
func TestRealQueenFsyncAuditCLI(t *testing.T) {
	q := clustertest.Queen(t)
	var cf struct {
		Binary string `json:"lazyfs_binary"`
	}
	data, err := os.ReadFile(filepath.Join(q.Dir(), "cluster.json"))
	if err == nil {
		err = json.Unmarshal(data, &cf)
	}
	if err != nil || cf.Binary == "" {
		t.Fatalf("no ackcheck binary recorded in %s/cluster.json (%v)", q.Dir(), err)
	}
	out := filepath.Join(t.TempDir(), "audit")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cf.Binary, "fsync-audit", "--driver", "queen", "--cluster-dir", q.Dir(),
		"--partitions", "2", "--rate", "200", "--duration", "12s", "--loss-at", "5s", "--out", out)
	output, err := cmd.CombinedOutput()
	t.Logf("%s\n%s", strings.Join(cmd.Args, " "), tailOf(output, 4000))
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		t.Errorf("exit 1: synchronous_commit=on lost an acked message (a finding about the broker, not the setup)")
	} else if err != nil {
		t.Fatalf("fsync-audit --driver queen: %v", err)
	}
	var audit struct {
		Rows []struct {
			Setting struct {
				Name string `json:"name"`
			} `json:"setting"`
			PowerLoss string `json:"power_loss"`
			Acked     int64  `json:"acked"`
			Verdict   string `json:"verdict"`
		} `json:"rows"`
	}
	data, err = os.ReadFile(filepath.Join(out, "audit.json"))
	if err == nil {
		err = json.Unmarshal(data, &audit)
	}
	if err != nil {
		t.Fatalf("audit.json: %v", err)
	}
	if len(audit.Rows) != 2 {
		t.Fatalf("%d settings audited, want 2: %s", len(audit.Rows), data)
	}
	for _, r := range audit.Rows {
		if r.PowerLoss != "applied" || r.Acked == 0 {
			t.Errorf("%s: power loss %q, acked %d", r.Setting.Name, r.PowerLoss, r.Acked)
		}
	}
	if !q.FsyncOn() {
		if again, err := cluster.OpenQueen(cluster.QueenOptions{Dir: q.Dir()}); err != nil || !again.FsyncOn() {
			t.Errorf("synchronous_commit not put back on after the audit (%v)", err)
		}
	}
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
