package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
)

// BenchmarkCheck measures IDs verified per second by the merge of sorted
// scans. Target: at least 5,000,000 IDs/s.
func BenchmarkCheck(b *testing.B) {
	l, err := ledger.Open(b.TempDir(), ledger.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const ids = 2_000_000
	if err := SyntheticRun(l, ids, 4, 16); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := Check(context.Background(), l, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Acked != ids || res.Read != ids || res.Verdict != Pass {
			b.Fatalf("synthetic run judged wrongly: %+v", res)
		}
	}
	b.ReportMetric(float64(ids*int64(b.N))/time.Since(start).Seconds(), "IDs/s")
}
