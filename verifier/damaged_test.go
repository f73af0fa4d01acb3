package verifier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// damagedTopic is one partition in memory whose driver served some
// offsets in a unit whose checksum failed (a Kafka batch whose CRC does
// not match): those it delivers Damaged, or, for unparsed, not at all,
// and reports the span.
type damagedTopic struct {
	drivers.Driver
	values   [][]byte
	damaged  map[int64]bool
	unparsed bool
}

func (m *damagedTopic) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	return drivers.OffsetsOf(map[int32]int64{0: int64(len(m.values))}), nil
}

func (m *damagedTopic) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep := drivers.NewReadReport(spec)
	pr := rep.At(0)
	var span *drivers.DamagedSpan
	for o := pr.Next; o < pr.Target; o++ {
		if m.damaged[o] {
			if span == nil {
				rep.AddDamaged(0, drivers.DamagedSpan{First: o, Why: "stored CRC 00000001, computed 00000002"})
				span = &rep.Damaged[0][len(rep.Damaged[0])-1]
			}
			span.Last = o
			if m.unparsed {
				continue
			}
			span.Records++
		} else {
			span = nil
		}
		if err := fn(drivers.Record{Pos: drivers.Position{Partition: 0, Offset: o}, Value: m.values[o], Damaged: m.damaged[o]}); err != nil {
			return rep, err
		}
		pr.Records++
	}
	pr.Next, pr.Complete = pr.Target, true
	return rep, nil
}

// A record the broker served in a batch whose CRC failed is corrupt even
// when its value's own checksum still matches, and its message, with no
// intact copy, is lost: the verdict fails. Records it could not parse are
// lost. With no damage the same topic passes. 20 messages acked at
// offsets 0-19, a batch at 5-9.
func TestDamagedRecordsAreCorrupt(t *testing.T) {
	batch := map[int64]bool{5: true, 6: true, 7: true, 8: true, 9: true}
	tests := []struct {
		name     string
		damaged  map[int64]bool
		unparsed bool
		verdict  string
		corrupt  int64
		lost     int64
		records  int64 // ReadBackReport.DamagedRecords
		spans    int
		extra    int // records of another run after the 20, at 20 on
	}{
		{name: "no damage", verdict: Pass},
		{name: "a batch fails its CRC, values intact", damaged: batch, verdict: Fail, corrupt: 5, lost: 5, records: 5, spans: 1},
		{name: "a batch fails its CRC, records unparsed", damaged: batch, unparsed: true, verdict: Fail, lost: 5, spans: 1},
		{name: "a batch of no acked message fails its CRC, unparsed", damaged: map[int64]bool{20: true, 21: true}, unparsed: true, extra: 2, verdict: Fail, spans: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			run, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			start := time.Now().Add(-time.Minute)
			info := ledger.RunInfo{RunID: 1, Driver: "memory", Topic: "t", Producers: 1,
				StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0}), LoadStart: start, LoadEnd: start.Add(time.Second), Clean: true}
			topic := &damagedTopic{damaged: tc.damaged, unparsed: tc.unparsed}
			enc := message.NewEncoder(100)
			for i := uint64(0); i < 20; i++ {
				topic.values = append(topic.values, enc.Encode(nil, message.ID{Run: 1, Seq: i}, start.UnixNano()))
				run.Record(ledger.Send, ledger.Event{Seq: i, Time: start.UnixNano()})
				run.Record(ledger.Outcome, ledger.Event{Seq: i, Status: ledger.OutcomeAcked, Offset: int64(i), Time: int64(time.Millisecond)})
			}
			for i := range tc.extra {
				topic.values = append(topic.values, enc.Encode(nil, message.ID{Run: 2, Seq: uint64(i)}, start.UnixNano()))
			}
			if err := run.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := run.PutMeta(ledger.MetaRun, info); err != nil {
				t.Fatal(err)
			}
			reads, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reads.Close()
			rb, err := ReadBack(ctx, topic, reads, info, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckLedgers(ctx, Ledgers{Run: run, Reads: reads}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: corrupt %d, lost %d; %v; damaged %v", res.Verdict, res.Corrupt, res.Lost, res.Reasons, rb.Damaged)
			if res.Verdict != tc.verdict || res.Corrupt != tc.corrupt || res.Lost != tc.lost {
				t.Fatalf("verdict %s, corrupt %d, lost %d; want %s, %d, %d", res.Verdict, res.Corrupt, res.Lost, tc.verdict, tc.corrupt, tc.lost)
			}
			if rb.DamagedRecords != tc.records || len(rb.Damaged[0]) != tc.spans || !rb.Complete {
				t.Fatalf("read-back: %d damaged records, spans %v, complete %v; want %d, %d spans, complete", rb.DamagedRecords, rb.Damaged, rb.Complete, tc.records, tc.spans)
			}
			var sum strings.Builder
			res.WriteSummary(&sum)
			first, last := int64(-1), int64(-1)
			for o := range tc.damaged {
				if first < 0 || o < first {
					first = o
				}
				last = max(last, o)
			}
			span := fmt.Sprintf("partition 0: offsets %d-%d, ", first, last)
			if said := strings.Contains(sum.String(), span); said != (tc.spans > 0) || len(res.ReadBackDamaged[0]) != tc.spans {
				t.Fatalf("result's damaged spans %v; the summary names %q: %v\n%s", res.ReadBackDamaged, span, said, sum.String())
			}
			if tc.spans > 0 {
				if s := rb.Damaged[0][0]; s.First != first || s.Last != last {
					t.Fatalf("damaged span %+v, want offsets %d-%d", s, first, last)
				}
			}
		})
	}
}
