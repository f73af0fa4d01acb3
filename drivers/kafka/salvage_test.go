package kafka

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/message"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeBatch is a record batch (magic 2, uncompressed) at offset base
// with one record per value, its length and CRC set as Kafka writes them.
func encodeBatch(base int64, values [][]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		body := r.AppendTo(nil) // with Length 0: one byte of varint
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: 1_800_000_000_000, MaxTimestamp: 1_800_000_000_000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: recs}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[batchLengthAt:], uint32(len(raw)-batchLengthAt-4))
	binary.BigEndian.PutUint32(raw[batchCRCAt:], crc32.Checksum(raw[batchAttrsAt:], crc32c))
	return raw
}

// fakeLog is n batches of size ackcheck messages each (run 7, producer 0,
// sequence = offset), as a partition's bytes, and where each batch begins.
func fakeLog(n, size int) (log []byte, starts []int) {
	enc := message.NewEncoder(120)
	for b := range n {
		var vs [][]byte
		for i := range size {
			vs = append(vs, enc.Encode(nil, message.ID{Run: 7, Seq: uint64(b*size + i)}, 0))
		}
		starts = append(starts, len(log))
		log = append(log, encodeBatch(int64(b*size), vs)...)
	}
	return log, starts
}

// A batch whose bytes changed after it was written is found by its CRC,
// and each of its records that still parses is Damaged; its neighbours'
// records are intact, and the read goes on after it. Three batches of 10
// records at offsets 0-9, 10-19, 20-29; a bit is flipped in the second.
func TestSalvageBatches(t *testing.T) {
	const recOff = batchHeaderLength + 40 // inside the second batch's first record's value
	tests := []struct {
		name    string
		flip    func(log []byte, starts []int) []byte
		from    int64
		damaged []int64 // offsets delivered Damaged
		intact  int     // records delivered intact
		spans   []drivers.DamagedSpan
		next    int64
		err     string
	}{
		{name: "no damage", flip: func(l []byte, _ []int) []byte { return l }, intact: 30, next: 30},
		{name: "a bit of a value", flip: func(l []byte, s []int) []byte { l[s[1]+recOff] ^= 0x10; return l },
			damaged: offsets(10, 19), intact: 20, spans: []drivers.DamagedSpan{{First: 10, Last: 19, Records: 10}}, next: 30},
		{name: "a bit of the stored CRC", flip: func(l []byte, s []int) []byte { l[s[1]+batchCRCAt+2] ^= 0x01; return l },
			damaged: offsets(10, 19), intact: 20, spans: []drivers.DamagedSpan{{First: 10, Last: 19, Records: 10}}, next: 30},
		{name: "from the middle of the damaged batch", flip: func(l []byte, s []int) []byte { l[s[1]+recOff] ^= 0x10; return l }, from: 15,
			damaged: offsets(15, 19), intact: 10, spans: []drivers.DamagedSpan{{First: 10, Last: 19, Records: 5}}, next: 30},
		{name: "the broker's cut inside the last batch", flip: func(l []byte, s []int) []byte { l[s[1]+recOff] ^= 0x10; return l[:len(l)-7] },
			damaged: offsets(10, 19), intact: 10, spans: []drivers.DamagedSpan{{First: 10, Last: 19, Records: 10}}, next: 20},
		{name: "a damaged magic", flip: func(l []byte, s []int) []byte { l[s[1]+batchMagicAt] = 9; return l },
			damaged: offsets(10, 19), intact: 20, spans: []drivers.DamagedSpan{{First: 10, Last: 19, Records: 10}}, next: 30},
		{name: "a damaged magic in the last batch", flip: func(l []byte, s []int) []byte { l[s[2]+batchMagicAt] = 9; return l },
			damaged: offsets(20, 29), intact: 20, spans: []drivers.DamagedSpan{{First: 20, Last: 29, Records: 10}}, next: 30},
		{name: "a damaged magic and length end the cut", flip: func(l []byte, s []int) []byte {
			l[s[1]+batchMagicAt] = 9
			l[s[1]+batchLengthAt+3]--
			return l
		}, intact: 10, next: 10},
		{name: "a damaged magic and length at the start", flip: func(l []byte, s []int) []byte {
			l[s[1]+batchMagicAt] = 9
			l[s[1]+batchLengthAt+3]--
			return l
		}, from: 10, next: 10, err: "magic 9"},
		{name: "a length too short at the start", flip: func(l []byte, s []int) []byte {
			copy(l[s[1]+batchLengthAt:], []byte{0, 0, 0, 9})
			return l
		}, from: 10, next: 10, err: "shorter than a batch header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, starts := fakeLog(3, 10)
			log = tc.flip(log, starts)
			if tc.from >= 10 {
				log = log[starts[1]:] // the broker sends from the batch holding the offset
			}
			s, err := salvageBatches("t", 0, tc.from, log)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var damaged []int64
			intact := 0
			for i, r := range s.records {
				if i > 0 && r.Pos.Offset != s.records[i-1].Pos.Offset+1 {
					t.Fatalf("offset %d after %d", r.Pos.Offset, s.records[i-1].Pos.Offset)
				}
				dm := message.Decode(r.Value, 7)
				if r.Damaged {
					damaged = append(damaged, r.Pos.Offset)
					continue
				}
				if dm.Status != message.Valid || int64(dm.ID.Seq) != r.Pos.Offset {
					t.Fatalf("intact record at %d: %s seq %d", r.Pos.Offset, dm.Status, dm.ID.Seq)
				}
				intact++
			}
			for i := range s.spans {
				if !strings.Contains(s.spans[i].Why, "stored CRC ") {
					t.Errorf("span %+v: its Why does not give the CRCs", s.spans[i])
				}
				s.spans[i].Why = ""
			}
			if !slices.Equal(damaged, tc.damaged) || intact != tc.intact || !slices.Equal(s.spans, tc.spans) || s.next != tc.next {
				t.Fatalf("damaged %v, %d intact, spans %+v, next %d; want %v, %d, %+v, %d", damaged, intact, s.spans, s.next, tc.damaged, tc.intact, tc.spans, tc.next)
			}
		})
	}
}

