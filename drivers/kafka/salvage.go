package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A record batch whose stored CRC does not match its bytes, or whose
// magic byte (which the CRC does not cover) is not 2.
//
// Kafka serves a partition's segment bytes as they are on the leader's
// disk (zero copy): a bit flipped on disk after the batch was written
// reaches the consumer, and only the consumer's CRC check sees it. kgo
// checks every batch (CRC-32C over the batch from its attributes on) and,
// at the first that fails, returns the records before it with an error for
// the partition ("encoded crc X does not match calculated crc Y") and
// stays at that batch's offset: every later fetch of the partition fails
// the same way, and the read would stall there. Turning the check off
// (kgo.DisableFetchCRCValidation) would hand damaged records over as good
// ones. Instead the reader salvages: it fetches the partition itself at
// the offset kgo is stuck at, checks each batch's CRC, hands every record
// of a batch that fails it over as Damaged (the read-back counts those
// corrupt), records the batch's span, and moves kgo past it.

// crc32c is Kafka's record batch checksum (Castagnoli).
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// The record batch header (magic 2), byte offsets.
const (
	batchLengthAt     = 8  // int32, the bytes after this field
	batchMagicAt      = 16 // int8, 2
	batchCRCAt        = 17 // uint32, CRC-32C of the bytes from batchAttrsAt on
	batchAttrsAt      = 21 // int16 attributes, the first byte the CRC covers
	batchLastDeltaAt  = 23 // int32, last offset - base offset
	batchHeaderLength = 61 // the header up to and with the record count
)

// damagedBatch reports whether err, a fetch error for one partition, says
// a batch is damaged: kgo's own CRC check failed, or kgo found a magic
// byte that is not a record batch's (the magic lies before what the CRC
// covers), or a broker answered CORRUPT_MESSAGE. The last is never
// salvaged: the raw fetch gets the same answer, and the partition's note
// then says so while the read waits, as for any broker error.
func damagedBatch(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return errors.Is(err, kerr.CorruptMessage) || strings.Contains(msg, "does not match calculated crc") || strings.HasPrefix(msg, "unknown magic ")
}

// rawBatch is one record batch as the broker sent it.
type rawBatch struct {
	first, last      int64 // offsets, as the header claims
	raw              []byte
	stored, computed uint32
	magic            byte // 2, unless the header is damaged there
}

func (b rawBatch) intact() bool { return b.stored == b.computed && b.magic == 2 }

// why says how b is damaged.
func (b rawBatch) why() string {
	why := fmt.Sprintf("stored CRC %08x, computed %08x", b.stored, b.computed)
	if b.magic != 2 {
		why = fmt.Sprintf("magic %d, not 2 (before what the CRC covers); %s", b.magic, why)
	}
	return why
}

// splitBatches cuts the record bytes of a fetch response into whole
// batches, each with its stored and its computed CRC. A partial batch at
// the end (the broker cuts a response at its byte limit) is left out. A
// batch whose magic is not 2 is taken as one whose header is damaged
// there (the CRC does not cover the magic) when its length still leads to
// the end of the bytes or to a sound header; otherwise, and for a length
// too short for a header, an error says the bytes cannot be cut any
// further, and the batches before are returned.
func splitBatches(in []byte) ([]rawBatch, error) {
	var out []rawBatch
	for len(in) >= batchHeaderLength {
		base := int64(binary.BigEndian.Uint64(in))
		n := int64(int32(binary.BigEndian.Uint32(in[batchLengthAt:]))) + batchLengthAt + 4
		if n < batchHeaderLength {
			return out, fmt.Errorf("batch at offset %d: length %d, shorter than a batch header: its header is damaged", base, n)
		}
		if n > int64(len(in)) {
			break // the broker's cut
		}
		b := rawBatch{
			first:    base,
			last:     base + int64(int32(binary.BigEndian.Uint32(in[batchLastDeltaAt:]))),
			raw:      in[:n],
			stored:   binary.BigEndian.Uint32(in[batchCRCAt:]),
			computed: crc32.Checksum(in[batchAttrsAt:n], crc32c),
			magic:    in[batchMagicAt],
		}
		if b.magic != 2 && !soundNext(in[n:], b.last) {
			return out, fmt.Errorf("batch at offset %d: magic %d, not 2, and its length leads to no sound batch: its header is damaged, or the log predates record batches", base, b.magic)
		}
		out = append(out, b)
		in = in[n:]
	}
	return out, nil
}

