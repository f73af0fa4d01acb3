package verifier

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
)

// SyntheticRun is what the benchmarks measure Check on, so it must be
// the clean run it says: every message sent once, acked and read once,
// in order, over every producer and partition; judged, it passes with
// nothing lost, duplicated, reordered or unaccounted, publish latencies
// of 2 to 3 ms and an hour-long load. A synthetic run that was not clean
// would make the benchmarks time a different path than a real one.
func TestSyntheticRunIsACleanRun(t *testing.T) {
	for _, tc := range []struct {
		ids                   int64
		producers, partitions int
	}{
		{1000, 3, 4},
		{7, 1, 1},
		{1, 2, 3}, // fewer messages than partitions: some partitions stay empty
	} {
		l, err := ledger.Open(filepath.Join(t.TempDir(), "l"), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := SyntheticRun(l, tc.ids, tc.producers, tc.partitions); err != nil {
			t.Fatal(err)
		}
		var run ledger.RunInfo
		if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
			t.Fatal(err)
		}
		if run.Producers != tc.producers || run.StartOffsets.Len() != tc.partitions || !run.Clean {
			t.Errorf("%+v: run info %d producers, start offsets %v, clean %v", tc, run.Producers, run.StartOffsets, run.Clean)
		}
		res, err := Check(context.Background(), l, Options{})
		l.Close()
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		// The sends are spread evenly over the hour: no stretch without
		// acks much longer than the interval between two sends.
		if interval := time.Hour / time.Duration(tc.ids); tc.ids > 1 && res.LongestNoAckMs > 2*float64(interval/time.Millisecond) {
			t.Errorf("%+v: longest without acks %.0f ms, want about the %s between sends", tc, res.LongestNoAckMs, interval)
		}
		if res.Verdict != Pass || res.Sent != tc.ids || res.Acked != tc.ids || res.Read != tc.ids || res.RecordsRead != tc.ids ||
			res.Lost != 0 || res.Duplicates != 0 || res.Reordered != 0 || res.Phantom != 0 || res.Corrupt != 0 || res.Unrecorded != 0 || !res.ReadBackComplete {
			t.Errorf("%+v: verdict %s, sent %d acked %d read %d of %d records, lost %d dup %d reordered %d phantom %d corrupt %d unrecorded %d, complete %v (%v)",
				tc, res.Verdict, res.Sent, res.Acked, res.Read, res.RecordsRead, res.Lost, res.Duplicates, res.Reordered, res.Phantom, res.Corrupt, res.Unrecorded, res.ReadBackComplete, res.Reasons)
		}
		if res.Publish.Count != tc.ids || res.Publish.P50 < 2 || res.Publish.Max >= 3.01 {
			t.Errorf("%+v: publish latency %+v, want %d between 2 and 3 ms", tc, res.Publish, tc.ids)
		}
		if d := res.LoadEnd.Sub(res.LoadStart); d != time.Hour {
			t.Errorf("%+v: load of %s, want an hour", tc, d)
		}
	}
}
