package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
)

// Each contract check fires on a driver that breaks it on purpose (the
// real Kafka driver on kfake, wrapped), and none fires on the driver as it
// is: the contract is not a check that cannot fail.
func TestContractFires(t *testing.T) {
	c := newKfake(t)
	tests := []struct {
		name  string
		wrap  func(drivers.Driver) drivers.Driver
		fires string
	}{
		{"as it is", func(d drivers.Driver) drivers.Driver { return d }, ""},
		{"missing topic not ErrTopicMissing", func(d drivers.Driver) drivers.Driver { return hideMissing{d} }, "ErrTopicMissing"},
		{"done called twice", func(d drivers.Driver) drivers.Driver { return twice{d} }, "done called 2 times"},
		{"acked in another partition", func(d drivers.Driver) drivers.Driver { return misplaced{d} }, "acked in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Config{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			v := drivertest.Violations(tc.wrap(d), 2, 3)
			joined := strings.Join(v, "\n")
			if tc.fires == "" && len(v) != 0 {
				t.Fatalf("a driver that keeps the contract broke it:\n%s", joined)
			}
			if tc.fires != "" && !strings.Contains(joined, tc.fires) {
				t.Fatalf("want a violation saying %q, got:\n%s", tc.fires, joined)
			}
		})
	}
}

type hideMissing struct{ drivers.Driver }

func (h hideMissing) EndOffsets(ctx context.Context, topic string) (drivers.Offsets, error) {
	m, err := h.Driver.EndOffsets(ctx, topic)
	if errors.Is(err, drivers.ErrTopicMissing) {
		return drivers.MakeOffsets(0), nil
	}
	return m, err
}

type twice struct{ drivers.Driver }

func (w twice) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := w.Driver.NewProducer(ctx, topic, id)
	return twiceProducer{p}, err
}

type twiceProducer struct{ drivers.Producer }

func (p twiceProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.Producer.Publish(ctx, m, func(o drivers.Outcome) { done(o); done(o) })
}

type misplaced struct{ drivers.Driver }

func (w misplaced) NewProducer(ctx context.Context, topic string, id uint32) (drivers.Producer, error) {
	p, err := w.Driver.NewProducer(ctx, topic, id)
	return misplacedProducer{p}, err
}

type misplacedProducer struct{ drivers.Producer }

func (p misplacedProducer) Publish(ctx context.Context, m drivers.Message, done func(drivers.Outcome)) {
	p.Producer.Publish(ctx, m, func(o drivers.Outcome) { o.Pos.Partition += 100; done(o) })
}