func offsets(first, last int64) []int64 {
	var out []int64
	for o := first; o <= last; o++ {
		out = append(out, o)
	}
	return out
}

// servedLog answers every fetch of partition 0 of topic on c from log
// (batches of 10 records, starts where each begins) instead of kfake's
// own data, as a broker serves its segment bytes, damaged or not, all
// from the batch holding the fetch offset on or, oneBatch, that batch
// only. It counts the fetches it answered.
type servedLog struct {
	mu       sync.Mutex
	log      []byte
	starts   []int
	oneBatch bool
	fetches  int
}

func (s *servedLog) serve(c *kfake.Cluster, topic string) {
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = req.Version
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fetches++
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				end := int64(len(s.starts) * 10)
				sp.HighWatermark, sp.LastStableOffset = end, end
				if rp.Partition == 0 && rp.FetchOffset < end {
					b := rp.FetchOffset / 10
					sp.RecordBatches = s.log[s.starts[b]:]
					if s.oneBatch && int(b)+1 < len(s.starts) {
						sp.RecordBatches = s.log[s.starts[b]:s.starts[b+1]]
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		if len(resp.Topics) == 0 {
			time.Sleep(50 * time.Millisecond) // an incremental fetch with nothing new
		}
		return resp, nil, true
	})
}

