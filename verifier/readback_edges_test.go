package verifier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// failingRead is a spyTopic whose read stops with an error.
type failingRead struct {
	spyTopic
	readErr error
}

func (f *failingRead) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep, _ := f.spyTopic.Read(ctx, spec, fn)
	return rep, f.readErr
}

// A read-back whose broker fails it is a result, not an error: it is
// incomplete and says why. Only when the caller's context ended (or
// settling failed because of it) is it an error, with no result to judge.
func TestReadBackFailuresAndCancel(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		d        drivers.Driver
		errHas   string // ReadBack's error; "" none
		repError string // the report's Error when there is no error
	}{
		{"a fetch fails", context.Background(), &failingRead{spyTopic{ends: map[int32]int64{0: 5}}, errors.New("fetch refused")}, "", "reading t back: fetch refused"},
		{"a fetch fails after the context ended", cancelled, &failingRead{spyTopic{ends: map[int32]int64{0: 5}}, errors.New("context canceled")}, "read-back: context canceled", ""},
		{"settling fails after the context ended", cancelled, &settlingTopic{spyTopic: spyTopic{ends: map[int32]int64{0: 5}}, err: errors.New("settle: context canceled")}, "read-back: settle: context canceled", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rep, err := ReadBack(tc.ctx, tc.d, l, ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}, time.Second)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Complete || rep.Error != tc.repError {
				t.Fatalf("complete %v, error %q; want incomplete, %q", rep.Complete, rep.Error, tc.repError)
			}
		})
	}
}

// deliveringTopic is a spyTopic whose read delivers recs.
type deliveringTopic struct {
	spyTopic
	recs []drivers.Record
}

func (d *deliveringTopic) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep, _ := d.spyTopic.Read(ctx, spec, fn)
	for _, r := range d.recs {
		if err := fn(r); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Every copy read back is counted, and recorded with the intended send
// time it carries, from the first copy on: a read whose send the ledger
// lacks is held to the crash window by that time (classify.go).
func TestReadBackRecordsEachCopyWithItsTime(t *testing.T) {
	const n = 300
	d := &deliveringTopic{spyTopic: spyTopic{ends: map[int32]int64{0: n}}}
	sent := time.Unix(0, 1_700_000_000_000_000_000)
	intended := func(seq uint64) time.Time { return sent.Add(time.Duration(seq) * time.Millisecond) }
	for i := range n {
		v := message.Encode(nil, message.ID{Run: 7, Producer: 0, Seq: uint64(i)}, intended(uint64(i)), 64)
		d.recs = append(d.recs, drivers.Record{Pos: drivers.Position{Partition: 0, Offset: int64(i)}, Value: v})
	}
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := ReadBack(context.Background(), d, l, ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}, time.Second)
	if err != nil || rep.Records != n || !rep.Complete {
		t.Fatalf("err %v, records %d, complete %v; want %d, complete", err, rep.Records, rep.Complete, n)
	}
	c, err := l.Scan(ledger.Read)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := 0
	for {
		run, ok := c.NextRun()
		if !ok {
			break
		}
		for _, e := range run {
			if want := intended(e.Seq).UnixNano(); e.Time != want {
				t.Fatalf("copy %d recorded with time %d, want the intended send time it carries, %d", e.Seq, e.Time, want)
			}
			got++
		}
	}
	if c.Err() != nil || got != n {
		t.Fatalf("%d reads recorded (%v), want %d", got, c.Err(), n)
	}
}

// vanishingTopic lists its partitions once, then is gone, and its read
// declares partition 0 finished short of its end (as a broker does when
// the topic is deleted under the read).
type vanishingTopic struct {
	spyTopic
	calls int
}

func (v *vanishingTopic) EndOffsets(context.Context, string) (drivers.Offsets, error) {
	v.calls++
	if v.calls > 1 {
		return drivers.Offsets{}, drivers.ErrTopicMissing
	}
	return drivers.OffsetsOf(v.ends), nil
}

func (v *vanishingTopic) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep, _ := v.spyTopic.Read(ctx, spec, fn)
	to0, _ := spec.To.Get(0)
	rep.Partitions[0] = drivers.PartitionRead{Asked: true, Next: 2, Target: to0, Complete: true}
	rep.SetNote(0, "the broker ended the read at 2")
	return rep, nil
}

// A read that the broker declared finished short of a partition's end,
// on a topic that is gone when asked again, is no complete read-back: the
// topic was deleted during the read.
func TestReadBackTopicDeletedDuringTheRead(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &vanishingTopic{spyTopic: spyTopic{ends: map[int32]int64{0: 5}}}
	rep, err := ReadBack(context.Background(), d, l, ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}, time.Second)
	if err != nil || rep.Complete || !rep.TopicGone || rep.Notes[0] != "the broker ended the read at 2" {
		t.Fatalf("err %v, complete %v, topic gone %v, notes %v; want incomplete, gone", err, rep.Complete, rep.TopicGone, rep.Notes)
	}
}
