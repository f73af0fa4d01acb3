package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kfakeDriver is the Kafka driver on a 3-broker kfake cluster, both
// closed when t ends.
func kfakeDriver(t *testing.T) *kafka.Driver {
	t.Helper()
	_, d := fakeKafka(t)
	return d
}

func run(t *testing.T, live bool, fsync *bool) (string, string) {
	d := kfakeDriver(t)
	var buf lockedBuf
	out := filepath.Join(t.TempDir(), "run")
	cfg := runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
		Load:   load.Config{Rate: 500, Duration: 2500 * time.Millisecond, MessageSize: 100, LiveRead: true},
		Verify: true, Progress: &buf, ProgressEvery: 500 * time.Millisecond, Live: live,
	}
	if fsync != nil {
		cfg.Faults = &runner.FaultPlan{Fsync: fsync}
	}
	res, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != verifier.Pass {
		t.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
	}
	return buf.String(), out
}

func TestProgressLines(t *testing.T) {
	plain, out := run(t, false, nil)
	if strings.Contains(plain, "\r") || strings.Count(plain, "sent ") < 3 {
		t.Fatalf("plain progress:\n%q", plain)
	}
	for _, f := range append([]string{"result.json", "run.json"}, report.Files...) {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("run directory lacks %s: %v", f, err)
		}
	}
	live, _ := run(t, true, nil)
	if strings.Count(live, "\r\033[K") < 3 {
		t.Fatalf("live progress does not rewrite its line:\n%q", live)
	}
	// Lines printed during the load clear the progress line first, and
	// the progress line is ended before what follows the load.
	if !strings.Contains(live, "\r\033[Kcreated topic t") || !strings.Contains(live, " ago\nreading back t ...\n") {
		t.Fatalf("live output is not laid out as lines:\n%q", live)
	}
}

// --fsync on applies the topic setting before the load, reports what an
// ack meant, and puts the setting back afterwards.
func TestFsyncRunSetting(t *testing.T) {
	on := true
	log, out := run(t, false, &on)
	if !strings.Contains(log, "flush.messages=1: answered after the leader and each in-sync follower") ||
		!strings.Contains(log, "heal: set flush.messages of topic t back to its default") {
		t.Fatalf("log:\n%s", log)
	}
	data, _ := os.ReadFile(filepath.Join(out, "result.json"))
	if !strings.Contains(string(data), `"ack_meanings"`) {
		t.Fatal("result.json lacks ack_meanings")
	}
}

// result.json says how much CPU time the hypervisor took from the load
// machine while the load sent, as /proc/stat counts it.
func TestStealInResult(t *testing.T) {
	if _, ok := load.ReadCPUTimes(); !ok {
		t.Skip("no /proc/stat steal column here")
	}
	_, out := run(t, false, nil)
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		StealPct *float64 `json:"steal_pct"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.StealPct == nil || *res.StealPct < 0 || *res.StealPct > 100 {
		t.Fatalf("steal_pct %v in result.json, want a share in [0, 100]", res.StealPct)
	}
}
