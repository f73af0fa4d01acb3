package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// gate holds the acks of one shard while a fake node is paused: the
// pause of a broker as that shard's clients would see it, while the
// other shards' acks go on.
type gate struct {
	mu      sync.Mutex
	stopped chan struct{} // non-nil while paused; closed on resume
}

func (g *gate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopped
}

func (g *gate) pause(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case on && g.stopped == nil:
		g.stopped = make(chan struct{})
	case !on && g.stopped != nil:
		close(g.stopped)
		g.stopped = nil
	}
}

// gateNodes are three fake nodes whose pause and resume close and open
// the gate.
type gateNodes struct {
	g *gate
}

func (n gateNodes) IDs() []int32                                     { return []int32{0, 1, 2} }
func (n gateNodes) PID(context.Context, int32) (int, error)          { return 4242, nil }
func (n gateNodes) Stop(context.Context, int32, time.Duration) error { return nil }
func (n gateNodes) Start(context.Context, int32) error               { return nil }
func (n gateNodes) DataDirInode(context.Context, int32) (uint64, error) {
	return 7, nil
}
func (n gateNodes) Where() string { return "fake nodes" }
func (n gateNodes) Signal(_ context.Context, _ int32, sig syscall.Signal) (int, error) {
	switch sig {
	case syscall.SIGSTOP:
		n.g.pause(true)
	case syscall.SIGCONT:
		n.g.pause(false)
	}
	return 4242, nil
}

// gatedDriver delays the outcome of every publish made while its gate is
// closed until the gate opens.
type gatedDriver struct {
	drivers.Driver
	g *gate
}

func (d gatedDriver) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, topic, id)
	if err != nil {
		return nil, err
	}
	return gatedProducer{Producer: p, g: d.g}, nil
}

type gatedProducer struct {
	drivers.Producer
	g *gate
}

func (p gatedProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	held := p.g.wait()
	if held == nil {
		p.Producer.Publish(ctx, m, done)
		return
	}
	p.Producer.Publish(ctx, m, func(o drivers.Outcome) {
		go func() { <-held; done(o) }()
	})
}

// lateProber is a driver whose nodes answer a probe only from until on:
// a node that is ready again only after the load ended.
type lateProber struct {
	drivers.Driver
	until time.Time
}

func (d lateProber) ProbeNode(ctx context.Context, id int32) error {
	if time.Now().Before(d.until) {
		return fmt.Errorf("node %d does not answer yet", id)
	}
	return nil
}

