package runner_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onLine calls fn once, when a written line contains marker: a hook into
// the run at the moment it prints that line.
type onLine struct {
	marker string
	fn     func()
	once   sync.Once
	buf    lockedBuf
}

func (o *onLine) Write(p []byte) (int, error) {
	if strings.Contains(string(p), o.marker) {
		o.once.Do(o.fn)
	}
	return o.buf.Write(p)
}

// The brokers go away as the run's read-back starts: the run still leaves
// result.json (verdict incomplete, what was read, the request that
// failed, the command that finishes it) and the reports; once the brokers
// are back, that command gives the verdict.
func TestRunReadBackFailsLeavesResult(t *testing.T) {
	dataDir := t.TempDir()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dataDir), kfake.SyncWrites())
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.ListenAddrs()
	d, err := kafka.New(kafka.Config{Brokers: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := filepath.Join(t.TempDir(), "run")
	hook := &onLine{marker: "reading back", fn: c.Close}
	start := time.Now()
	res, err := runner.Run(context.Background(), runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1},
		Load:   load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
		Verify: true, ReadIdleTimeout: 2 * time.Second, Progress: hook,
	})
	t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("a failed read-back must still give a result, got: %v\n%s", err, hook.buf.String())
	}
	r := resultJSON(t, out)
	resume := "ackcheck verify --out " + out
	if r.Verdict != verifier.Incomplete || res.Verdict != verifier.Incomplete || r.ReadBackComplete || r.ReadBackError == "" ||
		r.Resume != resume || r.Acked == 0 || r.Unread != r.Acked || r.Lost != 0 || len(r.Failures) != 1 || r.Failures[0].Check != verifier.CheckReadBack {
		t.Fatalf("result.json: verdict %s complete %v error %q resume %q acked %d failures %+v", r.Verdict, r.ReadBackComplete, r.ReadBackError, r.Resume, r.Acked, r.Failures)
	}
	t.Logf("result.json: verdict %s, reason: %s", r.Verdict, r.Reasons[0])
	if !strings.Contains(hook.buf.String(), "finish it with `"+resume+"`") {
		t.Fatalf("the run does not say how to finish:\n%s", hook.buf.String())
	}
	for _, f := range report.Files {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("no %s: %v", f, err)
		}
	}
	// The brokers are back, with their data: the command finishes it.
	c2, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dataDir), kfake.SyncWrites(), kfake.Ports(portOf(t, addrs[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	s, _ := runner.ReadSettings(out)
	v, err := runner.Verify(context.Background(), out, d, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "verify"), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := resultJSON(t, out); v.Verdict != verifier.Pass || !r.ReadBackComplete || r.Resume != "" || r.Read != r.Acked {
		t.Fatalf("verify once the brokers are back: %s %v, complete %v, read %d of %d", v.Verdict, v.Reasons, r.ReadBackComplete, r.Read, r.Acked)
	}
}

// Fetches fail during a verify's read-back: the verdict is incomplete,
// never pass, and the reason names each partition that stopped.
func TestFetchFailsDuringReadBack(t *testing.T) {
	c, d, out := loadedKfake(t)
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("fetch refused on purpose"), true
	})
	s, _ := runner.ReadSettings(out)
	res, err := runner.Verify(context.Background(), out, d, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "verify"), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := resultJSON(t, out)
	if res.Verdict != verifier.Incomplete || r.Verdict != verifier.Incomplete || r.ReadBackComplete || r.Resume == "" {
		t.Fatalf("verdict %s, result.json %s complete %v resume %q", res.Verdict, r.Verdict, r.ReadBackComplete, r.Resume)
	}
	t.Logf("result.json: verdict %s, reason: %s", r.Verdict, r.Reasons[0])
	for _, p := range []string{"partition 0: ", "partition 1: "} {
		if !strings.Contains(r.Reasons[0], p) {
			t.Errorf("the reason does not name %q: %s", p, r.Reasons[0])
		}
	}
}

// The topic is deleted before verify: the read-back is not complete (the
// broker answered that nothing is left), and the verdict fails on it.
func TestTopicGoneIsNoCompleteRead(t *testing.T) {
	c, d, out := loadedKfake(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopics(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	s, _ := runner.ReadSettings(out)
	res, err := runner.Verify(context.Background(), out, d, verifier.Rejudge(s.Checks, verifier.Options{}, given(), "verify"), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := resultJSON(t, out)
	if res.Verdict != verifier.Fail || r.ReadBackComplete || !r.TopicGone || r.Lost != r.Acked || r.Resume != "" {
		t.Fatalf("verdict %s, complete %v, gone %v, lost %d of %d, resume %q", res.Verdict, r.ReadBackComplete, r.TopicGone, r.Lost, r.Acked, r.Resume)
	}
}

// loadedKfake runs a 1 s load, without its read-back, on a 1-broker kfake
// cluster: the cluster, its driver (both closed when t ends) and the run
// directory, for a test to break the cluster before it verifies.
func loadedKfake(t *testing.T) (*kfake.Cluster, *kafka.Driver, string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	out := filepath.Join(t.TempDir(), "run")
	if _, err := runner.Run(context.Background(), runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1},
		Load: load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
	}); err != nil {
		t.Fatal(err)
	}
	return c, d, out
}

func portOf(t *testing.T, addr string) int {
	var p int
	if _, err := fmt.Sscan(addr[strings.LastIndex(addr, ":")+1:], &p); err != nil {
		t.Fatal(err)
	}
	return p
}
