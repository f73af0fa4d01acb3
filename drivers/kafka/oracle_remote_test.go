package kafka

import (
	"context"
	"fmt"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/remote/sshdtest"
)

// The log oracle over SSH, for the nodes of a cluster file: a real Kafka
// cluster's kafka.log files (of $ACKCHECK_KAFKA_CLUSTER_DIR; only its logs
// are read, so a cluster that is down will do) served by the project's
// own sshd, read with `log:` paths of a cluster file through the same SSH
// connection the faults use, give the very account the local oracle
// reads from the files. A path that is not there is a line saying so.
func TestRemoteLogOracle(t *testing.T) {
	dir := os.Getenv("ACKCHECK_KAFKA_CLUSTER_DIR")
	if dir == "" {
		t.Skip("ACKCHECK_KAFKA_CLUSTER_DIR not set: start a cluster with `ackcheck cluster kafka up --dir D` and set it to D (its logs are what is read)")
	}
	k, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	topic, node, at := unfencedWithISR(t, k)
	since, until := at.Add(-20*time.Second), at.Add(time.Minute)
	local, err := k.RecoveryAccount(topic, []int32{node}, since, until)
	if err != nil {
		t.Fatal(err)
	}
	if local.Ready == nil || local.InSync == nil {
		t.Fatalf("the local logs give no account of broker %d at %s: %+v", node, at, local)
	}

	srv := sshdtest.Start(t)
	clusterFile := func(logOf func(id int32) string) *faults.Scripted {
		var b strings.Builder
		fmt.Fprintf(&b, "broker: kafka\nknown_hosts: %s\ndefaults: {user: %s, port: %d, key_file: %s}\nnodes:\n", srv.KnownHosts, srv.User, srv.Port, srv.KeyFile)
		for _, id := range k.Nodes() {
			fmt.Fprintf(&b, "  - {id: %d, host: 127.0.0.1, pgrep: no-such-broker-%d, start: 'true', log: %q}\n", id, id, logOf(id))
		}
		f := filepath.Join(t.TempDir(), "cluster.yaml")
		if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		cf, err := faults.LoadClusterFile(f, []string{driverName})
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := cf.Connect(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.ReadLogsWith(Profile{})
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s := clusterFile(k.LogFile)
	start := time.Now()
	got, err := s.RecoveryAccountContext(ctx, topic, []int32{node}, since, until)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if got.Ready == nil || got.InSync == nil || !got.Ready.At.Equal(local.Ready.At) || got.Ready.What != local.Ready.What ||
		!got.InSync.At.Equal(local.InSync.At) || got.InSync.What != local.InSync.What {
		t.Fatalf("over SSH: %+v %+v\nlocally:  %+v %+v", got.Ready, got.InSync, local.Ready, local.InSync)
	}
	if !strings.Contains(got.Source, "ssh "+srv.User+"@127.0.0.1:") {
		t.Errorf("the source does not say the logs came over SSH: %q", got.Source)
	}
	t.Logf("broker %d, topic %s: over SSH (%s, %s) and locally: ready %s (%s), in sync %s (%s)",
		node, topic, got.Source, took.Round(time.Millisecond), got.Ready.At.Format("15:04:05.000"), got.Ready.What, got.InSync.At.Format("15:04:05.000"), got.InSync.What)

	// A log path that is not there: the error names the node and the
	// path, and says what to check.
	gone := clusterFile(func(id int32) string {
		if id == k.Nodes()[len(k.Nodes())-1] {
			return filepath.Join(dir, "no-such.log")
		}
		return k.LogFile(id)
	})
	if _, err := gone.RecoveryAccountContext(ctx, topic, []int32{node}, since, until); err == nil || !strings.Contains(err.Error(), "no-such.log") || !strings.Contains(err.Error(), "check the path") {
		t.Errorf("a missing log over SSH gave %v", err)
	}
}

// unfencedWithISR finds in the cluster's logs a broker the controller
// unfenced after the cluster's first minute (a return after a fault, not
// the first start) and a topic one of whose ISR lines after it holds the
// broker again, so that ready and in sync are two different lines.
func unfencedWithISR(t *testing.T, k *Cluster) (topic string, node int32, at time.Time) {
	t.Helper()
	logs, closeLogs, err := k.openLogs()
	if err != nil {
		t.Fatal(err)
	}
	defer closeLogs()
	unfence := regexp.MustCompile(`The request from broker (\d+) to unfence has been granted`)
	type ev struct {
		at    time.Time
		node  int32
		topic string
		isr   []int32
	}
	var evs []ev
	var first time.Time
	err = LogLines(logs, time.Time{}, time.Time{}, func(_ int32, when time.Time, line string) {
		if first.IsZero() || when.Before(first) {
			first = when
		}
		if m := unfence.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			evs = append(evs, ev{at: when, node: int32(n)})
		} else if m := isrLine.FindStringSubmatch(line); m != nil {
			evs = append(evs, ev{at: when, topic: m[1], isr: parseISR(m[3])})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return a.at.Compare(b.at) })
	for i, e := range evs {
		if e.topic != "" || e.at.Before(first.Add(time.Minute)) {
			continue
		}
		for _, later := range evs[i+1:] {
			if later.at.After(e.at.Add(time.Minute)) {
				break
			}
			if later.topic != "" && slices.Contains(later.isr, e.node) {
				return later.topic, e.node, e.at
			}
		}
	}
	t.Skipf("the logs of %s show no broker unfenced after the first minute with an ISR line after it: run a leader kill on it first", k.Dir())
	return "", 0, time.Time{}
}
