package load

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// ackDriver acks every publish at once, from the caller's goroutine: no
// broker shares the CPU, so what is measured is ackcheck's own pacing.
type ackDriver struct{ drivers.Driver }

func (ackDriver) NewProducer(context.Context, string, uint32) (drivers.Producer, error) {
	return ackProducer{}, nil
}

type ackProducer struct{}

func (ackProducer) Publish(_ context.Context, m drivers.Message, done func(drivers.Outcome)) {
	done(drivers.Outcome{Status: drivers.Acked, Pos: drivers.Position{Partition: m.Partition}})
}

func (ackProducer) Close(context.Context) error { return nil }

// BenchmarkPacing50k runs a paced load of 50,000 msg/s from 4 producers
// for 2 s through ackDriver, with the scheduler kicked every
// timerKickPeriod (as every paced load is) and without, and reports the
// pacing lag's p50, p99 and max and the process's CPU per 1M messages.
// Figures: see timerKickPeriod.
func BenchmarkPacing50k(b *testing.B) {
	for _, bc := range []struct {
		name         string
		window, kick time.Duration
	}{{"window", 0, 0}, {"window-kick", 0, timerKickPeriod}, {"per-message-kick", -1, 0}, {"per-message-no-kick", -1, -1}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				l, err := ledger.Open(b.TempDir(), ledger.Options{})
				if err != nil {
					b.Fatal(err)
				}
				cpu0 := processCPU()
				res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0, 1, 2, 3},
					Rate: 50_000, Duration: 2 * time.Second, Producers: 4, MessageSize: 1024, PacingWindow: bc.window, TimerKick: bc.kick}, ackDriver{}, l, &Stats{})
				if err != nil {
					b.Fatal(err)
				}
				cpu := processCPU() - cpu0
				l.Close()
				lag := res.PacingLag
				b.ReportMetric(float64(lag.ValueAtQuantile(50)), "lag-p50-µs")
				b.ReportMetric(float64(lag.ValueAtQuantile(99)), "lag-p99-µs")
				b.ReportMetric(float64(lag.Max()), "lag-max-µs")
				b.ReportMetric(cpu.Seconds()/float64(lag.TotalCount())*1e6, "CPU-s/1M")
			}
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reusingAckDriver is ackDriver keeping no reference to a value once it
// has answered (drivers.ValueReuser), as Kafka's driver.
type reusingAckDriver struct{ ackDriver }

func (reusingAckDriver) ReusesValues() {}

// BenchmarkUnpacedOwnCost is ackcheck's own CPU per message in an unpaced
// load of 1 KiB values from 4 producers, with a driver that acks at once:
// encoding, the ledger (its flushes included), the in-flight bound, the
// counters, and no client library. bench --peer gives the ratio against
// bare franz-go; this gives what ackcheck adds, without that run's noise.
func BenchmarkUnpacedOwnCost(b *testing.B) {
	const messages = 1_000_000
	for b.Loop() {
		l, err := ledger.Open(b.TempDir(), ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := processCPU()
		res, err := Run(context.Background(), Config{RunID: 1, Topic: "t", Partitions: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			Unpaced: true, Rate: messages, Duration: time.Second, Producers: 4, MessageSize: 1024, MaxInFlight: 100_000}, reusingAckDriver{}, l, &Stats{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		cpu := processCPU() - cpu0
		if n := res.PacingLag.TotalCount(); n != messages {
			b.Fatalf("%d messages sent, want %d", n, messages)
		}
		b.ReportMetric(cpu.Seconds(), "CPU-s/1M")
	}
}
