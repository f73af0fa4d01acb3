// Package scenariotest holds what the real-cluster truth tests of every
// broker share: they live in each broker's directory (drivers/<broker>,
// as external test packages), and run scenarios there through the runner
// or through the ackcheck command. It names no broker: what is a broker's
// own (its cluster, its driver's settings, its log oracle) stays in its
// directory.
//
// Conventions the helpers keep: ACKCHECK_RATE overrides the load rate of
// the tests that use Rate, and ACKCHECK_REPORT_DIR, when set, receives
// each run's summary (SaveSummary), rendered reports (CheckReportRenders)
// and audit comparisons (RunSwitchedAudit); .ci/run prints them.
package scenariotest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/ackcheck/ackcheck/verifier"
)

// Rate is the load rate of the leader-kill truth runs: $ACKCHECK_RATE
// when it is a positive number, else 1000 msg/s (README.md says why).
func Rate() float64 {
	if r, err := strconv.ParseFloat(os.Getenv("ACKCHECK_RATE"), 64); err == nil && r > 0 {
		return r
	}
	return 1000
}

// TopicName is a topic of the test's own on a shared cluster: its name
// made a legal topic name, and the current second.
func TopicName(t testing.TB) string {
	return fmt.Sprintf("%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "=", "-").Replace(t.Name())), time.Now().Unix())
}

// SaveSummary logs a run's summary and, when ACKCHECK_REPORT_DIR is set,
// writes it there as name.txt.
func SaveSummary(t testing.TB, name string, res *verifier.Result) {
	var b strings.Builder
	res.WriteSummary(&b)
	t.Logf("%s:\n%s", name, b.String())
	if dir := os.Getenv("ACKCHECK_REPORT_DIR"); dir != "" {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name+".txt"), []byte(b.String()), 0o644)
	}
}