// soundNext reports whether rest, the bytes after a batch whose last
// offset is last, is empty or begins with a record batch header after it.
func soundNext(rest []byte, last int64) bool {
	if len(rest) < batchHeaderLength {
		return true // the end, or the broker's cut
	}
	return rest[batchMagicAt] == 2 && int64(binary.BigEndian.Uint64(rest)) > last
}

// salvaged is what a salvage fetch gave: the records at or after its
// offset, the damaged batches' spans, and the offset to go on from.
type salvaged struct {
	records []drivers.Record
	spans   []drivers.DamagedSpan
	next    int64
}

// salvageBatches turns the whole batches of partition p's fetched bytes
// into records from offset from on: an intact batch's records as they
// are, a damaged one's (what of it still parses) marked Damaged, with its
// span. next is the offset after the last whole batch.
func salvageBatches(topic string, p int32, from int64, raw []byte) (salvaged, error) {
	batches, cutErr := splitBatches(raw)
	s := salvaged{next: from}
	for _, b := range batches {
		raw := b.raw
		if b.magic != 2 {
			// Parse what follows the damaged magic as a record batch.
			raw = append([]byte(nil), raw...)
			raw[batchMagicAt] = 2
		}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			// splitBatches checked every batch's CRC already.
			Topic: topic, Partition: p, Offset: from, DisableCRCValidation: true,
		}, &kmsg.FetchResponseTopicPartition{Partition: p, RecordBatches: raw}, kgo.DefaultDecompressor(), nil)
		n := 0
		for _, r := range fp.Records {
			if r.Offset < from {
				continue
			}
			s.records = append(s.records, drivers.Record{
				Pos: drivers.Position{Partition: p, Offset: r.Offset}, Key: r.Key, Value: r.Value,
				Timestamp: r.Timestamp, Damaged: !b.intact(),
			})
			n++
		}
		if !b.intact() {
			why := b.why()
			if fp.Err != nil {
				why += "; its records parse only in part: " + fp.Err.Error()
			}
			s.spans = append(s.spans, drivers.DamagedSpan{First: b.first, Last: b.last, Records: n, Why: why})
		} else if fp.Err != nil {
			return s, fmt.Errorf("batch at offset %d of %s/%d: %w", b.first, topic, p, fp.Err)
		}
		s.next = max(s.next, b.last+1)
	}
	if s.next == from {
		if cutErr != nil {
			return s, fmt.Errorf("%s/%d at offset %d: %w", topic, p, from, cutErr)
		}
		return s, fmt.Errorf("%s/%d at offset %d: the broker sent no whole record batch", topic, p, from)
	}
	return s, nil
}

// salvage fetches partition p of topic from its leader at offset from,
// with cl, and checks each batch's CRC itself (salvageBatches).
func salvage(ctx context.Context, cl *kgo.Client, topic string, p int32, from int64) (salvaged, error) {
	raw, err := fetchRaw(ctx, cl, topic, p, from)
	if err != nil {
		return salvaged{next: from}, err
	}
	return salvageBatches(topic, p, from, raw)
}

// fetchRaw is partition p's record bytes at offset from, as its leader
// sends them (up to 4 MiB, at least one whole batch).
func fetchRaw(ctx context.Context, cl *kgo.Client, topic string, p int32, from int64) ([]byte, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("leader of %s/%d: %w", topic, p, err)
	}
	t := td[topic]
	if t.Err != nil {
		return nil, fmt.Errorf("leader of %s/%d: %w", topic, p, t.Err)
	}
	pd, ok := t.Partitions[p]
	if !ok || pd.Leader < 0 {
		return nil, fmt.Errorf("leader of %s/%d: none known", topic, p)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MinBytes, req.MaxBytes = 1, 4<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, t.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, from, 4<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(pd.Leader)))
	if err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d from node %d: %w", topic, p, from, pd.Leader, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d from node %d: %w", topic, p, from, pd.Leader, err)
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("fetch %s/%d at %d from node %d: %w", topic, p, from, pd.Leader, err)
			}
			return rp.RecordBatches, nil
		}
	}
	return nil, fmt.Errorf("fetch %s/%d at %d from node %d: the answer has no such partition", topic, p, from, pd.Leader)
}
