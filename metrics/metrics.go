// Package metrics serves a run's live figures to Prometheus
// (--metrics-addr), for soak runs watched on a dashboard rather than a
// terminal.
//
// Counters are read from the load's own atomic counters when Prometheus
// scrapes, so a run with metrics does the same work per message as one
// without, except one histogram observation per ack and per live read.
// Figures are the current run's: the fsync audit attaches each of its
// runs in turn, and the counters start again from zero with each.
//
// Once the load ended (LoadEnded), the seconds-since-last-ack gauges stay
// at their value at the end: no ack is due after it, and a no-ack alert
// must not fire at the end of every run. Once the read-back judged the
// run (Verdict), ackcheck_verdict and ackcheck_lost are served; before
// it, neither is (no verdict is not a pass).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics for as long as the command runs.
type Server struct {
	srv  *http.Server
	addr string

	publish, e2e prometheus.Histogram
	collector    *collector
}

// latencyBuckets are 0.5 ms to about 65 s, doubling: a local broker's
// sub-millisecond acks and a leader election's tens of seconds.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

// Listen binds addr at once (a port in use is an error before the run
// starts) and serves /metrics until Close.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w (give a free host:port, e.g. 127.0.0.1:9464)", addr, err)
	}
	s := &Server{addr: ln.Addr().String(), collector: &collector{seen: map[[2]string]bool{}}}
	s.publish = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ackcheck_publish_latency_seconds",
		Help: "Time from a message's scheduled send to its ack (coordinated-omission free: measured from the schedule).", Buckets: latencyBuckets})
	s.e2e = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ackcheck_e2e_latency_seconds",
		Help: "Time from a message's scheduled send to the live consumer reading it.", Buckets: latencyBuckets})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.publish, s.e2e, s.collector)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("metrics server stopped: %v\n", err)
		}
	}()
	return s, nil
}

// Addr is the address served, with the port the system chose for :0.
func (s *Server) Addr() string { return s.addr }

// Attach makes the run whose load counts into stats the one served;
// active lists the faults in force (nil: the run has none). The
// histograms go on across runs, as Prometheus histograms do.
func (s *Server) Attach(stats *load.Stats, start time.Time, active func() []faults.Record) {
	pub, e2e := s.publish, s.e2e
	stats.OnAck = func(d time.Duration) { pub.Observe(d.Seconds()) }
	stats.OnLiveRead = func(d time.Duration) { e2e.Observe(d.Seconds()) }
	s.collector.attach(stats, start, active)
}

// LoadEnded freezes the time-since-last-ack gauges at at: the load sent
// its last message and every outcome is in (runner.LoadEnder).
func (s *Server) LoadEnded(at time.Time) {
	s.collector.mu.Lock()
	defer s.collector.mu.Unlock()
	s.collector.end = at
}

// Judged says whether Verdict was given for the run attached.
func (s *Server) Judged() bool {
	s.collector.mu.Lock()
	defer s.collector.mu.Unlock()
	return s.collector.verdict != ""
}

// Verdict serves the run's verdict and its lost count (runner.VerdictObserver).
func (s *Server) Verdict(res *verifier.Result) {
	s.collector.mu.Lock()
	defer s.collector.mu.Unlock()
	s.collector.verdict, s.collector.lost = res.Verdict, res.Lost
}

// Close stops serving.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// collector reads the attached run's counters at each scrape.
type collector struct {
	mu     sync.Mutex
	stats  *load.Stats
	start  time.Time
	active func() []faults.Record
	// seen are the (action, target) pairs of faults once in force: they
	// are served as 0 after they end, so that a dashboard sees the end.
	seen map[[2]string]bool
	// end is when the load ended (zero while it runs): the gauges of
	// time since an ack count to it, not to now.
	end time.Time
	// verdict is the run's verdict ("" until the read-back judged it)
	// and lost its lost count.
	verdict string
	lost    int64
}

func (c *collector) attach(stats *load.Stats, start time.Time, active func() []faults.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats, c.start, c.active = stats, start, active
	c.seen = map[[2]string]bool{}
	c.end, c.verdict, c.lost = time.Time{}, "", 0
}

var (
	descSent      = prometheus.NewDesc("ackcheck_sent_total", "Messages handed to the driver.", nil, nil)
	descAcked     = prometheus.NewDesc("ackcheck_acked_total", "Messages the broker acknowledged.", nil, nil)
	descFailed    = prometheus.NewDesc("ackcheck_failed_total", "Sends with an outcome other than an ack: rejected by the broker, or unknown (no answer in time).", []string{"reason"}, nil)
	descShed      = prometheus.NewDesc("ackcheck_shed_total", "Sends due while --max-in-flight sends awaited their outcome: never sent, counted.", nil, nil)
	descInFlight  = prometheus.NewDesc("ackcheck_in_flight", "Sends awaiting their outcome.", nil, nil)
	descSinceAck  = prometheus.NewDesc("ackcheck_seconds_since_last_ack", "Seconds since the latest ack (since the load started, before the first); stops at the load's end.", nil, nil)
	descFault     = prometheus.NewDesc("ackcheck_fault_active", "1 while a fault is in force (a node down or paused, a mode switched), 0 after it ended.", []string{"action", "target"}, nil)
	descPartSince = prometheus.NewDesc("ackcheck_partition_seconds_since_last_ack", "Seconds since the partition's latest ack (since the load started, before its first); stops at the load's end.", []string{"partition"}, nil)
	descVerdict   = prometheus.NewDesc("ackcheck_verdict", "1 for the run's verdict (pass, fail, incomplete, unproven, aborted), 0 for the others; served once the read-back judged the run.", []string{"verdict"}, nil)
	descLost      = prometheus.NewDesc("ackcheck_lost", "Acknowledged messages the read-back did not find intact; served once the read-back judged the run.", nil, nil)
)

// verdicts are the values ackcheck_verdict's label takes.
var verdicts = []string{verifier.Pass, verifier.Fail, verifier.Incomplete, verifier.Unproven, verifier.Aborted}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSent, descAcked, descFailed, descShed, descInFlight, descSinceAck, descFault, descPartSince, descVerdict, descLost} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	if s == nil {
		return // no run attached yet
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descSent, s.Sent.Load())
	counter(descAcked, s.Acked.Load())
	counter(descFailed, s.Rejected.Load(), "rejected")
	counter(descFailed, s.Unknown.Load(), "unknown")
	counter(descShed, s.Shed.Load())
	gauge(descInFlight, float64(s.InFlight.Load()))
	now := time.Now()
	if !c.end.IsZero() && c.end.Before(now) {
		now = c.end
	}
	since := func(t time.Time) float64 {
		if t.IsZero() || t.Before(c.start) {
			t = c.start
		}
		return max(0, now.Sub(t).Seconds())
	}
	gauge(descSinceAck, since(s.LastAck()))
	for p, t := range s.PartitionLastAck() {
		gauge(descPartSince, since(t), strconv.Itoa(int(p)))
	}
	if c.verdict != "" {
		for _, v := range verdicts {
			gauge(descVerdict, map[bool]float64{true: 1}[v == c.verdict], v)
		}
		gauge(descLost, float64(c.lost))
	}
	if c.active == nil {
		return
	}
	on := map[[2]string]bool{}
	for _, r := range c.active() {
		k := [2]string{string(r.Action), r.Target}
		on[k], c.seen[k] = true, true
	}
	for k := range c.seen {
		v := 0.0
		if on[k] {
			v = 1
		}
		gauge(descFault, v, k[0], k[1])
	}
}
