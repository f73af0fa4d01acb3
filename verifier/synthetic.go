package verifier

import (
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// SyntheticRun fills an empty ledger with a finished, fully read-back run
// of ids messages over producers and partitions, every one acked and read
// once: what Check sees after a clean run of that size. It exists for
// benchmarks (go test -bench and `ackcheck bench`).
func SyntheticRun(l *ledger.Ledger, ids int64, producers, partitions int) error {
	start := time.Now().Add(-time.Hour)
	run := ledger.RunInfo{RunID: 1, Driver: "synthetic", Topic: "bench", Producers: producers,
		StartOffsets: drivers.MakeOffsets(partitions), LoadStart: start, Clean: true}
	for p := 0; p < partitions; p++ {
		run.StartOffsets.Set(int32(p), 0)
	}
	interval := time.Hour / time.Duration(max(ids, 1))
	offsets := make([]int64, partitions)
	for i := int64(0); i < ids; i++ {
		p := uint32(i % int64(producers))
		seq := uint64(i / int64(producers))
		part := int32(i % int64(partitions))
		intended := start.Add(time.Duration(i) * interval)
		off := offsets[part]
		offsets[part]++
		l.Record(ledger.Send, ledger.Event{Producer: p, Seq: seq, Time: intended.UnixNano(), Partition: part})
		l.Record(ledger.Outcome, ledger.Event{Producer: p, Seq: seq, Status: ledger.OutcomeAcked,
			Partition: part, Offset: off, Time: int64(2*time.Millisecond + time.Duration(i%1000)*time.Microsecond)})
		if err := l.Record(ledger.Read, ledger.Event{Producer: p, Seq: seq, Partition: part, Offset: off,
			Time: intended.Add(time.Hour).UnixNano(), Status: uint8(message.Valid)}); err != nil {
			return err
		}
	}
	run.LoadEnd = start.Add(time.Hour)
	if err := l.Flush(); err != nil {
		return err
	}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		return fmt.Errorf("synthetic run: %w", err)
	}
	return l.PutMeta(MetaReadBack, ReadBackReport{At: time.Now(), Complete: true, Records: ids})
}
