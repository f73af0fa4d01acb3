package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

// The peer benchmark: ackcheck against the bare client doing the same
// work, in one invocation, against one broker. Each workload runs in a
// child process of its own (the broker, kfake by default, stays in the
// parent and its CPU is not counted), which measures itself the same way:
// user+system CPU of the process over the workload (getrusage), wall
// time, and its peak RSS (VmHWM).

// peerShape is the shape every workload shares.
type peerShape struct {
	// Driver names the broker whose bare client ackcheck is measured
	// against (a profile that is a drivers.PeerBencher); empty: the first.
	Driver      string   `json:"driver,omitempty"`
	Brokers     []string `json:"brokers"`
	Messages    int      `json:"messages"`
	Size        int      `json:"size"`
	Producers   int      `json:"producers"`
	Partitions  int      `json:"partitions"`
	Linger      string   `json:"linger"`
	MaxInFlight int      `json:"max_in_flight"`
	Rate        float64  `json:"rate"` // 0: unpaced
	Topic       string   `json:"topic"`
	Out         string   `json:"out"` // ackcheck's run directory
}

// peerWork is the shape as the bare client's workloads take it.
func (s peerShape) peerWork(pacing drivers.PeerPacing) drivers.PeerWork {
	linger, _ := time.ParseDuration(s.Linger)
	return drivers.PeerWork{Topic: s.Topic, Messages: s.Messages, Size: s.Size, Producers: s.Producers,
		Partitions: s.Partitions, MaxInFlight: s.MaxInFlight, Linger: linger, Rate: s.Rate, Pacing: pacing}
}

// peerProfile is the broker the peer benchmark measures against: the
// profile named, or the first that has a bare client (drivers.PeerBencher).
func peerProfile(name string) (drivers.Profile, drivers.PeerBencher, error) {
	for _, p := range profiles() {
		if pb, ok := p.(drivers.PeerBencher); ok && (name == "" || p.Name() == name) {
			return p, pb, nil
		}
	}
	var have []string
	for _, p := range profiles() {
		if _, ok := p.(drivers.PeerBencher); ok {
			have = append(have, p.Name())
		}
	}
	return nil, nil, fmt.Errorf("--driver %q has no bare client to measure against; the brokers that have one: %s", name, strings.Join(have, ", "))
}

// peerClient is the bare client of s's broker (no in-process cluster: a
// child only sends and reads).
func peerClient(s peerShape) (drivers.Peer, error) {
	_, pb, err := peerProfile(s.Driver)
	if err != nil {
		return nil, err
	}
	return pb.Peer(s.Brokers, nil)
}

// peerFigures is what a child measured.
type peerFigures struct {
	CPUSeconds  float64 `json:"cpu_s"`
	WallSeconds float64 `json:"wall_s"`
	Messages    int64   `json:"messages"`
	PeakRSSKiB  int64   `json:"peak_rss_kib"`
	// Shed is what ackcheck's load shed at its in-flight bound (a paced
	// produce; the bare client never sheds, it blocks).
	Shed int64 `json:"shed,omitempty"`
	// PacingLag* are how late the sends went after their scheduled times
	// (paced produces, bare and ackcheck's); CallbackP99Ms is ackcheck's
	// own share of the latency it reports.
	PacingLagP50Ms float64 `json:"pacing_lag_p50_ms,omitempty"`
	PacingLagP99Ms float64 `json:"pacing_lag_p99_ms,omitempty"`
	PacingLagMaxMs float64 `json:"pacing_lag_max_ms,omitempty"`
	CallbackP99Ms  float64 `json:"callback_p99_ms,omitempty"`
	// StealPct is the share of the machine's CPU time the hypervisor took
	// while the workload ran (/proc/stat's steal), measured by the parent:
	// a vCPU taken away is a wait no code of the workload caused.
	StealPct float64 `json:"steal_pct,omitempty"`
}

func (f peerFigures) cpuPerMillion() float64 { return f.CPUSeconds / float64(f.Messages) * 1e6 }
func (f peerFigures) rate() float64          { return float64(f.Messages) / f.WallSeconds }

