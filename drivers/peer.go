package drivers

import (
	"context"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/latency"
)

// The peer benchmark (`ackcheck bench --peer`) measures ackcheck against
// the broker's bare client doing the same work. The command line takes
// that client through the broker's profile, as it takes everything else,
// so that it names no broker.

// PeerBencher is implemented by a profile whose broker has a bare client
// to measure ackcheck against.
type PeerBencher interface {
	// Peer returns the bare client of the cluster at addrs. embedded, when
	// not nil, is the in-process cluster (Embedder.Embed) serving them,
	// which Peer may rearrange so that every topic it creates is placed
	// alike.
	Peer(addrs []string, embedded Embedded) (Peer, error)
}

// Peer is a broker's bare client doing ackcheck's work and nothing else.
type Peer interface {
	// CreateTopics creates topics of the given partitions, all placed
	// alike (the two workloads of a pair must meet the same leaders),
	// ackcheck's too: its run finds the topic there and uses it as it is.
	CreateTopics(ctx context.Context, partitions int, names []string) error
	// DeleteTopics removes topics.
	DeleteTopics(ctx context.Context, names []string) error
	// Produce sends w's messages with the bare client and returns how
	// many were acked (all of them, or an error) and, when paced, each
	// send's lateness (PeerPacer).
	Produce(ctx context.Context, w PeerWork) (PeerProduced, error)
	// Consume reads topic from its start to its end offsets with one
	// client, touching every value once, and returns the records read.
	Consume(ctx context.Context, topic string) (int64, error)
	// Driver opens ackcheck's driver with the client settings the bare
	// producer uses (w's linger).
	Driver(w PeerWork) (Driver, any, error)
}

// PeerWork is the shape of one bench workload: what ackcheck's load does,
// as the bare client does it.
type PeerWork struct {
	Topic       string
	Messages    int
	Size        int
	Producers   int
	Partitions  int
	MaxInFlight int
	Linger      time.Duration
	Rate        float64 // 0: unpaced
	// Pacing is how a paced bare producer waits for its next message.
	Pacing PeerPacing
}

// PeerPacing is a bare producer's pacer.
type PeerPacing int

const (
	// PacePerMessage sleeps until each message is due (a timer per
	// message not yet due), the naive pacer.
	PacePerMessage PeerPacing = iota
	// PaceWindow sends every message due within PeerWindow and sleeps
	// only when the next is further ahead than that: the cheapest pacer
	// of ackcheck's precision, the reference for its paced cost.
	PaceWindow
)

// PeerWindow is PaceWindow's precision: a message may go up to this much
// before its time, and the pacer sleeps only when the next message is
// further ahead.
const PeerWindow = time.Millisecond

// PeerProduced is what a bare produce did.
type PeerProduced struct {
	Acked int64
	// Lag is, paced, how late each send was after its scheduled time
	// (µs, latency.New; an early send counts as on time); nil unpaced.
	Lag *hdrhistogram.Histogram
}

// PeerPacer paces one bare producer: message i of the whole schedule is
// due at Start + i/Rate. One per producer goroutine; not safe for
// concurrent use.
type PeerPacer struct {
	Start  time.Time
	Rate   float64
	Pacing PeerPacing
	timer  *time.Timer
	lag    *hdrhistogram.Histogram
}

// Wait returns once message i may be sent, ctx ended, or at once when
// unpaced (Rate 0), and records the send's lateness.
func (p *PeerPacer) Wait(ctx context.Context, i int) {
	if p.Rate <= 0 {
		return
	}
	if p.lag == nil {
		p.lag = latency.New(3)
		p.timer = time.NewTimer(time.Hour)
		p.timer.Stop()
	}
	due := p.Start.Add(time.Duration(float64(i) * float64(time.Second) / p.Rate))
	ahead := time.Until(due)
	sleep := ahead > 0
	if p.Pacing == PaceWindow {
		sleep = ahead > PeerWindow
	}
	if sleep {
		p.timer.Reset(ahead)
		select {
		case <-ctx.Done():
			p.timer.Stop()
		case <-p.timer.C:
		}
		ahead = time.Until(due)
	}
	latency.Record(p.lag, max(0, -ahead))
}

// Lag is the lateness of the sends so far (nil unpaced or before the
// first); merge the producers' into one.
func (p *PeerPacer) Lag() *hdrhistogram.Histogram { return p.lag }
