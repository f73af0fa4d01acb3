package load

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// The sweeper's deadline runs from when a send was handed to the driver,
// not from when it was due: a send made late (the pacer fell behind, the
// client blocked) still gets the whole OutcomeTimeout. A flight sent
// exactly at the cutoff is not yet expired.
func TestFlightExpiresFromItsSendTime(t *testing.T) {
	s := int64(time.Second)
	tests := []struct {
		name    string
		cutoff  int64
		expired []uint64
	}{
		{"before either send", 9 * s, nil},
		{"at the first send", 10 * s, nil},
		{"just after the first send", 10*s + 1, []uint64{0}},
		{"after both", 11 * s, []uint64{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fl := &flights{}
			// Both were due long before they were sent.
			fl.add(0, 0, 10*s)
			fl.add(1, 1*s, 10*s+s/2)
			var got []uint64
			fl.expire(tc.cutoff, func(f *flight) { got = append(got, f.seq) })
			if len(got) != len(tc.expired) {
				t.Fatalf("expired %v at cutoff %v, want %v", got, time.Duration(tc.cutoff), tc.expired)
			}
			for i := range got {
				if got[i] != tc.expired[i] {
					t.Fatalf("expired %v, want %v", got, tc.expired)
				}
			}
		})
	}
}

// An answered flight is passed over by the sweeper and never expired; a
// pending one after it still is.
func TestExpirePassesAnsweredFlights(t *testing.T) {
	fl := &flights{}
	a := fl.add(0, 0, 1)
	fl.add(1, 0, 2)
	if !a.claim(flightAnswered) {
		t.Fatal("a fresh flight could not be claimed")
	}
	var got []uint64
	fl.expire(100, func(f *flight) { got = append(got, f.seq) })
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("expired %v, want [1]", got)
	}
	if a.claim(flightTimedOut) {
		t.Fatal("an answered flight was claimed again")
	}
}

// blockingDriver's producer blocks in its first Publish for block, as a
// client library waiting for metadata would, so every later send of the
// schedule is handed over long after its intended time. Each answer comes
// answerAfter after its Publish call.
type blockingDriver struct {
	drivers.Driver
	block, answerAfter time.Duration
}

func (d *blockingDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return &blockingProducer{d: d}, nil
}

type blockingProducer struct {
	d     *blockingDriver
	first sync.Once
	wg    sync.WaitGroup
}

func (p *blockingProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.wg.Add(1)
	time.AfterFunc(p.d.answerAfter, func() {
		done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition}})
		p.wg.Done()
	})
	p.first.Do(func() { time.Sleep(p.d.block) })
}

func (p *blockingProducer) Close(context.Context) error { p.wg.Wait(); return nil }

// Sends handed to the driver 0.5-0.8 s after they were due, answered
// 150 ms after that, with a 500 ms outcome timeout: every one is acked,
// none timed out early as Unknown. Answered 900 ms after the send, every
// one is Unknown.
func TestLateSendGetsTheFullOutcomeTimeout(t *testing.T) {
	for _, tc := range []struct {
		name           string
		answerAfter    time.Duration
		acked, unknown int64
	}{
		{"answered within the timeout of its send", 150 * time.Millisecond, 30, 0},
		{"answered after the timeout of its send", 900 * time.Millisecond, 0, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &blockingDriver{block: 800 * time.Millisecond, answerAfter: tc.answerAfter}
			l, err := ledger.Open(t.TempDir(), ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cfg := Config{RunID: 1, Topic: "t", Partitions: []int32{0}, Rate: 100, Duration: 300 * time.Millisecond,
				Producers: 1, MessageSize: 100, OutcomeTimeout: 500 * time.Millisecond}
			stats := &Stats{}
			if _, err := Run(context.Background(), cfg, d, l, stats); err != nil {
				t.Fatal(err)
			}
			if stats.Acked.Load() != tc.acked || stats.Unknown.Load() != tc.unknown {
				t.Fatalf("acked %d, unknown %d; want %d acked, %d unknown (the deadline must run from the actual send)",
					stats.Acked.Load(), stats.Unknown.Load(), tc.acked, tc.unknown)
			}
		})
	}
}