// Read through kgo: the records of a batch whose CRC fails reach fn
// Damaged, its span is in the partition's report, the batches after it
// are read intact, and the read completes: neither a silent skip nor a
// stall. kfake holds 30 real records (so that the end offsets agree); the
// fetches are answered from a log whose second batch (offsets 10-19) is
// damaged, with every batch from the one asked for or (one batch) only
// that one, so that kgo itself must go on after the salvage. A damaged
// magic byte (which the CRC does not cover) stops kgo the same way
// ("unknown magic 10"): the batch is damaged all the same.
func TestReadSalvagesDamagedBatch(t *testing.T) {
	value := func(l []byte, s []int) { l[s[1]+batchHeaderLength+40] ^= 0x10 }
	magic := func(l []byte, s []int) { l[s[1]+batchMagicAt] ^= 0x08 }
	tests := []struct {
		name     string
		oneBatch bool
		flip     func(log []byte, starts []int)
		damaged  bool // offsets 10-19 delivered Damaged, one span; else missing
		// stuck: where the next batch begins is unknown; the read ends at
		// offset 10 by its idle timeout, its note saying why.
		stuck bool
	}{
		{name: "value, all batches", flip: value, damaged: true},
		{name: "value, one batch", oneBatch: true, flip: value, damaged: true},
		{name: "magic, all batches", flip: magic, damaged: true},
		{name: "magic, one batch", oneBatch: true, flip: magic, damaged: true},
		{name: "magic and length", flip: func(l []byte, s []int) { magic(l, s); l[s[1]+batchLengthAt+3]-- }, stuck: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newKfake(t, kfake.SeedTopics(1, "t"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			for range 30 {
				if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			pcl.Close()

			log, starts := fakeLog(3, 10)
			tc.flip(log, starts)
			s := &servedLog{log: log, starts: starts, oneBatch: tc.oneBatch}
			s.serve(c, "t")

			d, err := New(Config{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var got []drivers.Record
			began := time.Now()
			idle := 10 * time.Second
			if tc.stuck {
				idle = 2 * time.Second
			}
			rep, err := d.Read(ctx, drivers.ReadSpec{Topic: "t", From: drivers.OffsetsOf(map[int32]int64{0: 0}),
				To: drivers.OffsetsOf(map[int32]int64{0: 30}), IdleTimeout: idle}, func(r drivers.Record) error {
				got = append(got, r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			pr, _ := rep.Get(0)
			damaged, note := rep.Damaged[0], rep.Note(0)
			s.mu.Lock()
			t.Logf("read %d records in %s, %d fetches; partition %+v", len(got), time.Since(began).Round(time.Millisecond), s.fetches, pr)
			s.mu.Unlock()
			if tc.stuck {
				if pr.Complete || len(got) != 10 || pr.Next != 10 || len(damaged) != 0 || !strings.Contains(note, salvageNote+"t/0 at offset 10: batch at offset 10: magic 10") {
					t.Fatalf("partition %+v, %d records; want stopped at 10 with a note on the damaged header", pr, len(got))
				}
				return
			}
			want := 30
			if !tc.damaged {
				want = 20
			}
			if !pr.Complete || len(got) != want || pr.Records != int64(want) {
				t.Fatalf("partition %+v, %d records delivered; want %d, complete", pr, len(got), want)
			}
			var offs []int64
			for _, r := range got {
				offs = append(offs, r.Pos.Offset)
				if want := r.Pos.Offset >= 10 && r.Pos.Offset < 20; r.Damaged != want {
					t.Fatalf("record at %d: damaged %v, want %v", r.Pos.Offset, r.Damaged, want)
				}
			}
			wantOffs := append(offsets(0, 9), offsets(20, 29)...)
			if tc.damaged {
				wantOffs = offsets(0, 29)
			}
			if !slices.Equal(offs, wantOffs) {
				t.Fatalf("offsets read %v, want %v", offs, wantOffs)
			}
			spans := 0
			if tc.damaged {
				spans = 1
				if s := damaged; len(s) != 1 || s[0].First != 10 || s[0].Last != 19 || s[0].Records != 10 {
					t.Fatalf("damaged spans %+v, want one at 10-19 with 10 records", damaged)
				}
			}
			if len(damaged) != spans || note != "" {
				t.Fatalf("damaged spans %+v, note %q; want %d spans, no note", damaged, note, spans)
			}
		})
	}
}
