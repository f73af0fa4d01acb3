package verifier

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// shardSpec is one hand-made shard ledger: its number, producer base,
// how many producers its run description declares, and the producers and
// count of the IDs it records (each sent, acked and read once).
type shardSpec struct {
	index     int
	base      uint32
	producers int
	writeAs   uint32 // the producer its events carry (base unless testing damage)
	ids       int
}

// shardLedgers writes the specs' ledgers and one reads ledger under a
// temporary directory and opens them read-only, as verify does.
func shardLedgers(t *testing.T, specs []shardSpec) Ledgers {
	t.Helper()
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute)
	reads, err := ledger.Open(filepath.Join(dir, "reads"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	var lg Ledgers
	for k, s := range specs {
		d := filepath.Join(dir, fmt.Sprint("shard-", k))
		l, err := ledger.Open(d, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.ids {
			e := ledger.Event{Producer: s.writeAs, Seq: uint64(i), Time: start.Add(time.Duration(i) * time.Millisecond).UnixNano()}
			l.Record(ledger.Send, e)
			l.Record(ledger.Outcome, ledger.Event{Producer: s.writeAs, Seq: uint64(i), Status: ledger.OutcomeAcked, Offset: off, Time: int64(time.Millisecond)})
			reads.Record(ledger.Read, ledger.Event{Producer: s.writeAs, Seq: uint64(i), Offset: off, Status: uint8(message.Valid)})
			off++
		}
		run := ledger.RunInfo{RunID: 7, Driver: "hand", Topic: "t", Producers: s.producers, StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0}),
			LoadStart: start, LoadEnd: start.Add(time.Second), Clean: true,
			Shard: &ledger.ShardInfo{Index: s.index, Count: len(specs), ProducerBase: s.base}}
		if err := l.PutMeta(ledger.MetaRun, run); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := ledger.OpenReadOnly(d, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ro.Close() })
		lg.Shards = append(lg.Shards, Shard{Index: s.index, Dir: d, Ledger: ro})
	}
	if err := reads.PutMeta(MetaReadBack, ReadBackReport{RunID: RunIDText(7), Complete: true, Records: off}); err != nil {
		t.Fatal(err)
	}
	if err := reads.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := ledger.OpenReadOnly(filepath.Join(dir, "reads"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	lg.Reads = ro
	return lg
}

// Each way shard ledgers can fail to belong together, or to vouch for a
// whole load, and the case where they do.
func TestShardLedgersJudged(t *testing.T) {
	cases := []struct {
		name    string
		specs   []shardSpec
		verdict string
		errHas  string
	}{
		{"two whole shards", []shardSpec{{0, 0, 2, 0, 50}, {1, 2, 2, 2, 50}}, Pass, ""},
		{"a shard that sent nothing", []shardSpec{{0, 0, 2, 0, 50}, {1, 2, 2, 2, 0}}, Unproven, ""},
		{"overlapping producers", []shardSpec{{0, 0, 3, 0, 50}, {1, 2, 2, 2, 50}}, "", "overlapping ranges"},
		{"one shard number twice", []shardSpec{{0, 0, 2, 0, 50}, {0, 2, 2, 2, 50}}, "", "both shard 0"},
		{"an event outside its shard's producers", []shardSpec{{0, 0, 2, 0, 50}, {1, 2, 2, 9, 50}}, "", "outside its own producers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := CheckLedgers(context.Background(), shardLedgers(t, tc.specs), Options{})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s %v, want %s", res.Verdict, res.Reasons, tc.verdict)
			}
			if tc.verdict == Unproven && !strings.Contains(res.Ledger.Reason, "sent nothing") {
				t.Fatalf("reason %q", res.Ledger.Reason)
			}
		})
	}
}
