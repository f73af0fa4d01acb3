package drivertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// Harness connects the suite to one driver and one running cluster.
type Harness struct {
	// NewDriver returns a connected driver. The suite closes it.
	NewDriver func(t *testing.T) drivers.Driver
	// Partitions and ReplicationFactor of the topics the suite creates.
	Partitions, ReplicationFactor int
	// Rate and Duration of each run: small, the suite runs several.
	Rate     float64
	Duration time.Duration
}

// RunOnce runs ackcheck end to end through d with the harness's load and
// returns the verdict. Each call uses a fresh topic.
func (h Harness) RunOnce(t *testing.T, d drivers.Driver, check verifier.Options) *verifier.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("conf-%s-%d", sanitize(t.Name()), time.Now().UnixNano())
	res, err := runner.Run(ctx, runner.Config{
		Out:    filepath.Join(t.TempDir(), "run"),
		Driver: d,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: h.Partitions, ReplicationFactor: h.ReplicationFactor},
		Load: load.Config{
			Rate: h.Rate, Duration: h.Duration, Producers: 2, MessageSize: 256,
			LiveRead: true, DrainTimeout: 30 * time.Second,
		},
		Verify:          true,
		Check:           check,
		ReadIdleTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			out[i] = '-'
		}
	}
	return string(out)
}

// Run is the conformance suite: the Driver contract checked directly
// (Contract), a clean run where every class is zero, and one run per
// misbehavior where exactly its class fires.
func Run(t *testing.T, h Harness) {
	t.Run("contract", func(t *testing.T) { Contract(t, h) })
	t.Run("clean", func(t *testing.T) {
		d := h.NewDriver(t)
		defer d.Close()
		res := h.RunOnce(t, d, verifier.Options{NoDuplicates: true, Ordered: true})
		AssertClean(t, res)
	})
	tests := []struct {
		mode  Misbehavior
		check verifier.Options
		// count returns the class counter that must equal the misbehavior.
		count func(*verifier.Result) int64
		exact bool
	}{
		{DropAfterAck, verifier.Options{}, func(r *verifier.Result) int64 { return r.Lost }, true},
		{Duplicate, verifier.Options{NoDuplicates: true}, func(r *verifier.Result) int64 { return r.Duplicates }, true},
		{Corrupt, verifier.Options{}, func(r *verifier.Result) int64 { return r.Corrupt }, true},
		{Phantom, verifier.Options{}, func(r *verifier.Result) int64 { return r.Phantom }, true},
		// A held-back message breaks order once per hold, at the first later
		// sequence of its partition; HoldFor spans several, so at least one.
		{Reorder, verifier.Options{Ordered: true}, func(r *verifier.Result) int64 { return r.Reordered }, false},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String(), func(t *testing.T) {
			f := &Faulty{Driver: h.NewDriver(t), Mode: tc.mode, Every: 97}
			defer f.Close()
			res := h.RunOnce(t, f, tc.check)
			got, want := tc.count(res), f.Done()
			if want == 0 {
				t.Fatal("the driver never misbehaved: the load was too small")
			}
			t.Logf("%s: counted %d, misbehaved %d, verdict %s %v", tc.mode, got, want, res.Verdict, res.Reasons)
			if (tc.exact && got != want) || (!tc.exact && (got < 1 || got > want)) {
				t.Fatalf("%s: class counted %d, driver misbehaved %d times\n%s", tc.mode, got, want, summary(res))
			}
			if res.Verdict != verifier.Fail {
				t.Fatalf("%s: verdict %q, want fail\n%s", tc.mode, res.Verdict, summary(res))
			}
			if len(res.Samples) == 0 {
				t.Fatalf("%s: no sample IDs reported", tc.mode)
			}
			// Only the provoked class fires.
			others := map[string]int64{"lost": res.Lost, "corrupt": res.Corrupt, "phantom": res.Phantom, "duplicates": res.Duplicates}
			own := map[Misbehavior]string{DropAfterAck: "lost", Corrupt: "corrupt", Phantom: "phantom", Duplicate: "duplicates"}[tc.mode]
			for name, n := range others {
				if name != own && n != 0 {
					t.Errorf("%s: %s = %d, want 0\n%s", tc.mode, name, n, summary(res))
				}
			}
		})
	}
}

// AssertClean fails t unless every class of res is zero and it passed.
func AssertClean(t *testing.T, res *verifier.Result) {
	t.Helper()
	bad := map[string]int64{
		"lost": res.Lost, "corrupt": res.Corrupt, "phantom": res.Phantom, "duplicates": res.Duplicates,
		"reordered": res.Reordered, "indeterminate": res.Indeterminate, "not_written": res.NotWritten,
		"failed": res.Failed, "unrecorded": res.Unrecorded, "foreign": res.Foreign,
	}
	if res.Shed == nil {
		t.Errorf("shed unknown on a clean run: the load did not record its end")
	} else {
		bad["shed"] = *res.Shed
	}
	for name, n := range bad {
		if n != 0 {
			t.Errorf("%s = %d on a clean run", name, n)
		}
	}
	if res.Verdict != verifier.Pass || res.Sent == 0 || res.Acked != res.Sent || res.Read != res.Acked {
		t.Errorf("clean run: verdict %s, sent %d, acked %d, read %d", res.Verdict, res.Sent, res.Acked, res.Read)
	}
	if res.Publish.Count != res.Acked || res.Publish.P50 <= 0 || res.E2E.Count == 0 {
		t.Errorf("latencies missing: publish %+v, e2e %+v", res.Publish, res.E2E)
	}
	if t.Failed() {
		t.Log(summary(res))
	}
}

func summary(r *verifier.Result) string {
	var b strings.Builder
	r.WriteSummary(&b)
	return b.String()
}
