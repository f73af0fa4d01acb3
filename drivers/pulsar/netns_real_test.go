package pulsar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/runner"
)

// EnvNetns names a running standalone started with `cluster pulsar up
// --netns`. Without it, a machine known to run Pulsar (ACKCHECK_PULSAR_DIR)
// that can make network namespaces gets a standalone of the test's own,
// with a 512 MiB heap, for the test's length only.
const EnvNetns = "ACKCHECK_PULSAR_NETNS_DIR"

// The ports of the test's own standalone: clear of .ci/run's two (26650
// and 26750). Only the broker port is taken in the machine's namespace,
// by the driver's forwarder; the others live in the standalone's own.
const (
	ownBrokerPort = 26850
	ownWebPort    = 28280
	ownBookiePort = 23481
)

// netnsStandalone returns a standalone in a network namespace of its own,
// ready, or skips (fails with ACKCHECK_REQUIRE_NETNS) where there is none.
func netnsStandalone(t *testing.T) *pulsar.Cluster {
	t.Helper()
	if dir := os.Getenv(EnvNetns); dir != "" {
		p, err := pulsar.OpenCluster(pulsar.ClusterOptions{Options: cluster.Options{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Net() == nil {
			t.Fatalf("%s=%s holds a standalone started without --netns", EnvNetns, dir)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := p.WaitReady(ctx, 3*time.Minute); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if os.Getenv(plainPulsar.Var) == "" {
		t.Skipf("neither %s nor %s is set: this machine is not known to run Pulsar (cluster pulsar up --netns --dir D)", EnvNetns, plainPulsar.Var)
	}
	need.NetnsTools(t)
	base, err := os.MkdirTemp("", "pulsarns-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "standalone")
	p, err := pulsar.OpenCluster(pulsar.ClusterOptions{Options: cluster.Options{Dir: dir, NetNS: true}, HeapMB: 512, BrokerPort: ownBrokerPort, WebPort: ownWebPort, BookiePort: ownBookiePort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := p.Down(ctx); err != nil {
			t.Errorf("down: %v", err)
		}
		if n, ok, _ := netns.Open(ctx, cluster.NetnsPrefix(dir)); ok {
			t.Errorf("namespaces %s-* left after down", n.Prefix)
			n.Delete(ctx) //nolint:errcheck // this test made them
		}
		os.RemoveAll(base)
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("own standalone in %s up in %s (prefix %s)", dir, time.Since(start).Round(time.Second), p.Net().Prefix)
	return p
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Pulsar's own account of the run, from its log: the binary protocol
// connections from the hub (ServerCnx) and the admin requests it answered
// the hub (Jetty's request log).
var (
	logAt       = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]`)
	cnxOpened   = regexp.MustCompile(`\[/10\.213\.0\.254:(\d+)\] connected with clientVersion=Pulsar-Go`)
	cnxClosed   = regexp.MustCompile(`Closed connection from /10\.213\.0\.254:(\d+)`)
	healthReply = regexp.MustCompile(`INFO 10\.213\.0\.254 - - \[([^\]]+)\] "GET /admin/v2/brokers/health[^ ]* HTTP/1\.1" 200 `)
	hubRequest  = regexp.MustCompile(`INFO 10\.213\.0\.254 - - \[([^\]]+)\] "`)
	readyAgain  = regexp.MustCompile(`messaging service is ready`)
)

type pulsarLine struct {
	at   time.Time
	text string
}

// readPulsarLog reads the standalone's log lines at or after since, with
// their times (log4j's, in the machine's zone).
func readPulsarLog(t *testing.T, p *pulsar.Cluster, since time.Time) []pulsarLine {
	t.Helper()
	f, err := os.Open(p.LogFile(1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pulsarLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := logAt.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05,000", m[1], time.Local)
		if err == nil && !at.Before(since) {
			out = append(out, pulsarLine{at, sc.Text()})
		}
	}
	return out
}

// requestStart is a Jetty request log line's own time of the request's
// arrival ("02/Dec/2026:12:22:00 +0000", to the second).
func requestStart(s string) time.Time {
	at, _ := time.Parse("02/Jan/2006:15:04:05 -0700", s)
	return at
}

// A client-side cut of the standalone in its network namespace, while a
// paced load runs (200 msg/s for 40 s): partition-client node:1 at 5 s,
// heal-network 20 s later; 15 s after it for the acks to resume (they
// resumed 2.8 to 6.9 s after the heal here: TCP's retransmission backoff).
// Every figure is checked against an account ackcheck did not compute:
// Pulsar's own count of the messages it took in, its log of the client
// connections and of the admin requests it answered the hub.
func TestRealNetnsPulsarClientCut(t *testing.T) {
	p := netnsStandalone(t)
	prefix := p.Net().Prefix
	d, err := pulsar.New(pulsar.Config{ServiceURL: p.ServiceURL(), AdminURL: p.AdminURL(), BookieHTTPURL: p.BookieHTTPURL(), NetNS: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	const cut = 20 * time.Second
	steps, err := faults.ParseSchedule(fmt.Sprintf("at=5s partition-client node:1; at=%s heal-network", 5*time.Second+cut))
	if err != nil {
		t.Fatal(err)
	}
	topic := "netns-cut-" + time.Now().Format("150405")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 1},
		Load:   load.Config{Rate: 200, Duration: 40 * time.Second, Producers: 2, MessageSize: 512, DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: p}, Steps: steps, RecoveryTimeout: 30 * time.Second},
		Progress: logWriter{t}, ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 2 {
		t.Fatalf("faults: %+v", res.Faults)
	}
	// A fault ackcheck's own proof failed is an error, and the checks
	// against Pulsar's account below still run: they must not rest on it.
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Errorf("%s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
	}
	cutF, heal := res.Faults[0], res.Faults[1]

	// 1. Nothing acked lost, by the read-back, and Pulsar's own count of
	// the messages it took in on the topic covers every ack.
	if res.Verdict != "pass" || res.Lost != 0 || res.Acked < 6000 {
		t.Errorf("verdict %s, lost %d of %d acked: want PASS, 0 lost", res.Verdict, res.Lost, res.Acked)
	}
	var stats struct {
		MsgInCounter int64 `json:"msgInCounter"`
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: p.Net().Dial, DisableKeepAlives: true}}
	resp, err := hc.Get(p.AdminURL() + "/admin/v2/persistent/public/default/" + topic + "/partitioned-stats")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if err != nil || stats.MsgInCounter < res.Acked {
		t.Errorf("Pulsar counts %d messages in on %s (%v), ackcheck %d acked: the broker must have taken in every acked message", stats.MsgInCounter, topic, err, res.Acked)
	}

	// 2. The proof: the client's path to node 1 answered before the rule,
	// was cut after it, answered after the heal.
	np := cutF.NetworkProof
	if np == nil || np.Before == nil || np.After == nil || np.Healed == nil {
		t.Fatalf("network proof incomplete: %+v", np)
	}
	if len(np.Before.Cut) != 0 || !slices.Equal(np.After.Cut, []string{"client -> node 1"}) || len(np.Healed.Cut) != 0 || np.Healed.Paths != 1 {
		t.Errorf("network proof: before %s, after %s, healed %s: want client -> node 1 cut only after the rule", np.Before, np.After, np.Healed)
	}

	// 3. Acks stop for most of the cut and resume after the heal. The
	// cut lasted from the rule to its removal, by the records' times.
	spell := heal.At.Sub(cutF.At)
	if cutF.LongestStallMs < 0.8*float64(spell.Milliseconds()) {
		t.Errorf("longest stall %.0f ms over a cut of %s: acks went on through the cut", cutF.LongestStallMs, spell)
	}
	firstAck := cutF.At.Add(time.Duration(cutF.SlowestFirstAckMs * float64(time.Millisecond)))
	if cutF.SlowestFirstAckMs < 0 || firstAck.Before(heal.At) || firstAck.After(heal.At.Add(30*time.Second)) {
		t.Errorf("the slowest partition's first ack of a message sent after the cut came %.0f ms after it, the heal %s after it: want it after the heal, within 30 s",
			cutF.SlowestFirstAckMs, spell)
	}

	// 4. Recovery against Pulsar's log. Read it from the load's start.
	lines := readPulsarLog(t, p, res.LoadStart.Add(-time.Minute))
	// No request from the hub arrived at the broker during the cut, and
	// no binary connection was made: the cut cut (request times are to
	// the second, so a second is left either side).
	for _, l := range lines {
		if m := hubRequest.FindStringSubmatch(l.text); m != nil {
			if at := requestStart(m[1]); at.After(cutF.At.Add(time.Second)) && at.Before(heal.At.Add(-time.Second)) {
				t.Errorf("Pulsar took a request from the hub during the cut: %s", l.text)
			}
		}
		if cnxOpened.MatchString(l.text) && l.at.After(cutF.At.Add(time.Second)) && l.at.Before(heal.At) {
			t.Errorf("Pulsar took a client connection from the hub during the cut: %s", l.text)
		}
	}
	// ackcheck's "node ready again" is its health check through the hub
	// answering: the broker's request log has that answer, after the
	// heal, and none before it since the cut.
	ready := cutF.At.Add(time.Duration(cutF.ReadyMs * float64(time.Millisecond)))
	if cutF.ReadyMs < 0 || ready.Before(heal.At) {
		t.Errorf("ackcheck says node 1 was ready again %.0f ms after the cut, the heal came %s after it: ready while cut off", cutF.ReadyMs, spell)
	}
	var answered []time.Time
	for _, l := range lines {
		if healthReply.MatchString(l.text) && l.at.After(cutF.At) {
			answered = append(answered, l.at)
		}
	}
	if len(answered) == 0 || answered[0].Before(heal.At) || answered[0].After(ready.Add(2*time.Second)) {
		t.Errorf("ackcheck's ready at %s (%.0f ms after the cut; heal at %s): Pulsar's request log has the hub's health checks answered at %v: want the first after the heal and by ackcheck's ready",
			ready.Format("15:04:05.000"), cutF.ReadyMs, heal.At.Format("15:04:05.000"), answered)
	}
	// The broker did not restart: its log has no "messaging service is
	// ready" after the cut, and ackcheck's log oracle says it has none.
	for _, l := range lines {
		if readyAgain.MatchString(l.text) && l.at.After(cutF.At) {
			t.Errorf("Pulsar restarted during the run: %s", l.text)
		}
	}
	if cutF.OracleReadyMs != nil {
		t.Errorf("ackcheck's oracle gives a ready time (%.0f ms) for a broker whose log has no return", *cutF.OracleReadyMs)
	}
	// The load's client connections, by Pulsar's log: each one open when
	// the cut came either stayed open through it, or was closed and a new
	// one made, before the first ack after the heal (an ack needs one).
	open := map[string]time.Time{}
	var closed, reopened []string
	for _, l := range lines {
		if m := cnxOpened.FindStringSubmatch(l.text); m != nil {
			open[m[1]] = l.at
			if l.at.After(cutF.At) {
				reopened = append(reopened, fmt.Sprintf(":%s at %s", m[1], l.at.Format("15:04:05.000")))
				if l.at.After(firstAck) {
					t.Errorf("a client connection was made at %s, after ackcheck's first ack after the heal (%s), and none stayed open", l.at.Format("15:04:05.000"), firstAck.Format("15:04:05.000"))
				}
			}
		}
		if m := cnxClosed.FindStringSubmatch(l.text); m != nil {
			if opened, ok := open[m[1]]; ok && opened.Before(cutF.At) && l.at.After(cutF.At) && l.at.Before(firstAck) {
				closed = append(closed, fmt.Sprintf(":%s at %s", m[1], l.at.Format("15:04:05.000")))
			}
		}
	}
	if len(closed) > 0 && len(reopened) == 0 {
		t.Errorf("Pulsar closed the load's connection(s) %v during the cut and took no new one, yet ackcheck saw acks again at %s", closed, firstAck.Format("15:04:05.000"))
	}
	t.Logf("cut %s; longest stall %.0f ms; first ack after the heal %.0f ms after it; ackcheck's ready %.0f ms, Pulsar answered the hub's health check at %v; client connections closed by Pulsar in the cut: %v, made after it: %v; Pulsar took in %d messages, ackcheck acked %d, lost %d",
		spell, cutF.LongestStallMs, float64(firstAck.Sub(heal.At).Milliseconds()), cutF.ReadyMs, answered, closed, reopened, stats.MsgInCounter, res.Acked, res.Lost)
}
