package kafka

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ports(t *testing.T, c *kfake.Cluster) []int {
	var ps []int
	for _, a := range c.ListenAddrs() {
		p, err := strconv.Atoi(a[strings.LastIndex(a, ":")+1:])
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func runConfig(t *testing.T, d drivers.Driver, dur time.Duration) runner.Config {
	return runner.Config{
		Out:    filepath.Join(t.TempDir(), "run"),
		Driver: d,
		Topic:  drivers.TopicSpec{Name: "t", Partitions: 4, ReplicationFactor: 3},
		Load: load.Config{Rate: 2000, Duration: dur, Producers: 2, MessageSize: 200,
			LiveRead: true, DrainTimeout: 20 * time.Second},
		Verify:          true,
		ReadIdleTimeout: 10 * time.Second,
	}
}

// A broker that comes back empty between the load and the read-back has
// lost every acked message, and the verdict must say so (PLATFORM.md: a
// restarted kfake has a new topic ID or no topic at all).
func TestLostWhenBrokerRestartsEmptyBeforeReadBack(t *testing.T) {
	c := newKfake(t)
	ps := ports(t, c)
	d, err := New(Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := runConfig(t, d, time.Second)
	cfg.Verify = false
	if _, err := runner.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := newKfake(t, kfake.Ports(ps...))
	_ = c2
	res, err := runner.Verify(context.Background(), cfg.Out, d, verifier.Options{}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Acked == 0 || res.Lost != res.Acked || res.Verdict != verifier.Fail {
		t.Fatalf("acked %d, lost %d, verdict %s: want every acked message lost", res.Acked, res.Lost, res.Verdict)
	}
	if len(res.Samples["lost"]) != min(100, int(res.Lost)) || len(res.ReadBackNotes) == 0 {
		t.Fatalf("samples %d, notes %v", len(res.Samples["lost"]), res.ReadBackNotes)
	}
}

// The same broker failure in the middle of the load: producers that stay
// connected see the topic vanish. The run must end (bounded by the
// delivery timeout), count the failures, and report the acked messages
// that vanished with the old broker.
func TestBrokerRestartsEmptyMidLoadNeverHangs(t *testing.T) {
	c := newKfake(t)
	ps := ports(t, c)
	d, err := New(Config{Brokers: c.ListenAddrs(), DeliveryTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := runConfig(t, d, 3*time.Second)
	go func() {
		time.Sleep(1200 * time.Millisecond)
		c.Close()
		newKfake(t, kfake.Ports(ps...))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	res, err := runner.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("took %s: sent %d acked %d failed %d lost %d errors %v", time.Since(start), res.Sent, res.Acked, res.Failed, res.Lost, res.Errors)
	if res.Lost == 0 || res.Failed == 0 || res.Verdict != verifier.Fail {
		t.Fatalf("lost %d failed %d verdict %s: want acked messages lost and later sends failed", res.Lost, res.Failed, res.Verdict)
	}
	if res.LongestNoAckMs < 1000 {
		t.Fatalf("longest no-ack %.0f ms: the outage should show", res.LongestNoAckMs)
	}
	if len(res.Errors) == 0 {
		t.Fatal("failures were not reported by error")
	}
}

// kfake stores a produce and then answers REQUEST_TIMED_OUT: the ack is lost
// after the write. Without idempotence the client retries and writes again
// (real duplicates); records whose delivery timeout runs out while the fault
// lasts end Unknown but are in the log (indeterminate). Nothing acked is lost.
func TestDuplicatesAndIndeterminateFromLostAcks(t *testing.T) {
	c := newKfake(t)
	off := false
	d, err := New(Config{Brokers: c.ListenAddrs(), Idempotent: &off, DeliveryTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := runConfig(t, d, 3*time.Second)
	go func() {
		time.Sleep(800 * time.Millisecond)
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: -1})
		time.Sleep(1800 * time.Millisecond)
		h.Remove()
	}()
	res, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d acked %d failed %d duplicates %d indeterminate %d lost %d", res.Sent, res.Acked, res.Failed, res.Duplicates, res.Indeterminate, res.Lost)
	if res.Duplicates == 0 || res.Indeterminate == 0 {
		t.Fatalf("duplicates %d, indeterminate %d: both should fire", res.Duplicates, res.Indeterminate)
	}
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass {
		t.Fatalf("lost %d corrupt %d phantom %d verdict %s %v", res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
	}
	if res.Samples["duplicates"] == nil {
		t.Fatal("no duplicate samples")
	}
	// With --no-duplicates the same history fails.
	strict, err := runner.Verify(context.Background(), cfg.Out, d, verifier.Options{NoDuplicates: true}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strict.Verdict != verifier.Fail || strict.Duplicates != res.Duplicates {
		t.Fatalf("--no-duplicates: verdict %s, duplicates %d (was %d)", strict.Verdict, strict.Duplicates, res.Duplicates)
	}
}

// Idempotent acks=all through the same lost-ack fault: the broker dedups
// the retries, so the strict verdict passes.
func TestIdempotentProducerHasNoDuplicates(t *testing.T) {
	c := newKfake(t)
	d, err := New(Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := runConfig(t, d, 2*time.Second)
	cfg.Check = verifier.Options{NoDuplicates: true, Ordered: true}
	hits := make(chan int, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 20})
		time.Sleep(time.Second)
		hits <- h.Hits()
		h.Remove()
	}()
	res, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := <-hits; n == 0 {
		t.Fatal("the fault never hit a produce request")
	}
	drivertest.AssertClean(t, res)
}
