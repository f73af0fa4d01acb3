package queen

import (
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

func TestLastLine(t *testing.T) {
	const pgLog = `2026-12-01 05:30:40.100 UTC [10] LOG:  database system is ready to accept connections
2026-12-01 05:30:48.633 UTC [21] LOG:  database system is ready to accept connections
2026-12-01 05:30:49.000 UTC [21] LOG:  checkpoint starting: time
2026-12-01 05:31:30.000 UTC [35] LOG:  database system is ready to accept connections
`
	const serverLog = `[2026-12-01 05:30:48.580] [info] Queen C++ Message Queue Server v0.15
`
	at := func(s string) time.Time {
		v, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 12, 1, v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
	}
	tests := []struct {
		name, log, what string
		before          time.Time
		want            string // "" for none
	}{
		{"the last before the bound", pgLog, DBBack, at("05:31:00.000"), "05:30:48.633"},
		{"every line", pgLog, DBBack, at("06:00:00.000"), "05:31:30.000"},
		{"the server's banner", serverLog, ServerBack, at("06:00:00.000"), "05:30:48.580"},
		{"quiet before the first", pgLog, DBBack, at("05:30:00.000"), ""},
		{"quiet for another line", serverLog, DBBack, at("06:00:00.000"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LastLine(strings.NewReader(tc.log), tc.what, tc.before)
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if !got.IsZero() {
				s = got.Format("15:04:05.000")
			}
			if s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

// RecoveryAccount: each node's first line after the fault saying it
// serves again, the later of the two for both, and never an in-sync
// event (Queen has no replicas), said in NoInSync.
func TestQueenRecoveryAccount(t *testing.T) {
	const serverLog = `[2026-12-01 05:30:00.000] [info] Acceptor listening on 127.0.0.1:26632
[2026-12-01 05:30:48.580] [info] Queen C++ Message Queue Server (Acceptor/Worker Pattern)
NOTICE:  schema "queen" already exists, skipping
[2026-12-01 05:30:50.410] [info] Acceptor listening on 127.0.0.1:26632
[2026-12-01 05:32:00.000] [info] Acceptor listening on 127.0.0.1:26632
`
	const pgLog = `2026-12-01 05:30:40.100 UTC [10] LOG:  database system is ready to accept connections
2026-12-01 05:30:49.633 UTC [21] LOG:  database system is ready to accept connections
`
	dir := t.TempDir()
	q, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	for node, log := range map[int32]string{ServerNode: serverLog, DBNode: pgLog} {
		if err := os.MkdirAll(filepath.Dir(q.LogFile(node)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(q.LogFile(node), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	since := time.Date(2026, 12, 1, 5, 30, 45, 0, time.UTC)
	until := since.Add(time.Minute)
	tests := []struct {
		name  string
		nodes []int32
		since time.Time
		want  string // "" for no ready account
	}{
		{"the server's listening line, not its banner nor a later fault's", []int32{ServerNode}, since, "05:30:50.410 the Queen server listens again"},
		{"PostgreSQL's ready line", []int32{DBNode}, since, "05:30:49.633 PostgreSQL ready to accept connections again"},
		{"both: the later", []int32{DBNode, ServerNode}, since, "05:30:50.410 the Queen server listens again"},
		{"quiet when the log does not say it came back", []int32{DBNode}, since.Add(10 * time.Second), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc, err := q.RecoveryAccount("t", tc.nodes, tc.since, until)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if acc.Ready != nil {
				got = acc.Ready.At.Format("15:04:05.000") + " " + acc.Ready.What
				if acc.Ready.Bound != drivers.Exact {
					t.Errorf("the line records the event itself, yet bound %q", acc.Ready.Bound)
				}
			}
			if got != tc.want || acc.InSync != nil || acc.NoInSync == "" {
				t.Errorf("ready %q, in sync %+v, no in sync %q; want %q, none, and why", got, acc.InSync, acc.NoInSync, tc.want)
			}
		})
	}
	// The same logs fetched from a cluster file's nodes: the same account.
	fetched := map[int32][]byte{ServerNode: []byte(serverLog), DBNode: []byte(pgLog)}
	from, err := Profile{}.RecoveryAccountFrom(fetched, "read from ssh h", "t", []int32{DBNode, ServerNode}, since, until)
	if err != nil || from.Ready == nil || from.Ready.At.Format("15:04:05.000") != "05:30:50.410" || from.NoInSync == "" || !strings.Contains(from.Source, "read from ssh h") {
		t.Errorf("from fetched logs: %+v, %v", from, err)
	}
	os.Remove(q.LogFile(DBNode))
	if _, err := q.RecoveryAccount("t", []int32{DBNode}, since, until); err == nil || !strings.Contains(err.Error(), "pg.log") {
		t.Errorf("a missing log gave %v", err)
	}
}
