package ledger

import (
	"sync"
	"syscall"
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

// BenchmarkRecordSendAndOutcome records what the load records per message
// (a send, then its acked outcome), from four producers at once, as 1 KiB
// messages at about 300,000 msg/s give them: times a few microseconds
// apart, offsets rising per partition. cpu-ns/msg is the process's user+sys
// CPU, Pebble's flushes and compactions included, so it is comparable with
// bench --peer's CPU-s per 1M messages.
func BenchmarkRecordSendAndOutcome(b *testing.B) {
	l, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	const producers = 4
	per := b.N/producers + 1
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for p := uint32(0); p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := int64(1_700_000_000_000_000_000)
			for seq := uint64(0); seq < uint64(per); seq++ {
				sent := t0 + int64(seq)*13_000 + int64(seq*7919%997)
				part := int32((seq*producers + uint64(p)) % 16)
				l.Record(Send, Event{Producer: p, Seq: seq, Time: sent, Partition: part})
				l.Record(Outcome, Event{Producer: p, Seq: seq, Status: OutcomeAcked, Partition: part,
					Offset: int64(seq * producers / 16), Time: sent + 4_000_000 + int64(seq*104729%50_000)})
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	msgs := float64(per * producers)
	b.ReportMetric(float64(cpuTime()-cpu0)/msgs, "cpu-ns/msg")
	b.ReportMetric(msgs/time.Since(start).Seconds(), "msgs/s")
}

// cpuTime is the process's user+sys CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProveWhole measures what OpenReadOnly's proof (checkWhole: one
// pass over every key, each fragment's count read) costs next to what a
// verdict's scan of the same ledger costs, in one run: proof/scan is the
// share of verify's ledger reading that the proof adds.
func BenchmarkProveWhole(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	const n = 2 << 20 // messages: a send and an outcome each
	for i := 0; i < n; i++ {
		p, seq := uint32(i&3), uint64(i>>2)
		l.Record(Send, Event{Producer: p, Seq: seq, Time: int64(i)})
		l.Record(Outcome, Event{Producer: p, Seq: seq, Offset: int64(i), Time: int64(i), Status: OutcomeAcked})
		if i%20000 == 19999 {
			l.Flush()
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	var prove, scan time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := OpenReadOnly(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !r.Proof().Whole {
			b.Fatal("not whole")
		}
		opened := time.Now()
		for _, k := range []Kind{Send, Outcome} {
			c, err := r.Scan(k)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, ok := c.NextRun(); !ok {
					break
				}
			}
			c.Close()
		}
		prove += opened.Sub(start)
		scan += time.Since(opened)
		r.Close()
	}
	b.ReportMetric(float64(prove.Milliseconds())/float64(b.N), "open+prove-ms")
	b.ReportMetric(float64(scan.Milliseconds())/float64(b.N), "scan-ms")
	b.ReportMetric(float64(prove)/float64(scan), "prove/scan")
}
