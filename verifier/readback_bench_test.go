package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// memTopic is a topic held in memory: only EndOffsets and Read are
// implemented (the embedded nil Driver panics on anything else).
type memTopic struct {
	drivers.Driver
	parts [][][]byte // per partition, the values in offset order
}

func (m *memTopic) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	ends := drivers.MakeOffsets(len(m.parts))
	for p, vs := range m.parts {
		ends.Set(int32(p), int64(len(vs)))
	}
	return ends, nil
}

// Read delivers a batch of each partition in turn, as a Kafka client's
// fetches do.
func (m *memTopic) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	const batch = 64
	rep := drivers.ReadReport{Partitions: make([]drivers.PartitionRead, len(m.parts))}
	next := make([]int, len(m.parts))
	for more := true; more; {
		more = false
		for p, vs := range m.parts {
			end := min(next[p]+batch, len(vs))
			for ; next[p] < end; next[p]++ {
				if err := fn(drivers.Record{Pos: drivers.Position{Partition: int32(p), Offset: int64(next[p])}, Value: vs[next[p]]}); err != nil {
					return rep, err
				}
			}
			more = more || next[p] < len(vs)
		}
	}
	for p, vs := range m.parts {
		rep.Partitions[p] = drivers.PartitionRead{Asked: true, Records: int64(len(vs)), Next: int64(len(vs)), Target: int64(len(vs)), Complete: true}
	}
	return rep, nil
}

// BenchmarkReadBackAndCheck is ackcheck's own cost of `verify` per message:
// decoding and checking each value, recording the read in the ledger, and
// the verdict's merge, with the topic in memory instead of a broker, so
// that no client's cost is in it (bench --peer gives the ratio against a
// bare consumer; this gives what ackcheck adds, without that run's noise).
// 256 Ki messages of 1 KiB, 4 producers, 16 partitions.
func BenchmarkReadBackAndCheck(b *testing.B) {
	const ids, producers, partitions, size = 1 << 18, 4, 16, 1024
	l, err := ledger.Open(b.TempDir(), ledger.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	start := time.Now().Add(-time.Hour)
	run := ledger.RunInfo{RunID: 1, Driver: "memory", Topic: "bench", Producers: producers,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{}), LoadStart: start, LoadEnd: start.Add(time.Minute), Clean: true}
	topic := &memTopic{parts: make([][][]byte, partitions)}
	enc := message.NewEncoder(size)
	for i := int64(0); i < ids; i++ {
		id := message.ID{Run: run.RunID, Producer: uint32(i % producers), Seq: uint64(i / producers)}
		part := int32(i % partitions)
		intended := start.Add(time.Duration(i) * time.Minute / ids)
		off := int64(len(topic.parts[part]))
		topic.parts[part] = append(topic.parts[part], enc.Encode(nil, id, intended.UnixNano()))
		l.Record(ledger.Send, ledger.Event{Producer: id.Producer, Seq: id.Seq, Time: intended.UnixNano(), Partition: part})
		if err := l.Record(ledger.Outcome, ledger.Event{Producer: id.Producer, Seq: id.Seq, Status: ledger.OutcomeAcked,
			Partition: part, Offset: off, Time: int64(2 * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
	}
	for p := range partitions {
		run.StartOffsets.Set(int32(p), 0)
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(ids * size)
	b.ResetTimer()
	for b.Loop() {
		rb, err := ReadBack(ctx, topic, l, run, time.Second)
		if err != nil || rb.Records != ids || !rb.Complete {
			b.Fatalf("read-back: %d records, complete %v, %v", rb.Records, rb.Complete, err)
		}
		res, err := Check(ctx, l, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Acked != ids || res.Read != ids || res.Verdict != Pass {
			b.Fatalf("judged wrongly: %+v", res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ids*int64(b.N)), "ns/ID")
}
