package ledger

import (
	"testing"
	"time"
)

// BenchmarkRecordAck measures acks recorded per second, including the
// flushes to Pebble (synced every FlushInterval, the default). Run with
// -cpu 1 for the one-core figure. Target: at least 1,000,000 acks/s.
func BenchmarkRecordAck(b *testing.B) {
	l, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p := uint32(i & 3)
		seq := uint64(i >> 2)
		l.Record(Outcome, Event{Producer: p, Seq: seq, Status: OutcomeAcked,
			Partition: int32(seq & 15), Offset: int64(seq >> 4), Time: 2_000_000 + int64(i&1023)})
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acks/s")
}

// BenchmarkScan measures events decoded and merged per second by a Cursor.
func BenchmarkScan(b *testing.B) {
	l, err := Open(b.TempDir(), Options{FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const n = 1 << 20
	for i := 0; i < n; i++ {
		l.Record(Outcome, Event{Producer: uint32(i & 3), Seq: uint64(i >> 2), Offset: int64(i), Time: int64(i)})
		if i%50000 == 0 {
			l.Flush()
		}
	}
	l.Flush()
	b.ResetTimer()
	start := time.Now()
	total := 0
	for i := 0; i < b.N; i++ {
		c, _ := l.Scan(Outcome)
		for {
			if _, ok := c.Next(); !ok {
				break
			}
			total++
		}
		c.Close()
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "events/s")
}