// peerWorkloads are the child kinds, in the order they run. The paced
// bare produces are two: bare-produce-paced sends every message due
// within drivers.PeerWindow and sleeps only when the next is further
// ahead (the cheapest pacer of ackcheck's precision, the reference for
// the paced ratio); bare-produce-sleeper sleeps until each message is due
// (a timer per message), a second row.
var peerWorkloads = []string{"bare-produce", "ackcheck-produce", "bare-produce-paced", "ackcheck-produce-paced", "bare-produce-sleeper", "bare-consume", "ackcheck-verify"}

// peerPairs are the comparisons --pairs can choose, each bare workloads
// and ackcheck's.
var peerPairs = map[string][]string{
	"unpaced": {"bare-produce", "ackcheck-produce"},
	"paced":   {"bare-produce-paced", "ackcheck-produce-paced", "bare-produce-sleeper"},
	"read":    {"bare-consume", "ackcheck-verify"},
}

// pacedKind says whether a workload kind is paced.
func pacedKind(kind string) bool {
	return strings.HasSuffix(kind, "-paced") || kind == "bare-produce-sleeper"
}

// peerWorkloadsOf returns the workloads of the chosen pairs, in the order
// they run. The reads read what the unpaced produce wrote, so "read" needs
// "unpaced".
func peerWorkloadsOf(pairs []string) ([]string, error) {
	want := map[string]bool{}
	for _, p := range pairs {
		if _, ok := peerPairs[p]; !ok {
			return nil, fmt.Errorf("--pairs %q: not a comparison; choose from unpaced, paced, read", p)
		}
		want[p] = true
	}
	if want["read"] && !want["unpaced"] {
		return nil, fmt.Errorf("--pairs read needs unpaced too: the reads read the topic and the ledger the unpaced produce wrote")
	}
	var kinds []string
	for _, k := range peerWorkloads {
		for p := range want {
			if slices.Contains(peerPairs[p], k) {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds, nil
}

func runBenchPeer(cmd *cobra.Command, shape peerShape, dir string, repeat int, pairs []string, rates []float64, seconds float64) error {
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	workloads, err := peerWorkloadsOf(pairs)
	if err != nil {
		return err
	}
	prof, pb, err := peerProfile(shape.Driver)
	if err != nil {
		return err
	}
	shape.Driver = prof.Name()
	embedded, err := embedPeerBroker(out, prof, &shape)
	if err != nil {
		return err
	}
	if embedded != nil {
		defer embedded.Close()
	}
	bare, err := pb.Peer(shape.Brokers, embedded)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "shape: %d messages of %s, %d producers (clients), %d partitions, linger %s, acks=all, no compression, at most %d in flight\n",
		shape.Messages, drivers.HumanBytes(int64(shape.Size)), shape.Producers, shape.Partitions, shape.Linger, shape.MaxInFlight)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if len(rates) > 0 {
		return runBenchCeiling(ctx, out, self, shape, bare, dir, rates, seconds)
	}
	runs, err := runPeerRounds(ctx, out, self, shape, bare, dir, repeat, workloads)
	if err != nil {
		return err
	}
	res := map[string]peerFigures{}
	for kind, fs := range runs {
		res[kind] = medianFigures(fs)
	}
	if repeat > 1 {
		fmt.Fprintf(out, "\nmedians of %d rounds (each round runs every workload once, in turn); a ratio is the median of the rounds' ratios, with their range:\n", repeat)
	}
	writePeerTable(out, shape, res, runs)
	return nil
}

// embedPeerBroker, when shape names no brokers, starts 3 of prof's
// in-process brokers and points shape at them; the caller closes what it
// returns. With brokers given it returns nil. Either way it prints which
// broker the bench runs against.
func embedPeerBroker(out io.Writer, prof drivers.Profile, shape *peerShape) (drivers.Embedded, error) {
	if len(shape.Brokers) > 0 {
		fmt.Fprintf(out, "broker: %s %s\n", prof.Name(), strings.Join(shape.Brokers, ","))
		return nil, nil
	}
	e, ok := prof.(drivers.Embedder)
	if !ok {
		return nil, fmt.Errorf("%s has no in-process broker: give --brokers", prof.Name())
	}
	embedded, err := e.Embed(3)
	if err != nil {
		return nil, err
	}
	shape.Brokers = embedded.Addrs()
	fmt.Fprintf(out, "broker: %s, 3 brokers in this process (not counted), every topic placed alike\n", embedded.Where())
	return embedded, nil
}

// runPeerRounds runs every workload repeat times, round after round, on
// topics of the round's own, and returns each workload's figures, one per
// round.
func runPeerRounds(ctx context.Context, out io.Writer, self string, shape peerShape, bare drivers.Peer, dir string, repeat int, workloads []string) (map[string][]peerFigures, error) {
	base := time.Now().Format("150405")
	tag := base
	topics := map[string]string{
		"bare-produce": "peer-bare-" + tag, "ackcheck-produce": "peer-ackcheck-" + tag,
		"bare-produce-paced": "peer-bare-paced-" + tag, "ackcheck-produce-paced": "peer-ackcheck-paced-" + tag,
		"bare-produce-sleeper": "peer-bare-sleeper-" + tag,
		// The reads read what ackcheck's unpaced produce wrote.
		"bare-consume": "peer-ackcheck-" + tag, "ackcheck-verify": "peer-ackcheck-" + tag,
	}
	runs := map[string][]peerFigures{}
	for round := 1; round <= repeat; round++ {
		if repeat > 1 {
			fmt.Fprintf(out, "round %d of %d\n", round, repeat)
		}
		if round > 1 {
			old := tag
			tag = fmt.Sprintf("%s-r%d", base, round)
			for k, t := range topics {
				topics[k] = strings.TrimSuffix(t, old) + tag
			}
		}
		if err := bare.CreateTopics(ctx, shape.Partitions, topicNames(topics, workloads)); err != nil {
			return nil, err
		}
		for i, kind := range workloads {
			// A topic no later workload reads is deleted when its
			// workload is done, so every topic of the round is gone at
			// its end (and runPeerWorkload collects kfake's garbage of
			// it before the next).
			f, err := runPeerWorkload(ctx, self, kind, shape, topics[kind], filepath.Join(dir, "ackcheck-"+tag))
			if err != nil {
				return nil, err
			}
			runs[kind] = append(runs[kind], f)
			fmt.Fprintf(out, "  %-24s %6.2f CPU-s per 1M  %9.0f msg/s  peak RSS %6.1f MiB  steal %4.1f%%%s  load %s\n", kind, f.cpuPerMillion(), f.rate(), float64(f.PeakRSSKiB)/1024, f.StealPct, lagNote(kind, f), loadAvg())
			if !slices.ContainsFunc(workloads[i+1:], func(later string) bool { return topics[later] == topics[kind] }) {
				if err := bare.DeleteTopics(ctx, []string{topics[kind]}); err != nil {
					return nil, fmt.Errorf("delete %s's topic: %w", kind, err)
				}
			}
		}
		os.RemoveAll(filepath.Join(dir, "ackcheck-"+tag))
		os.RemoveAll(filepath.Join(dir, "ackcheck-"+tag+"-paced"))
	}
	return runs, nil
}

// medianFigures is, field by field, the median of the rounds' figures.
func medianFigures(fs []peerFigures) peerFigures {
	med := func(get func(peerFigures) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m := peerFigures{Messages: fs[0].Messages}
	m.CPUSeconds = med(func(f peerFigures) float64 { return f.CPUSeconds })
	m.WallSeconds = med(func(f peerFigures) float64 { return f.WallSeconds })
	m.PeakRSSKiB = int64(med(func(f peerFigures) float64 { return float64(f.PeakRSSKiB) }))
	m.PacingLagP50Ms = med(func(f peerFigures) float64 { return f.PacingLagP50Ms })
	m.PacingLagP99Ms = med(func(f peerFigures) float64 { return f.PacingLagP99Ms })
	m.PacingLagMaxMs = med(func(f peerFigures) float64 { return f.PacingLagMaxMs })
	m.CallbackP99Ms = med(func(f peerFigures) float64 { return f.CallbackP99Ms })
	m.StealPct = med(func(f peerFigures) float64 { return f.StealPct })
	m.Shed = int64(med(func(f peerFigures) float64 { return float64(f.Shed) }))
	return m
}

// A child that has not finished after peerChildTimeout has hung (a
// consumer waiting for records that never come): it is killed and the
// benchmark fails, rather than waiting for ever.
const peerChildTimeout = 10 * time.Minute

// runPeerWorkload runs one workload in a child process. First it collects
// this process's garbage and returns it to the system: the broker then
// holds only what earlier workloads left, the same for both of a pair (an
// in-process kfake keeps a deleted topic's records until collected;
// before, ackcheck's unpaced produce ran against a kfake that still held
// the bare produce's 1 GiB, and the bare produce against an empty one).
func runPeerWorkload(ctx context.Context, self, kind string, shape peerShape, topic, out string) (peerFigures, error) {
	runtime.GC()
	debug.FreeOSMemory()
	s := shape
	s.Topic = topic
	s.Out = out
	if pacedKind(kind) {
		s.Out += "-paced"
	} else {
		s.Rate = 0
	}
	arg, _ := json.Marshal(s)
	cctx, cancel := context.WithTimeout(ctx, peerChildTimeout)
	defer cancel()
	child := exec.CommandContext(cctx, self, "bench", "--peer-child", kind, "--peer-shape", string(arg))
	child.Stderr = os.Stderr
	cpu0, cpuOK := load.ReadCPUTimes()
	o, err := child.Output()
	if err != nil {
		return peerFigures{}, fmt.Errorf("%s: %w", kind, err)
	}
	cpu1, _ := load.ReadCPUTimes()
	var f peerFigures
	if err := json.Unmarshal(o, &f); err != nil {
		return f, fmt.Errorf("%s: unreadable figures %q: %w", kind, o, err)
	}
	if pct, ok := load.StealPct(cpu0, cpu1); ok && cpuOK {
		f.StealPct = pct
	}
	if f.Messages+f.Shed != int64(shape.Messages) {
		return f, fmt.Errorf("%s: %d messages, not %d: the workloads did not do the same work", kind, f.Messages, shape.Messages)
	}
	return f, nil
}

// topicNames are the topics of kinds in topics (workload to topic), each
// once.
func topicNames(topics map[string]string, kinds []string) []string {
	var names []string
	for _, k := range kinds {
		if t := topics[k]; !slices.Contains(names, t) {
			names = append(names, t)
		}
	}
	return names
}

// writePeerTable prints the medians r of the rounds runs. A ratio is the
// median of the rounds' ratios, each of two workloads of one round (run
// within a minute of each other), with their range when there are several:
// the machine's speed drifts between rounds more than within one.
func writePeerTable(out io.Writer, shape peerShape, r map[string]peerFigures, runs map[string][]peerFigures) {
	ratioOf := func(a, b string, get func(peerFigures) float64) string {
		var rs []float64
		for i := range min(len(runs[a]), len(runs[b])) {
			rs = append(rs, get(runs[a][i])/get(runs[b][i]))
		}
		if len(rs) == 0 {
			return "-"
		}
		slices.Sort(rs)
		if len(rs) == 1 {
			return fmt.Sprintf("%.2fx", rs[0])
		}
		return fmt.Sprintf("%.2fx (%.2f-%.2f)", rs[len(rs)/2], rs[0], rs[len(rs)-1])
	}
	ratio := func(a, b string) string { return ratioOf(a, b, peerFigures.cpuPerMillion) }
	rss := func(a, b string) string {
		return ratioOf(a, b, func(f peerFigures) float64 { return float64(f.PeakRSSKiB) })
	}
	ran := func(kinds ...string) bool {
		for _, k := range kinds {
			if len(runs[k]) == 0 {
				return false
			}
		}
		return true
	}
	fmt.Fprintf(out, "\n| CPU-s per 1M messages (user+sys, one child process each) | bare client | ackcheck | ratio | target |\n|---|---|---|---|---|\n")
	if ran("bare-produce", "ackcheck-produce") {
		fmt.Fprintf(out, "| produce, as fast as the in-flight bound allows | %.2f | %.2f | %s | <= 1.15x |\n", r["bare-produce"].cpuPerMillion(), r["ackcheck-produce"].cpuPerMillion(), ratio("ackcheck-produce", "bare-produce"))
	}
	if ran("bare-produce-paced", "ackcheck-produce-paced") {
		fmt.Fprintf(out, "| produce paced at %.0f msg/s (bare: sends what is due within %s, sleeps when further ahead) | %.2f | %.2f | %s | <= 1.15x |\n", shape.Rate, drivers.PeerWindow, r["bare-produce-paced"].cpuPerMillion(), r["ackcheck-produce-paced"].cpuPerMillion(), ratio("ackcheck-produce-paced", "bare-produce-paced"))
	}
	if ran("bare-produce-sleeper", "ackcheck-produce-paced") {
		fmt.Fprintf(out, "| produce paced at %.0f msg/s (bare: sleeps until each message is due) | %.2f | %.2f | %s | |\n", shape.Rate, r["bare-produce-sleeper"].cpuPerMillion(), r["ackcheck-produce-paced"].cpuPerMillion(), ratio("ackcheck-produce-paced", "bare-produce-sleeper"))
	}
	if ran("bare-consume", "ackcheck-verify") {
		fmt.Fprintf(out, "| read-back + verdict vs a plain consumer | %.2f | %.2f | %s | <= 1.3x |\n", r["bare-consume"].cpuPerMillion(), r["ackcheck-verify"].cpuPerMillion(), ratio("ackcheck-verify", "bare-consume"))
	}
	if ran("bare-produce", "ackcheck-produce") {
		fmt.Fprintf(out, "| peak RSS, unpaced produce (MiB) | %.0f | %.0f | %s | <= 1.3x |\n", float64(r["bare-produce"].PeakRSSKiB)/1024, float64(r["ackcheck-produce"].PeakRSSKiB)/1024, rss("ackcheck-produce", "bare-produce"))
	}
	if ran("bare-consume", "ackcheck-verify") {
		fmt.Fprintf(out, "| peak RSS, read-back (MiB) | %.0f | %.0f | %s | |\n", float64(r["bare-consume"].PeakRSSKiB)/1024, float64(r["ackcheck-verify"].PeakRSSKiB)/1024, rss("ackcheck-verify", "bare-consume"))
	}
	if ran("ackcheck-produce-paced") {
		p := r["ackcheck-produce-paced"]
		fmt.Fprintf(out, "\nackcheck's own latency at %.0f msg/s: pacing lag p50 %.3f ms, p99 %.3f ms (max %.3f ms, target p99 < 1 ms), ack callback time p99 %.3f ms (one ack in 16 timed); the hypervisor took %.1f%% of the machine's CPU time meanwhile (steal)\n",
			shape.Rate, p.PacingLagP50Ms, p.PacingLagP99Ms, p.PacingLagMaxMs, p.CallbackP99Ms, p.StealPct)
	}
	for _, k := range []string{"bare-produce-paced", "bare-produce-sleeper"} {
		if !ran(k, "ackcheck-produce-paced") {
			continue
		}
		b := r[k]
		var noWorse int
		for i := range min(len(runs[k]), len(runs["ackcheck-produce-paced"])) {
			if runs["ackcheck-produce-paced"][i].PacingLagP99Ms <= runs[k][i].PacingLagP99Ms {
				noWorse++
			}
		}
		fmt.Fprintf(out, "%s's pacing lag: p50 %.3f ms, p99 %.3f ms (max %.3f ms); ackcheck's p99 no worse in %d of %d rounds\n",
			k, b.PacingLagP50Ms, b.PacingLagP99Ms, b.PacingLagMaxMs, noWorse, min(len(runs[k]), len(runs["ackcheck-produce-paced"])))
	}
}

// lagNote is a paced workload's pacing lag, and ackcheck's shed, for its
// line.
func lagNote(kind string, f peerFigures) string {
	if !pacedKind(kind) {
		return ""
	}
	note := fmt.Sprintf("  lag p99 %.3f ms", f.PacingLagP99Ms)
	if f.Shed > 0 {
		note += fmt.Sprintf(", shed %d", f.Shed)
	}
	return note
}

// loadAvg is the machine's load average over the last minute
// (/proc/loadavg), printed beside each figure: the machine is shared, and
// a figure means little without it. "-" where it cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "-"
}

// runPeerChild runs one workload in this process and prints its figures.
func runPeerChild(cmd *cobra.Command, kind, shapeJSON string) error {
	var s peerShape
	if err := json.Unmarshal([]byte(shapeJSON), &s); err != nil {
		return err
	}
	ctx := cmd.Context()
	// ACKCHECK_PEER_PROFILE=DIR writes each workload's CPU and allocation
	// profiles there (go tool pprof), for finding what dominates.
	if dir := os.Getenv("ACKCHECK_PEER_PROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, kind+".cpu"))
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		runtime.MemProfileRate = 64 << 10
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
			if m, err := os.Create(filepath.Join(dir, kind+".alloc")); err == nil {
				pprof.Lookup("allocs").WriteTo(m, 0)
				m.Close()
			}
		}()
	}
	before := cpuNow()
	start := time.Now()
	var f peerFigures
	var err error
	switch kind {
	case "bare-produce", "bare-produce-paced", "bare-produce-sleeper":
		f, err = bareProduce(ctx, s, kind)
	case "ackcheck-produce", "ackcheck-produce-paced":
		f, err = ackcheckProduce(ctx, s)
	case "bare-consume":
		var bare drivers.Peer
		if bare, err = peerClient(s); err == nil {
			f.Messages, err = bare.Consume(ctx, s.Topic)
		}
	case "ackcheck-verify":
		f.Messages, err = ackcheckVerify(ctx, s)
	default:
		err = fmt.Errorf("unknown workload %q", kind)
	}
	if err != nil {
		return err
	}
	f.CPUSeconds = cpuNow() - before
	f.WallSeconds = time.Since(start).Seconds()
	f.PeakRSSKiB = peakRSSKiB()
	return json.NewEncoder(cmd.OutOrStdout()).Encode(f)
}

// cpuNow is this process's user+system CPU seconds so far.
func cpuNow() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// bareProduce is the bare client's produce of kind: unpaced, or paced by
// the window pacer (bare-produce-paced) or the per-message sleeper.
func bareProduce(ctx context.Context, s peerShape, kind string) (peerFigures, error) {
	bare, err := peerClient(s)
	if err != nil {
		return peerFigures{}, err
	}
	pacing := drivers.PaceWindow
	if kind == "bare-produce-sleeper" {
		pacing = drivers.PacePerMessage
	}
	p, err := bare.Produce(ctx, s.peerWork(pacing))
	f := peerFigures{Messages: p.Acked}
	if lag := p.Lag; lag != nil {
		f.PacingLagP50Ms, f.PacingLagP99Ms, f.PacingLagMaxMs = float64(lag.ValueAtQuantile(50))/1000, float64(lag.ValueAtQuantile(99))/1000, float64(lag.Max())/1000
	}
	return f, err
}

// ackcheckProduce is `ackcheck run --no-e2e --no-verify` with the same
// shape, in this process: driver, load, ledger, run directory.
func ackcheckProduce(ctx context.Context, s peerShape) (peerFigures, error) {
	bare, err := peerClient(s)
	if err != nil {
		return peerFigures{}, err
	}
	d, settings, err := bare.Driver(s.peerWork(drivers.PaceWindow))
	if err != nil {
		return peerFigures{}, err
	}
	defer d.Close()
	lc := load.Config{Rate: s.Rate, Duration: time.Duration(float64(s.Messages) / s.Rate * float64(time.Second)),
		Producers: s.Producers, MessageSize: s.Size, MaxInFlight: s.MaxInFlight}
	if s.Rate == 0 {
		lc.Unpaced, lc.Rate, lc.Duration = true, float64(s.Messages), time.Second
	}
	rf := 3
	if len(s.Brokers) < 3 {
		rf = len(s.Brokers)
	}
	var counts statsGrab
	_, err = runner.Run(ctx, runner.Config{Out: s.Out, Driver: d, DriverSettings: settings,
		Topic: drivers.TopicSpec{Name: s.Topic, Partitions: s.Partitions, ReplicationFactor: rf}, Load: lc, Observer: &counts})
	if err != nil {
		return peerFigures{}, err
	}
	f := peerFigures{}
	info, err := runner.ReadRunInfo(s.Out)
	if err != nil {
		return f, err
	}
	f.Messages = counts.stats.Acked.Load()
	f.Shed = counts.stats.Shed.Load()
	if !lc.Unpaced {
		if lag := info.PacingLag; lag != nil {
			f.PacingLagP50Ms, f.PacingLagP99Ms, f.PacingLagMaxMs = float64(lag.P50Us)/1000, float64(lag.P99Us)/1000, float64(lag.MaxUs)/1000
		}
	}
	if q := info.CallbackTime; q != nil {
		f.CallbackP99Ms = float64(q.P99Us) / 1000
	}
	return f, nil
}

// statsGrab keeps the load's counters (runner.Observer).
type statsGrab struct{ stats *load.Stats }

func (g *statsGrab) Attach(s *load.Stats, _ time.Time, _ func() []faults.Record) { g.stats = s }

// ackcheckVerify is `ackcheck verify` of the unpaced produce's run.
func ackcheckVerify(ctx context.Context, s peerShape) (int64, error) {
	bare, err := peerClient(s)
	if err != nil {
		return 0, err
	}
	d, _, err := bare.Driver(s.peerWork(drivers.PaceWindow))
	if err != nil {
		return 0, err
	}
	defer d.Close()
	res, err := runner.Verify(ctx, s.Out, d, verifier.Options{}, 30*time.Second, nil)
	if err != nil {
		return 0, err
	}
	if res.Verdict != verifier.Pass {
		return 0, fmt.Errorf("verify judged %s: %v", res.Verdict, res.Reasons)
	}
	return res.Read, nil
}

// ceilingKinds are the workloads of the ceiling sweep, in the order each
// rate runs them.
var ceilingKinds = []string{"bare-produce-paced", "ackcheck-produce-paced"}

// runBenchCeiling offers each of rates, for seconds each, to the bare
// client's window pacer and to ackcheck's paced load, in turn, and prints
// for each its pacing lag, what ackcheck shed and the cores each used;
// then each one's ceiling: the highest rate at which its pacing lag p99
// stayed under 1 ms and nothing was shed, and that rate per core used.
func runBenchCeiling(ctx context.Context, out io.Writer, self string, shape peerShape, bare drivers.Peer, dir string, rates []float64, seconds float64) error {
	slices.Sort(rates)
	fmt.Fprintf(out, "ceiling: each rate offered for %.0f s, paced, to the bare client (window pacer) and to ackcheck, in turn; kept: pacing lag p99 < 1 ms and nothing shed\n", seconds)
	type best struct {
		rate, perCore float64
	}
	ceiling := map[string]best{}
	for i, rate := range rates {
		s := shape
		s.Rate = rate
		s.Messages = int(rate * seconds)
		tag := fmt.Sprintf("%s-c%d", time.Now().Format("150405"), i)
		topics := map[string]string{"bare-produce-paced": "peer-ceil-bare-" + tag, "ackcheck-produce-paced": "peer-ceil-ackcheck-" + tag}
		if err := bare.CreateTopics(ctx, s.Partitions, topicNames(topics, ceilingKinds)); err != nil {
			return err
		}
		for _, kind := range ceilingKinds {
			f, err := runPeerWorkload(ctx, self, kind, s, topics[kind], filepath.Join(dir, "ceiling-"+tag))
			if err != nil {
				return err
			}
			cores := f.CPUSeconds / f.WallSeconds
			kept := f.PacingLagP99Ms < 1 && f.Shed == 0
			fmt.Fprintf(out, "  %8.0f msg/s  %-24s lag p50 %7.3f p99 %8.3f max %8.3f ms  shed %7d  %.2f cores  %6.2f CPU-s per 1M  kept %-5v  load %s\n",
				rate, kind, f.PacingLagP50Ms, f.PacingLagP99Ms, f.PacingLagMaxMs, f.Shed, cores, f.cpuPerMillion(), kept, loadAvg())
			if kept && rate > ceiling[kind].rate {
				ceiling[kind] = best{rate: rate, perCore: rate / cores}
			}
			if err := bare.DeleteTopics(ctx, []string{topics[kind]}); err != nil {
				return fmt.Errorf("delete %s's topic: %w", kind, err)
			}
			os.RemoveAll(filepath.Join(dir, "ceiling-"+tag+"-paced"))
		}
	}
	for _, kind := range ceilingKinds {
		if c, ok := ceiling[kind]; ok {
			fmt.Fprintf(out, "ceiling of %s: %.0f msg/s with lag p99 < 1 ms and nothing shed, %.0f msg/s per core it used\n", kind, c.rate, c.perCore)
		} else {
			fmt.Fprintf(out, "ceiling of %s: none of the rates kept lag p99 < 1 ms with nothing shed\n", kind)
		}
	}
	return nil
}