// firstAcks is, per partition, the first ack (Unix ns) in the given
// shards' ledgers of a message intended at or after at: the figure
// FirstAckMs reports, computed from the ledgers directly.
func firstAcks(t *testing.T, dirs []string, at time.Time) map[int32]int64 {
	t.Helper()
	first := map[int32]int64{}
	for _, dir := range dirs {
		l, err := ledger.OpenReadOnly(runner.LedgerDir(dir), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		type id struct {
			p uint32
			s uint64
		}
		intended := map[id]int64{}
		for _, k := range []ledger.Kind{ledger.Send, ledger.Outcome} {
			c, err := l.Scan(k)
			if err != nil {
				t.Fatal(err)
			}
			for run, ok := c.NextRun(); ok; run, ok = c.NextRun() {
				for _, e := range run {
					key := id{e.Producer, e.Seq}
					if k == ledger.Send {
						intended[key] = e.Time
						continue
					}
					sent, ok := intended[key]
					if e.Status != ledger.OutcomeAcked || !ok || sent < at.UnixNano() {
						continue
					}
					if f, ok := first[e.Partition]; !ok || sent+e.Time < f {
						first[e.Partition] = sent + e.Time
					}
				}
			}
			if err := c.Err(); err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
		l.Close()
	}
	return first
}

// Issue 27, point 2: a separate fault process (runner.ApplyFaults, the
// `ackcheck faults` command) applies the faults of 2 shards; it writes
// the timeline to the shared start dir, every shard copies it, and the
// merged verdict reports the fault with its first-ack figures over both
// shards' acks. Shard 0's acks are held while the node is paused and
// shard 1's are not: every partition's figure is the one the shards'
// ledgers hold together, about 600 ms on shard 0's partitions and tens
// of ms on shard 1's, which shard 0 alone would not have at all.
func TestShardsFaultProcessTimeline(t *testing.T) {
	c, d := fakeKafka(t)
	startDir := t.TempDir()
	const topic = "faultproc"
	runID, start, err := runner.JoinStart(startDir, 2, topic, 1500*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	steps, err := faults.ParseSchedule("at=500ms pause node:1; at=1100ms resume")
	if err != nil {
		t.Fatal(err)
	}
	// The paused node answers again only after the load ended: the fault
	// process goes on measuring recovery until then.
	readyAt := start.Add(shardLoad().Duration + 500*time.Millisecond)
	var tl *runner.Timeline
	var ferr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tl, ferr = runner.ApplyFaults(context.Background(), runner.FaultsConfig{
			Out: filepath.Join(t.TempDir(), "faults"), StartDir: startDir, Driver: lateProber{d, readyAt}, Topic: topic, Shards: 2,
			RunID: runID, Start: start, Duration: shardLoad().Duration,
			Faults: &runner.FaultPlan{Nodes: gateNodes{g}, Steps: steps, RecoveryTimeout: 3 * time.Second},
		})
	}()
	dirs := runShardsAt(t, c.ListenAddrs(), topic, 2, start, runID, func(cfg *runner.Config) {
		cfg.Shard.Dir, cfg.Shard.ExternalFaults = startDir, true
		if cfg.Shard.Index == 0 {
			cfg.Driver = gatedDriver{Driver: cfg.Driver, g: g}
		}
	})
	wg.Wait()
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !tl.Done || len(tl.Records) != 2 || tl.Records[0].Action != faults.Pause || tl.Records[0].Result != faults.Applied {
		t.Fatalf("timeline %+v: want done, with the pause applied and the resume", tl)
	}
	// Every shard carries the timeline as it stood at its load's end.
	for i, dir := range dirs {
		l, err := ledger.OpenReadOnly(runner.LedgerDir(dir), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var sf runner.ShardFaults
		err = l.GetMeta(runner.MetaShardFaults, &sf)
		l.Close()
		if err != nil || !sf.Given || sf.Applier || sf.Timeline == nil || len(sf.Timeline.Records) == 0 || !sf.Timeline.Records[0].At.Equal(tl.Records[0].At) {
			t.Fatalf("shard %d's copy of the faults: %+v (%v); want the pause at %s", i, sf, err, tl.Records[0].At)
		}
	}
	res := verifyShards(t, d, dirs)
	if res.Verdict != verifier.Pass || len(res.Faults) != 2 {
		t.Fatalf("verdict %s %v, faults %+v: want PASS with the pause and the resume", res.Verdict, res.Reasons, res.Faults)
	}
	pause := res.Faults[0]
	if min := float64(readyAt.Sub(pause.At).Milliseconds()); pause.ReadyMs < min {
		t.Fatalf("the pause's node ready %.0f ms after it, want at least %.0f ms (after the load ended): the fault process stopped measuring before the node came back", pause.ReadyMs, min)
	}
	both := firstAcks(t, dirs, pause.At)
	alone := firstAcks(t, dirs[:1], pause.At)
	if len(pause.FirstAckMs) == 0 || len(both) != len(pause.FirstAckMs) {
		t.Fatalf("first acks %v, the ledgers give %v", pause.FirstAckMs, both)
	}
	// Each shard writes half the partitions (shardPartitions): shard 0's
	// are slow to ack again, shard 1's are not, and shard 0 alone gives
	// no first ack at all for shard 1's partitions.
	fast, slow := 0, 0
	aloneMs := map[int32]float64{}
	for p, ms := range pause.FirstAckMs {
		want := float64(both[p]-pause.At.UnixNano()) / 1e6
		if d := ms - want; d < -0.001 || d > 0.001 {
			t.Fatalf("partition %d: first ack %.3f ms after the pause, the shards' ledgers give %.3f ms", p, ms, want)
		}
		a, ok := alone[p]
		switch {
		case !ok && ms < 300:
			fast++
		case ok && a == both[p] && ms > 400:
			slow++
			aloneMs[p] = ms
		default:
			t.Fatalf("partition %d: first ack %.0f ms after the pause (shard 0 alone: %v): want shard 0's partitions held about 600 ms and shard 1's not", p, ms, ok)
		}
	}
	if fast == 0 || slow == 0 || pause.SlowestFirstAckMs < 400 {
		t.Fatalf("first acks %v, slowest %.0f ms: want partitions of both shards, shard 0's slow", pause.FirstAckMs, pause.SlowestFirstAckMs)
	}
	t.Logf("first ack after the pause per partition: merged %v ms; shard 0's partitions %v ms; shard 0 alone has no figure for the others", pause.FirstAckMs, aloneMs)
}

// Issue 27, point 2: a load given faults whose timeline is missing, or
// whose applier did not finish, gets no PASS: it is never judged as a
// load without faults.
func TestShardsFaultTimelineMissingOrUnfinished(t *testing.T) {
	c, d := fakeKafka(t)
	startDir := t.TempDir()
	const topic = "notimeline"
	runID, start, err := runner.JoinStart(startDir, 2, topic, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dirs := runShardsAt(t, c.ListenAddrs(), topic, 2, start, runID, func(cfg *runner.Config) {
		cfg.Shard.Dir, cfg.Shard.ExternalFaults = startDir, true
	})
	// --fault-timeline: the timeline found in a directory of its own (a
	// copy of the shared volume) while the shards' --start-dir has none.
	other := t.TempDir()
	done := `{"run_id":"` + verifier.RunIDText(runID) + `","applier":"ackcheck faults","done":true,"records":[]}`
	if err := os.WriteFile(runner.TimelinePath(other), []byte(done), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := runner.VerifyShardsTimeline(context.Background(), filepath.Join(t.TempDir(), "merged"), dirs, other, d, verifier.Options{}, 10*time.Second, nil)
	if err != nil || res.Verdict != verifier.Pass {
		t.Fatalf("with --fault-timeline %s: %v %+v", other, err, res)
	}
	for _, tc := range []struct {
		name string
		file string // the timeline file's content; "" for none
		want string // in the ledger's reason
	}{
		{"missing", "", "their timeline was not found"},
		{"unfinished", `{"run_id":"` + verifier.RunIDText(runID) + `","applier":"ackcheck faults","done":false,"records":[]}`, "is not done"},
		{"finished", `{"run_id":"` + verifier.RunIDText(runID) + `","applier":"ackcheck faults","done":true,"records":[]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(runner.TimelinePath(startDir))
			if tc.file != "" {
				if err := os.WriteFile(runner.TimelinePath(startDir), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res := verifyShards(t, d, dirs)
			if tc.want == "" {
				if res.Verdict != verifier.Pass {
					t.Fatalf("verdict %s %v: want PASS with a finished timeline", res.Verdict, res.Reasons)
				}
				return
			}
			if res.Verdict != verifier.Unproven || res.Ledger == nil || !strings.Contains(res.Ledger.Reason, tc.want) {
				t.Fatalf("verdict %s, ledger %+v: want unproven, saying %q", res.Verdict, res.Ledger, tc.want)
			}
		})
	}
}

// The fault process of a sharded load refuses, before anything is
// written, a plan with nothing to apply and a step after the load's end;
// it takes a plan of --fsync alone.
func TestCheckFaultsToApply(t *testing.T) {
	steps, err := faults.ParseSchedule("at=5s pause node:1; at=9s resume")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		steps []faults.Step
		fsync bool
		load  time.Duration
		want  string // "" for none
	}{
		{"nothing", nil, false, time.Minute, "no faults to apply"},
		{"fsync alone", nil, true, time.Minute, ""},
		{"steps in the load", steps, false, 10 * time.Second, ""},
		{"a step after the load", steps, false, 9 * time.Second, "fault at=9s resume previous fires after the load ends (--duration 9s)"},
	} {
		err := runner.CheckFaultsToApply(tc.steps, tc.fsync, tc.load)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	out := filepath.Join(t.TempDir(), "faults")
	_, err = runner.ApplyFaults(context.Background(), runner.FaultsConfig{Out: out, StartDir: t.TempDir(), Shards: 1, Start: time.Now(),
		Duration: 9 * time.Second, Faults: &runner.FaultPlan{Steps: steps}})
	if err == nil || !strings.Contains(err.Error(), "fires after the load ends") {
		t.Errorf("ApplyFaults: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("ApplyFaults wrote %s before refusing: %v", out, err)
	}
}
