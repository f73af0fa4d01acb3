package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

// passedRun is a run directory on kfake whose verdict is PASS.
func passedRun(t *testing.T) string {
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
	res, err := Run(context.Background(), Config{Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1},
		Load: load.Config{Rate: 500, Duration: 500 * time.Millisecond, MessageSize: 100}, Verify: true})
	if err != nil || res.Verdict != verifier.Pass {
		t.Fatalf("the run: %v, %v", err, res)
	}
	return out
}

// saysPass names the files in out that state a PASS.
func saysPass(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	if r, err := ReadResult(out); err == nil && r.Verdict == verifier.Pass {
		got = append(got, "result.json")
	}
	for _, f := range []string{"report.md", "report.html"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err == nil && bytes.Contains(b, []byte("PASS")) {
			got = append(got, f)
		}
	}
	return got
}

// Issue 35, point 5: a verify killed once its new read-back replaced
// reads/, before its verdict was written, leaves no file saying PASS:
// every file of the last verdict went stale first (the reports used to
// stay, saying PASS beside a read-back they were not judged from). The
// next report judges the new evidence and clears the stale files.
func TestVerifyKilledAfterItsReadBackLeavesNoPass(t *testing.T) {
	out := passedRun(t)
	if err := os.CopyFS(stagedReadsDir(out), os.DirFS(ReadsDir(out))); err != nil {
		t.Fatal(err)
	}
	if err := replaceReads(out); err != nil { // where the kill lands
		t.Fatal(err)
	}
	if got := saysPass(t, out); len(got) != 0 {
		t.Fatalf("after the read-back was replaced, %v still say PASS", got)
	}
	for _, f := range verdictFiles() {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s of the last verdict is still there, not stale", f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.md"+StaleSuffix)); err != nil {
		t.Fatalf("the last report was not kept as stale: %v", err)
	}
	res, err := Report(context.Background(), out, verifier.Options{})
	if err != nil || res.Verdict != verifier.Pass {
		t.Fatalf("report on the new read-back: %v, %v", err, res)
	}
	stale, _ := filepath.Glob(filepath.Join(out, "*"+StaleSuffix))
	if len(stale) != 0 || len(saysPass(t, out)) != 3 {
		t.Fatalf("after a verdict written whole: stale files %v, files saying PASS %v", stale, saysPass(t, out))
	}
}

// Issue 35, point 5: verify and report refused because the ledger was
// damaged after a PASS (COMMITTED removed) leave no file saying PASS, and
// change no byte of the ledger; a shard's directory is refused before the
// topic is read.
func TestRefusedVerifyLeavesNoPass(t *testing.T) {
	for _, cmd := range []string{"verify", "report"} {
		t.Run(cmd, func(t *testing.T) {
			out := passedRun(t)
			if err := os.Remove(filepath.Join(LedgerDir(out), "COMMITTED")); err != nil {
				t.Fatal(err)
			}
			var err error
			if cmd == "verify" {
				_, err = Verify(context.Background(), out, nil, verifier.Options{}, time.Second, nil)
			} else {
				_, err = Report(context.Background(), out, verifier.Options{})
			}
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte("renamed *.stale")) {
				t.Fatalf("%s of a damaged ledger: %v, want a refusal saying the verdict went stale", cmd, err)
			}
			if got := saysPass(t, out); len(got) != 0 {
				t.Fatalf("after the refusal, %v still say PASS", got)
			}
			if _, err := ReadResult(out); err == nil {
				t.Fatal("a result.json is still there for matrix and compare to count")
			}
		})
	}
	t.Run("a shard's directory", func(t *testing.T) {
		out := passedRun(t)
		l, err := ledger.Open(LedgerDir(out), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var run ledger.RunInfo
		if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
			t.Fatal(err)
		}
		run.Shard = &ledger.ShardInfo{Index: 1, Count: 2}
		if err := l.PutMeta(ledger.MetaRun, run); err != nil {
			t.Fatal(err)
		}
		l.Close()
		// A nil driver: the refusal must come before anything is read.
		_, err = Verify(context.Background(), out, nil, verifier.Options{}, time.Second, nil)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("is shard 1 of 2")) {
			t.Fatalf("verify of a shard's directory: %v", err)
		}
		if _, err := os.Stat(stagedReadsDir(out)); err == nil {
			t.Fatal("the topic was read into the shard's directory before the refusal")
		}
	})
}
