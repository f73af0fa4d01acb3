package nats

import (
	"fmt"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// A node's log across two processes: the killed one (PID 100) and its
// restart (PID 200), in nats-server's format.
const natsLog = `[100] 2026/12/01 10:00:00.000000 [INF] Starting nats-server
[100] 2026/12/01 10:00:05.000000 [WRN] Healthcheck failed: "JetStream is not current with the meta leader"
[200] 2026/12/01 10:00:10.000000 [INF] Starting nats-server
[200] 2026/12/01 10:00:11.000000 [WRN] Healthcheck failed: "JetStream is not current with the meta leader"
[200] 2026/12/01 10:00:12.500000 [WRN] Healthcheck failed: "JetStream stream 'ACKCHECK' is not current"
[200] 2026/12/01 10:00:12.000000 [INF] Catchup for stream 'ACKCHECK' complete
not a log line
`

func TestReadAccount(t *testing.T) {
	tests := []struct {
		name             string
		pid              int
		started, healthy string
		reasons          int
		catchups         int
	}{
		{"fires for the restart", 200, "10:00:10.000", "10:00:12.500", 2, 1},
		{"the killed process", 100, "10:00:00.000", "10:00:05.000", 1, 0},
		{"quiet for a PID not in the log", 300, "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAccount(strings.NewReader(natsLog), tc.pid)
			if err != nil {
				t.Fatal(err)
			}
			clock := func(s string, zero bool) string {
				if zero {
					return ""
				}
				return s
			}
			started := clock(a.Started.Format("15:04:05.000"), a.Started.IsZero())
			healthy := clock(a.Healthy().Format("15:04:05.000"), a.Healthy().IsZero())
			n := 0
			for _, c := range a.Reasons {
				n += c
			}
			if started != tc.started || healthy != tc.healthy || n != tc.reasons || len(a.Catchups) != tc.catchups {
				t.Errorf("started %q healthy %q, %d failed checks, %d catch-ups; want %q %q %d %d",
					started, healthy, n, len(a.Catchups), tc.started, tc.healthy, tc.reasons, tc.catchups)
			}
		})
	}
}

// A node's log across a kill at 10:00:02 and a restart (PID 200), with
// failed health checks for the topic's streams, another topic's and the
// meta layer, and a later fault's restart (PID 300) after until.
const windowLog = `[100] 2026/12/01 10:00:00.000000 [INF] Starting nats-server
[100] 2026/12/01 10:00:01.000000 [WRN] Healthcheck failed: "JetStream stream '$G > orders-0' is not current: group node unhealthy"
[100] 2026/12/01 10:00:02.100000 [INF] 127.0.0.1:1 - rid:1 - Route connection created
[200] 2026/12/01 10:00:10.000000 [INF] Starting nats-server
[200] 2026/12/01 10:00:10.300000 [INF] Server is ready
[200] 2026/12/01 10:00:11.000000 [WRN] Healthcheck failed: "JetStream stream '$G > orders-1' is not current: group node unhealthy"
[200] 2026/12/01 10:00:11.500000 [INF] Catchup for stream '$G > orders-2' complete
[200] 2026/12/01 10:00:12.000000 [WRN] Healthcheck failed: "JetStream stream '$G > orders-10x' is not current: group node unhealthy"
[200] 2026/12/01 10:00:12.500000 [WRN] Healthcheck failed: "JetStream has not established contact with a meta leader"
[300] 2026/12/01 10:01:00.000000 [INF] Starting nats-server
[300] 2026/12/01 10:01:05.000000 [WRN] Healthcheck failed: "JetStream stream '$G > orders-0' is not current: group node unhealthy"
`

func TestReadWindow(t *testing.T) {
	day := func(clock string) time.Time {
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000", "2026/12/01 "+clock, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	show := func(at time.Time) string {
		if at.IsZero() {
			return ""
		}
		return at.Format("15:04:05.000")
	}
	tests := []struct {
		name, topic, since, until                    string
		pid                                          int
		started, unhealthy, reason, behind, caughtUp string
	}{
		{"the restart, up to the next fault", "orders", "10:00:02.000", "10:00:59.000", 200,
			"10:00:10.000", "10:00:12.500", "JetStream has not established contact with a meta leader", "10:00:11.000", "10:00:11.500"},
		{"another topic's streams are not the topic's", "order", "10:00:02.000", "10:00:59.000", 200,
			"10:00:10.000", "10:00:12.500", "JetStream has not established contact with a meta leader", "", ""},
		{"no restart in the window: every line counts", "orders", "10:00:00.500", "10:00:05.000", 0,
			"", "10:00:01.000", "JetStream stream '$G > orders-0' is not current: group node unhealthy", "10:00:01.000", ""},
		{"quiet for a window with no lines", "orders", "10:00:20.000", "10:00:50.000", 0, "", "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadWindow(strings.NewReader(windowLog), tc.topic, day(tc.since), day(tc.until))
			if err != nil {
				t.Fatal(err)
			}
			got := []string{fmt.Sprint(w.PID), show(w.Started), show(w.LastUnhealthy), w.Reason, show(w.TopicBehind), show(w.TopicCaughtUp)}
			want := []string{fmt.Sprint(tc.pid), tc.started, tc.unhealthy, tc.reason, tc.behind, tc.caughtUp}
			if !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}

// RecoveryAccount gives lower bounds, never instants: nats-server logs
// failed health checks and not the one that passes.
func TestNATSRecoveryAccount(t *testing.T) {
	dir := t.TempDir()
	n, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir}, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(n.LogFile(2)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.LogFile(2), []byte(windowLog), 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 1, 10, 0, 2, 0, time.Local)
	acc, err := n.RecoveryAccount("orders", []int32{2}, since, since.Add(time.Minute-3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if acc.Ready == nil || acc.InSync == nil || acc.Ready.Bound != drivers.NotBefore || acc.InSync.Bound != drivers.NotBefore {
		t.Fatalf("want two lower bounds, got %+v", acc)
	}
	if got := acc.Ready.At.Format("15:04:05.000") + " " + acc.Ready.What; got != `10:00:12.500 node 2 (PID 200) last failed /healthz ("JetStream has not established contact with a meta leader")` {
		t.Errorf("ready: %s", got)
	}
	if got := acc.InSync.At.Format("15:04:05.000") + " " + acc.InSync.What; got != "10:00:11.500 node 2 (PID 200) last logged catch-up of a stream of orders" {
		t.Errorf("in sync: %s", got)
	}
	// The same log fetched from a cluster file's node: the same account.
	from, err := Profile{}.RecoveryAccountFrom(map[int32][]byte{2: []byte(windowLog)}, "read from ssh h", "orders", []int32{2}, since, since.Add(time.Minute-3*time.Second))
	if err != nil || from.Ready == nil || from.InSync == nil || *from.Ready != *acc.Ready || *from.InSync != *acc.InSync || !strings.Contains(from.Source, "read from ssh h") {
		t.Errorf("from fetched logs: %+v, %v; from the file: %+v", from, err, acc)
	}
	// A window in which the log says nothing: no account, not a made-up one.
	quiet, err := n.RecoveryAccount("orders", []int32{2}, since.Add(20*time.Second), since.Add(50*time.Second))
	if err != nil || quiet.Ready != nil || quiet.InSync != nil {
		t.Errorf("a silent log gave %+v, %v", quiet, err)
	}
	// A node without a log: an error that says which file.
	if _, err := n.RecoveryAccount("orders", []int32{3}, since, time.Time{}); err == nil || !strings.Contains(err.Error(), "node3") {
		t.Errorf("a missing log gave %v", err)
	}
}
