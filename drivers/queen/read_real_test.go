package queen_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/queen"
)

// TestRealQueenReadManyAgreesWithReadOne holds the read of many partitions
// in one query against the read of one partition a page at a time: a
// partition of more than a page (5,200 rows) is read alone, nine small ones
// together; then windows [7, 27) of all ten, read together, must give at
// each offset the value the first read gave there, and a window past a
// partition's end must stop short with a note.
func TestRealQueenReadManyAgreesWithReadOne(t *testing.T) {
	q := lazyQueen.Get(t)
	d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("readmany-%d", time.Now().UnixNano())
	if _, err := d.EnsureTopic(ctx, drivers.TopicSpec{Name: topic, Partitions: 10, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	pr, err := d.NewProducer(ctx, topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	sends := map[int32]int{0: 5200}
	for p := int32(1); p < 10; p++ {
		sends[p] = 30
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for p, n := range sends {
		for i := 0; i < n; i++ {
			wg.Add(1)
			pr.Publish(ctx, drivers.Message{Value: []byte(fmt.Sprintf("p%d-%d", p, i)), Partition: p}, func(o drivers.Outcome) {
				if o.Status != drivers.Acked {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				wg.Done()
			})
		}
	}
	wg.Wait()
	if err := pr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if failed > 0 {
		t.Fatalf("%d pushes not acked", failed)
	}
	end, err := d.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	from := drivers.MakeOffsets(len(sends))
	for p, n := range sends {
		if e, _ := end.Get(p); e != int64(n) {
			t.Fatalf("partition %d ends at %d, %d pushed", p, e, n)
		}
		from.Set(p, 0)
	}
	full := map[int32][][]byte{}
	rep, err := d.Read(ctx, drivers.ReadSpec{Topic: topic, From: from, To: end}, func(r drivers.Record) error {
		if int64(len(full[r.Pos.Partition])) != r.Pos.Offset {
			return fmt.Errorf("partition %d: offset %d after %d records", r.Pos.Partition, r.Pos.Offset, len(full[r.Pos.Partition]))
		}
		full[r.Pos.Partition] = append(full[r.Pos.Partition], bytes.Clone(r.Value))
		return nil
	})
	if err != nil || !rep.Complete() {
		t.Fatalf("read of everything: %v, %+v", err, rep.Partitions)
	}
	for p, n := range sends {
		if len(full[p]) != n {
			t.Errorf("partition %d: %d read, %d pushed", p, len(full[p]), n)
		}
	}

	end3, _ := end.Get(3)
	lo, hi := map[int32]int64{}, map[int32]int64{}
	for p := range sends {
		lo[p], hi[p] = 7, 27
	}
	hi[3] = end3 + 5 // past its end
	got := map[int32]int64{}
	rep, err = d.Read(ctx, drivers.ReadSpec{Topic: topic, From: drivers.OffsetsOf(lo), To: drivers.OffsetsOf(hi)}, func(r drivers.Record) error {
		p := r.Pos.Partition
		if r.Pos.Offset != lo[p]+got[p] {
			return fmt.Errorf("partition %d: offset %d, want %d", p, r.Pos.Offset, lo[p]+got[p])
		}
		if !bytes.Equal(r.Value, full[p][r.Pos.Offset]) {
			return fmt.Errorf("partition %d offset %d: %q read together, %q read alone", p, r.Pos.Offset, r.Value, full[p][r.Pos.Offset])
		}
		got[p]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range sends {
		want := hi[p] - lo[p]
		if p == 3 {
			want = end3 - lo[3]
		}
		r, _ := rep.Get(p)
		if got[p] != want || r.Records != want || r.Next != lo[p]+want {
			t.Errorf("partition %d: %d delivered, report %+v; want %d", p, got[p], r, want)
		}
		if note := rep.Note(p); (p == 3) == r.Complete || (p == 3) != (note != "") {
			t.Errorf("partition %d: complete %v, note %q", p, r.Complete, note)
		}
	}
}
