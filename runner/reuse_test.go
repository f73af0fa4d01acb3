package runner_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
)

// reuser breaks drivers.ValueReuser's contract on purpose: it acks a
// message at once and writes its value to the topic 20 ms later, when
// the load has already written a later message into the same memory.
type reuser struct{ *kafka.Driver }

func (d reuser) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, topic, id)
	return &lateProducer{Producer: p}, err
}

// lateWriter writes late in the same way but claims nothing: the load
// gives it a value of its own per message.
type lateWriter struct{ drivers.Driver }

func (d lateWriter) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, topic, id)
	return &lateProducer{Producer: p}, err
}

type lateProducer struct {
	drivers.Producer
	wg sync.WaitGroup
}

func (p *lateProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition, Offset: -1}})
	p.wg.Add(1)
	time.AfterFunc(20*time.Millisecond, func() {
		p.Producer.Publish(ctx, m, func(drivers.Outcome) { p.wg.Done() })
	})
}

func (p *lateProducer) Close(ctx context.Context) error {
	p.wg.Wait()
	return p.Producer.Close(ctx)
}

// Value reuse is safe only for drivers that keep no reference after done:
// a driver that claims it and reads the value later writes other
// messages' bytes, and the verdict fails on acked messages never read
// back; the same late writer without the claim passes. The topic really
// holds what was written (kfake), not what ackcheck believes it sent.
func TestValueReuseContract(t *testing.T) {
	tests := []struct {
		name   string
		wrap   func(*kafka.Driver) drivers.Driver
		failed bool
	}{
		{"claims reuse, writes late", func(d *kafka.Driver) drivers.Driver { return reuser{d} }, true},
		{"no claim, writes late", func(d *kafka.Driver) drivers.Driver { return lateWriter{d} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.wrap(kfakeDriver(t))
			if _, ok := d.(drivers.ValueReuser); ok != tc.failed {
				t.Fatalf("the wrapper's claim is %v, want %v", ok, tc.failed)
			}
			res, err := runner.Run(context.Background(), runner.Config{
				Out: filepath.Join(t.TempDir(), "run"), Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3},
				// The load hands a producer's value buffers out round a
				// ring of 1 MiB chunks: at 64 KiB a value, one producer
				// and 2,000 msg/s, a freed buffer is written again 8 ms
				// later, before the late write at 20 ms.
				Load: load.Config{Rate: 2000, Duration: 500 * time.Millisecond, Producers: 1, MessageSize: 64 << 10}, Verify: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Verdict != "pass"; got != tc.failed {
				t.Fatalf("verdict %s (lost %d, duplicates %d), want failed=%v", res.Verdict, res.Lost, res.Duplicates, tc.failed)
			}
			if tc.failed && res.Lost == 0 {
				t.Fatalf("the verdict failed without a lost ack: %v", res.Reasons)
			}
			t.Logf("acked %d lost %d duplicates %d", res.Acked, res.Lost, res.Duplicates)
		})
	}
}