// CheckReportRenders renders the run's report.html in headless Chromium
// and fails on a blank page; the PNG goes to ACKCHECK_REPORT_DIR. Without
// Chromium it only logs, unless ACKCHECK_REQUIRE_CHROMIUM is set.
func CheckReportRenders(t testing.TB, out, name string) {
	t.Helper()
	if !need.Found("chromium") && os.Getenv(string(need.Chromium)) == "" {
		t.Log("chromium not installed: report.html not rendered")
		return
	}
	shot := filepath.Join(t.TempDir(), name+".png")
	if dir := os.Getenv("ACKCHECK_REPORT_DIR"); dir != "" {
		shot = filepath.Join(dir, name+".png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := report.Screenshot(ctx, filepath.Join(out, "report.html"), shot, 1000, 2200); err != nil {
		t.Fatal(err)
	}
	colors, inked, err := report.Inked(shot)
	if err != nil || colors < 8 || inked < 0.02 {
		t.Fatalf("report of the real run looks blank: %d colours, %.1f%% inked, %v", colors, inked*100, err)
	}
}

// Progress is a run's progress writer that logs each line to the test.
func Progress(t testing.TB) io.Writer { return testWriter{t} }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// KillFigures is what ackcheck reported for a fault that took nodes away,
// as a broker's log oracle test compares it with the broker's own logs.
type KillFigures struct {
	Nodes                         []int32
	At                            time.Time
	ReadyMs, InSyncMs, FirstAckMs float64
	Evidence                      string
	// AcksAll: every partition's ack waited for the killed broker.
	AcksAll bool
	// Until bounds the logs read: the next fault that hit the same
	// brokers (zero: none).
	Until time.Time
}

// Figures picks the first fault's recovery figures out of a result.
func Figures(res *verifier.Result, acksAll bool) KillFigures {
	f := res.Faults[0]
	return KillFigures{Nodes: []int32{f.Node}, At: f.At, ReadyMs: f.ReadyMs, InSyncMs: f.InSyncMs,
		FirstAckMs: f.SlowestFirstAckMs, Evidence: f.InSyncEvidence, AcksAll: acksAll}
}

// DownMs is how long after the kill (res.Faults[0]) the restart
// (res.Faults[1]) came, as the run recorded them: both are stamped just
// before they act, and recovery is measured from the kill's stamp. It is
// not the scheduled gap: a kill that took a while to find its leader
// comes late and leaves less (CI once saw 7.7 s of a planned 8 s).
func DownMs(t testing.TB, res *verifier.Result) float64 {
	t.Helper()
	if len(res.Faults) < 2 {
		t.Fatalf("faults recorded: %+v", res.Faults)
	}
	kill, restart := res.Faults[0], res.Faults[1]
	if restart.Action != faults.Restart || restart.Result != faults.Applied || !restart.At.After(kill.At) {
		t.Fatalf("restart after the kill: %+v", restart.Record)
	}
	return float64(restart.At.Sub(kill.At) / time.Millisecond)
}

// AuditSettings are p's durability settings as the fsync audit runs them,
// switched by set (nil: the cluster runs them already). It fails the test
// when p has no audit.
func AuditSettings(t testing.TB, p drivers.Profile, set func(ctx context.Context, on bool) error) []scenarios.AuditSetting {
	t.Helper()
	d, ok := p.Durability()
	if !ok {
		t.Fatalf("%s has no fsync audit", p.Name())
	}
	return scenarios.AuditSettings(d, set)
}

// Switched is a server-wide setting an audit's settings switch (their
// Prepare); RunSwitchedAudit puts back the value it found.
type Switched struct {
	Name string
	Get  func() bool
	Set  func(context.Context, bool) error
}

// RunSwitchedAudit runs an audit whose settings switch the cluster (their
// Prepare), on 3 partitions of replication rf: 300 msg/s of 512 B for
// 16 s, power loss of every node at 6 s. A setting expected to lose is
// run up to 3 times until it does (a loss can find everything written
// back). Each row's power loss must have applied on n nodes, and its
// latency before the loss must be measured. The comparison goes to
// $ACKCHECK_REPORT_DIR/<reportName>/audit.md when that is set.
func RunSwitchedAudit(t testing.TB, sw Switched, audit scenarios.FsyncAudit, d drivers.Driver, nodes faults.Nodes, rf, n int, reportName string) *scenarios.AuditResult {
	t.Helper()
	was := sw.Get()
	defer func() {
		if err := sw.Set(context.Background(), was); err != nil {
			t.Errorf("put %s back: %v", sw.Name, err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if rd := os.Getenv("ACKCHECK_REPORT_DIR"); rd != "" {
		dir = filepath.Join(rd, reportName)
		os.RemoveAll(dir)
	}
	base := runner.Config{
		Driver:          d,
		Topic:           drivers.TopicSpec{Partitions: 3, ReplicationFactor: rf},
		Load:            load.Config{Rate: 300, Duration: 16 * time.Second, Producers: 2, MessageSize: 512, LiveRead: true},
		ReadIdleTimeout: 30 * time.Second,
		Faults:          &runner.FaultPlan{Nodes: nodes, RecoveryTimeout: time.Minute},
		Progress:        Progress(t), ProgressEvery: 5 * time.Second,
	}
	res := audit.NewResult()
	for _, s := range audit.Settings {
		var row scenarios.AuditRow
		for try := 1; try <= 3; try++ {
			a := audit
			a.Topic = fmt.Sprintf("%s-try%d", audit.Topic, try)
			var err error
			if row, err = a.RunSetting(ctx, base, s, filepath.Join(dir, fmt.Sprintf("%s-try%d", s.Name, try))); err != nil {
				t.Fatal(err)
			}
			if !s.ExpectLoss || row.Lost > 0 {
				break
			}
			t.Logf("try %d of %s lost nothing", try, s.Name)
		}
		res.Rows = append(res.Rows, row)
	}
	md := res.Markdown()
	t.Logf("\n%s", md)
	os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644)
	for _, r := range res.Rows {
		if r.PowerLoss != "applied" || len(r.NodeLoss) != n {
			t.Fatalf("%s: power loss %q on %d nodes, want %d", r.Setting.Name, r.PowerLoss, len(r.NodeLoss), n)
		}
		if r.SteadyPublish.Count == 0 {
			t.Errorf("%s: no latency before the loss", r.Setting.Name)
		}
	}
	return res
}

// Binary is the ackcheck command built once for a test binary: every
// test that runs it as a user would runs the same build (about 5-10 s of
// linking each). The zero value is ready; the package's TestMain calls
// Remove after m.Run.
type Binary struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Path builds the command on first use and returns its path.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "ackcheck-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.dir, b.bin = dir, filepath.Join(dir, "ackcheck")
		if out, err := exec.Command("go", "build", "-o", b.bin, "github.com/ackcheck/ackcheck/cmd/ackcheck").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// Remove deletes the build, if there was one.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// ReadResult reads a run directory's result.json.
func ReadResult(t testing.TB, out string) verifier.Result {
	t.Helper()
	r, err := runner.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// SyncBuffer is a bytes.Buffer safe to read while a child process writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartUntil starts cmd with its output in a buffer and waits until the
// output contains marker; it kills cmd and fails the test after timeout.
// A test that fails while cmd still runs interrupts it twice in its
// cleanup (an ackcheck run heals as it exits), so that it does not go on
// acting on a shared cluster.
func StartUntil(t testing.TB, cmd *exec.Cmd, marker string, timeout time.Duration) *SyncBuffer {
	t.Helper()
	buf := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test waited for it
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(time.Second)
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(timeout)
	for !strings.Contains(buf.String(), marker) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s:\n%s", marker, timeout, buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return buf
}
