package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// tailDropper acks without sending every message published after cut:
// a broker that lost the tail of what it acknowledged.
type tailDropper struct {
	drivers.Driver
	cut time.Time
}

func (d tailDropper) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, topic, id)
	if err != nil {
		return nil, err
	}
	return tailProducer{Producer: p, cut: d.cut}, nil
}

type tailProducer struct {
	drivers.Producer
	cut time.Time
}

func (p tailProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	if time.Now().After(p.cut) {
		done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition, Offset: -1}})
		return
	}
	p.Producer.Publish(ctx, m, done)
}

// damages are what the corpus does to each file.
var damages = []struct {
	name string
	hurt func(path string) error
}{
	{"emptied", func(p string) error { return os.Truncate(p, 0) }},
	{"deleted", os.Remove},
	{"cut in half", func(p string) error {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		return os.Truncate(p, st.Size()/2)
	}},
	{"a byte flipped", func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return err
		}
		b[len(b)/2] ^= 0x5a
		return os.WriteFile(p, b, 0o644)
	}},
}

// noPass checks what the commands left in out after damage: no exit 0,
// and no result.json or report saying PASS.
func noPass(t *testing.T, out, what string, code int, stdout, stderr string) {
	t.Helper()
	if code == exitPass {
		t.Errorf("%s: exit 0 (PASS) where the broker lost acked messages\n%s%s", what, stdout, stderr)
	}
	if r, err := runner.ReadResult(out); err == nil && r.Verdict == verifier.Pass {
		t.Errorf("%s: result.json says pass", what)
	}
	for _, f := range []string{"report.md", "report.html"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err == nil && bytes.Contains(b, []byte("PASS")) {
			t.Errorf("%s: %s says PASS", what, f)
		}
	}
}

// Issue 35, point 7: the damage corpus. The broker lost acked messages
// (one in 50 acked and never written); every file of the run's ledger and
// of its read-back's is emptied, deleted, cut in half or has a byte
// flipped, and neither verify nor report may then say PASS: each either
// refuses (exit 2), or judges and fails, or gives no verdict. Harmless
// damage (LOCK, OPTIONS, an obsolete file) still finds the losses.
func TestDamageCorpusNeverPasses(t *testing.T) {
	c := kfakeCluster(t)
	d, settings := kfakeDriver(t, c)
	base := filepath.Join(t.TempDir(), "base")
	res, err := runner.Run(context.Background(), runner.Config{
		Out: base, Driver: &drivertest.Faulty{Driver: d, Mode: drivertest.DropAfterAck, Every: 50}, DriverSettings: settings,
		Topic:  drivers.TopicSpec{Name: "corpus", Partitions: 2, ReplicationFactor: 1},
		Load:   load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
		Verify: true, ReadIdleTimeout: 2 * time.Second,
	})
	if err != nil || res.Verdict != verifier.Fail || res.Lost == 0 {
		t.Fatalf("the base run: %v, verdict %v: want a FAIL with losses", err, res)
	}
	var files []string
	for _, dir := range []string{"ledger", "reads"} {
		filepath.WalkDir(filepath.Join(base, dir), func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(base, p)
				files = append(files, rel)
			}
			return nil
		})
	}
	sort.Strings(files)
	if len(files) < 10 {
		t.Fatalf("only %d files in the run's ledgers: %v", len(files), files)
	}
	cases := 0
	for _, f := range files {
		for _, dmg := range damages {
			t.Run(f+" "+dmg.name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "run")
				if err := os.CopyFS(out, os.DirFS(base)); err != nil {
					t.Fatal(err)
				}
				if err := dmg.hurt(filepath.Join(out, f)); err != nil {
					t.Fatal(err)
				}
				for _, cmd := range []string{"report", "verify"} {
					var stdout, stderr bytes.Buffer
					code := execute(context.Background(), []string{cmd, "--out", out, "--read-idle-timeout", "2s"}, &stdout, &stderr)
					noPass(t, out, cmd, code, stdout.String(), stderr.String())
				}
			})
			cases++
		}
	}
	t.Logf("%d files x %d damages: %d cases, none passed", len(files), len(damages), cases)
}

// Issue 35, point 7 (the audit's third false PASS): a consistent cut of
// both witnesses, the ledger as it stood 0.9 s into the run (COMMITTED
// copied first, so it is at most one flush behind the log, as a crash
// leaves it), where the broker lost every message acked after 1.6 s. The
// cut ledger holds none of the lost acks, and it passed (lost 0, the
// reads of 0.9-1.6 s counted "unrecorded"). Now the run is aborted (its
// load never recorded its end) and the reads past the crash window make
// the ledger unproven.
func TestConsistentCutNeverPasses(t *testing.T) {
	c := kfakeCluster(t)
	d, settings := kfakeDriver(t, c)
	out := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	snap := filepath.Join(t.TempDir(), "ledger-at-0.9s")
	done := make(chan error, 1)
	time.AfterFunc(900*time.Millisecond, func() { done <- snapshotLedger(runner.LedgerDir(out), snap) })
	res, err := runner.Run(context.Background(), runner.Config{
		Out: out, Driver: tailDropper{Driver: d, cut: start.Add(1600 * time.Millisecond)}, DriverSettings: settings,
		Topic:  drivers.TopicSpec{Name: "cut", Partitions: 2, ReplicationFactor: 1},
		Load:   load.Config{Rate: 500, Duration: 2 * time.Second, MessageSize: 100},
		Verify: true, ReadIdleTimeout: 2 * time.Second,
	})
	if err != nil || res.Verdict != verifier.Fail || res.Lost < 100 {
		t.Fatalf("the whole run: %v, %+v: want a FAIL, the tail lost", err, res)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(runner.LedgerDir(out)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(snap, runner.LedgerDir(out)); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"verify", "--out", out, "--read-idle-timeout", "2s"}, &stdout, &stderr)
	noPass(t, out, "verify", code, stdout.String(), stderr.String())
	r, err := runner.ReadResult(out)
	if err != nil {
		t.Fatalf("verify wrote no result.json: %v\n%s", err, stderr.String())
	}
	t.Logf("cut ledger: verdict %s, lost %d, unrecorded %d (past the crash window %d), reasons %q", r.Verdict, r.Lost, r.Unrecorded, r.UnrecordedPastWindow, r.Reasons)
	if r.Verdict != verifier.Aborted || r.UnrecordedPastWindow == 0 || r.Ledger == nil || r.Ledger.Whole ||
		!strings.Contains(r.Ledger.Reason, "crash window") {
		t.Fatalf("verdict %s, past the window %d, ledger %+v: want aborted, with the ledger unproven for reads past its crash window", r.Verdict, r.UnrecordedPastWindow, r.Ledger)
	}
}

// snapshotLedger copies a ledger being written as a crash would leave
// it: COMMITTED first (it is appended after Pebble commits, so Pebble's
// copy is never behind it), then every other file.
func snapshotLedger(dir, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	copyFile := func(name string) error {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, name), b, 0o644)
	}
	if err := copyFile("COMMITTED"); err != nil {
		return err
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Name() != "COMMITTED" && !e.IsDir() {
			if err := copyFile(e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}
