package nats_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/nats"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A partition's stream purged after the run, on the real cluster of
// ACKCHECK_NATS_DIR (issue 35 point 3): the driver says where each
// stream now begins (drivers.LogStarter), the read-back starts there, and
// every message acked below it is lost, listed in lost.jsonl as below the
// log start. Purged to its end, the read used to wait at the purged
// sequence until its idle timeout: INCOMPLETE on every retry. Nothing
// purged: PASS.
func TestRealPurgedStreamIsLost(t *testing.T) {
	n := plainNATS.Get(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name  string
		purge func(start, end int64) int64 // the first sequence kept in partition 0; 0: no purge
	}{
		{"nothing purged", func(int64, int64) int64 { return 0 }},
		{"partition 0 purged to its end", func(_, end int64) int64 { return end }},
		{"partition 0 purged in part", func(start, end int64) int64 { return (start + end) / 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := nats.New(nats.Config{Servers: n.Servers(), MonitorURLs: n.MonitorURLs()})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			topic := fmt.Sprintf("purged-%d-%d", time.Now().UnixNano(), i)
			out := filepath.Join(t.TempDir(), "run")
			if _, err := runner.Run(ctx, runner.Config{
				Out: out, Driver: d, Topic: drivers.TopicSpec{Name: topic, Partitions: 2, ReplicationFactor: 3},
				Load: load.Config{Rate: 500, Duration: time.Second, MessageSize: 100},
			}); err != nil {
				t.Fatal(err)
			}
			run, err := runner.ReadRunInfo(out)
			if err != nil {
				t.Fatal(err)
			}
			ends, err := d.EndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			start := max(run.StartOffsets.Map()[0], 1)
			keep := tc.purge(start, ends.Map()[0])
			if keep > 0 {
				nc, err := natsgo.Connect(n.Servers()[0])
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				js, err := jetstream.New(nc)
				if err != nil {
					t.Fatal(err)
				}
				st, err := js.Stream(ctx, nats.StreamName(topic, 0))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Purge(ctx, jetstream.WithPurgeSequence(uint64(keep))); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := runner.ReadSettings(out)
			began := time.Now()
			res, err := runner.Verify(ctx, out, d, verifier.Rejudge(s.Checks, verifier.Options{}, func(string) bool { return false }, "verify"), 3*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("partition 0: sequences %d-%d, kept from %d; verify took %s: %s, lost %d (below the log start %d), unread %d; %v",
				start, ends.Map()[0]-1, keep, time.Since(began).Round(time.Millisecond), res.Verdict, res.Lost, res.LostBelowLogStart, res.Unread, res.Reasons)
			want := max(0, keep-start) // every sequence of the run below keep was one acked message
			verdict := verifier.Pass
			if want > 0 {
				verdict = verifier.Fail
			}
			if res.Verdict != verdict || !res.ReadBackComplete || res.Lost != want || res.LostBelowLogStart != want || res.Unread != 0 {
				t.Fatalf("verdict %s (want %s), complete %v, lost %d (below the log start %d), unread %d; want %d lost",
					res.Verdict, verdict, res.ReadBackComplete, res.Lost, res.LostBelowLogStart, res.Unread, want)
			}
			f, err := os.Open(filepath.Join(out, verifier.LostFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var lines int64
			for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
				var l verifier.LostLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatal(err)
				}
				if l.Partition != 0 || l.AckedOffset < start || l.AckedOffset >= keep || !l.BelowLogStart || l.LogStart != keep {
					t.Fatalf("lost.jsonl: %+v, want partition 0 below %d", l, keep)
				}
			}
			if lines != want {
				t.Fatalf("lost.jsonl: %d lines, want %d", lines, want)
			}
		})
	}
}
