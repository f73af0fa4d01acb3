package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

// binary builds ackcheck once per test binary run.
func binary(t *testing.T) string { return built.Path(t) }

// built is the package's one ackcheck binary: every test that runs the
// real binary runs the same build (about 5-10 s of linking each, a
// dozen times in CI, before it was shared). TestMain removes it.
var built scenariotest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	built.Remove()
	os.Exit(code)
}

func kfakeCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func readResult(t *testing.T, out string) verifier.Result {
	t.Helper()
	r, err := runner.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExitCodes(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	natsDir, oddDir := filepath.Join(dir, "natscluster"), filepath.Join(dir, "oddcluster")
	for d, kind := range map[string]string{natsDir: "nats", oddDir: "rabbit"} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "cluster.json"), []byte(`{"kind": "`+kind+`", "nodes": 3, "base_port": 1}`), 0o644)
	}
	oddFile, fileDir := filepath.Join(dir, "odd.yaml"), filepath.Join(dir, "cluster.yaml")
	os.WriteFile(oddFile, []byte("broker: rabbit\nnodes:\n  - {id: 1, pid_file: /nonexistent, start: 'true'}\n"), 0o644)
	os.WriteFile(fileDir, []byte("broker: kafka\nbrokers: ["+brokers+"]\nnodes:\n  - {id: 1, pid_file: /nonexistent, start: 'true'}\n"), 0o644)
	ctx := context.Background()
	tests := []struct {
		name     string
		args     []string
		code     int
		stderrRE string
		stdoutRE string
	}{
		{"bad flag", []string{"run", "--rate", "x"}, exitError, "invalid argument", ""},
		{"no out", []string{"run", "--brokers", brokers}, exitError, "--out is required", ""},
		{"bad acks", []string{"run", "--brokers", brokers, "--out", dir + "/a", "--acks", "2"}, exitError, "--acks", ""},
		{"tiny message", []string{"run", "--brokers", brokers, "--out", dir + "/b", "--message-size", "10"}, exitError, "--message-size must be at least", ""},
		{"unknown driver", []string{"run", "--driver", "nope", "--brokers", brokers, "--out", dir + "/c"}, exitError, "the drivers are", ""},
		{"unreachable", []string{"run", "--brokers", "127.0.0.1:1", "--out", dir + "/d", "--duration", "1s"}, exitError, "no broker answered", ""},
		{"verify not a run", []string{"verify", "--out", dir}, exitError, "not an ackcheck run directory", ""},
		{"pulsar without url", []string{"run", "--driver", "pulsar", "--out", dir + "/p1"}, exitError, "--service-url", ""},
		{"pulsar unreachable", []string{"run", "--driver", "pulsar", "--service-url", "pulsar://127.0.0.1:1", "--admin-url", "http://127.0.0.1:1",
			"--out", dir + "/p2", "--duration", "1s"}, exitError, "no broker answered", ""},
		{"lazyfs cluster kind", []string{"run", "--cluster-dir", dir, "--out", dir + "/p3", "--fault", "at=1s power-loss all", "--duration", "2s"}, exitError, "holds no cluster", ""},
		// A flag of another driver is an error that names it (issue 13).
		{"nats flag with kafka", []string{"run", "--brokers", brokers, "--out", dir + "/r8", "--servers", "nats://127.0.0.1:1"}, exitError, "--servers is a flag of the nats driver, and this run uses --driver kafka", ""},
		{"kafka flag with pulsar", []string{"run", "--driver", "pulsar", "--service-url", "pulsar://127.0.0.1:1", "--out", dir + "/r9", "--acks", "1"}, exitError, "--acks is a flag of the kafka driver", ""},
		// The cluster's broker is the driver (issue 13): given another,
		// refused, naming both; unknown cluster kinds and cluster-file
		// brokers are refused with the list of drivers.
		{"driver against the cluster's", []string{"run", "--driver", "kafka", "--cluster-dir", natsDir, "--out", dir + "/r10", "--fault", "at=1s kill node:1", "--duration", "2s"}, exitError, "--driver kafka, but the cluster faults act on runs nats", ""},
		{"cluster of an unknown kind", []string{"run", "--cluster-dir", oddDir, "--out", dir + "/r11", "--duration", "2s"}, exitError, `holds a "rabbit" cluster`, ""},
		{"cluster file of an unknown broker", []string{"run", "--cluster-file", oddFile, "--out", dir + "/r12", "--duration", "2s"}, exitError, "use one of kafka, pulsar, nats", ""},
		{"fault on a node that is not there", []string{"run", "--cluster-file", fileDir, "--out", dir + "/r13", "--fault", "at=1s kill node:7", "--duration", "2s"}, exitError, "node 7 is not one of the nodes", ""},
		{"topic fsync on a driver without it", []string{"run", "--driver", "pulsar", "--service-url", "pulsar://127.0.0.1:1", "--admin-url", "http://127.0.0.1:1", "--out", dir + "/r14", "--fault", "at=1s fsync-on topic:t", "--duration", "2s"}, exitError, "the pulsar driver cannot change topic settings", ""},
		// Refused before any topic or file exists (issue 12, item 6).
		{"rate NaN", []string{"run", "--brokers", brokers, "--out", dir + "/r1", "--topic", "nan", "--rate", "NaN"}, exitError, "--rate NaN: must be a number above 0", ""},
		{"empty topic", []string{"run", "--brokers", brokers, "--out", dir + "/r2", "--topic", ""}, exitError, "--topic is empty", ""},
		{"producers 0", []string{"run", "--brokers", brokers, "--out", dir + "/r3", "--producers", "0"}, exitError, "--producers 0: use 1 to 1024", ""},
		{"max-in-flight 0", []string{"run", "--brokers", brokers, "--out", dir + "/r4", "--max-in-flight", "0"}, exitError, "--max-in-flight 0", ""},
		{"delivery-timeout 0", []string{"run", "--brokers", brokers, "--out", dir + "/r5", "--delivery-timeout", "0s"}, exitError, "--delivery-timeout 0s: must be above 0", ""},
		{"sasl user without mechanism", []string{"run", "--brokers", brokers, "--out", dir + "/r6", "--sasl-username", "u", "--sasl-password", "p"}, exitError, "need --sasl-mechanism", ""},
		{"junit into a missing dir", []string{"run", "--brokers", brokers, "--out", dir + "/r7", "--junit", dir + "/nope/j.xml"}, exitError, "does not exist; create it first", ""},
		{"pass", []string{"run", "--brokers", brokers, "--out", dir + "/ok", "--partitions", "4", "--rate", "500", "--duration", "2s"}, exitPass, "", "verdict: PASS"},
		{"reuse out", []string{"run", "--brokers", brokers, "--out", dir + "/ok", "--duration", "1s"}, exitError, "already holds a run", ""},
		{"verify again", []string{"verify", "--out", dir + "/ok"}, exitPass, "", "verdict: PASS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(ctx, tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			if tc.stderrRE != "" && !strings.Contains(stderr.String(), tc.stderrRE) {
				t.Fatalf("stderr %q does not mention %q", stderr.String(), tc.stderrRE)
			}
			if tc.stdoutRE != "" && !strings.Contains(stdout.String(), tc.stdoutRE) {
				t.Fatalf("stdout %q does not mention %q", stdout.String(), tc.stdoutRE)
			}
		})
	}
	if _, err := os.Stat(dir + "/d"); !os.IsNotExist(err) {
		t.Errorf("a run that could not reach its brokers left %s/d behind", dir)
	}
	for _, r := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14"} {
		if _, err := os.Stat(dir + "/" + r); !os.IsNotExist(err) {
			t.Errorf("a refused run left %s/%s behind", dir, r)
		}
	}
	r := readResult(t, dir+"/ok")
	if r.Verdict != "pass" || r.Acked != 1000 || r.Lost != 0 || r.Publish.Count != 1000 || r.RunID == "" {
		t.Fatalf("result.json: %+v", r)
	}
}

// A failing verdict exits 1: the broker comes back empty before verify.
func TestExitCodeFail(t *testing.T) {
	c := kfakeCluster(t)
	addrs := c.ListenAddrs()
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", strings.Join(addrs, ","), "--out", out,
		"--partitions", "2", "--rate", "500", "--duration", "1s", "--no-verify"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("run --no-verify: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "result.json")); !os.IsNotExist(err) {
		t.Fatal("--no-verify wrote a verdict")
	}
	c.Close()
	c2, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.Ports(portsOf(t, addrs)...))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	stdout.Reset()
	code := execute(context.Background(), []string{"verify", "--out", out, "--read-idle-timeout", "5s"}, &stdout, &stderr)
	if code != exitFail || !strings.Contains(stdout.String(), "verdict: FAIL") {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFail, stdout.String(), stderr.String())
	}
	if r := readResult(t, out); r.Lost != 500 {
		t.Fatalf("lost %d, want all 500", r.Lost)
	}
}

func portsOf(t *testing.T, addrs []string) []int {
	var ps []int
	for _, a := range addrs {
		var p int
		if _, err := fmt.Sscan(a[strings.LastIndex(a, ":")+1:], &p); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// SIGKILL of ackcheck in the middle of its load, then `ackcheck verify` on
// its directory: the verdict counts exactly the acks the ledger holds, and
// nothing the ledger holds as acked is reported lost while it is in the
// topic (the broker, here kfake in this process, kept everything). The
// verdict is aborted, exit 2, never PASS (issue 35: it was PASS with "shed
// 0"): the run is not the 60 s experiment asked for, and it says how far
// it got; shed was never measured, so result.json says null.
func TestSIGKILLThenVerify(t *testing.T) {
	bin := binary(t)
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--brokers", brokers, "--out", out, "--partitions", "4",
		"--rate", "4000", "--duration", "60s", "--progress-interval", "500ms")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !strings.Contains(stdout.String(), "acked") {
		t.Fatalf("no progress before the kill:\n%s", stdout.String())
	}

	vout, err := exec.Command(bin, "verify", "--out", out).CombinedOutput()
	t.Logf("verify:\n%s", vout)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
		t.Fatalf("verify after SIGKILL: %v, want exit %d (aborted)", err, exitError)
	}
	r := readResult(t, out)
	if r.Verdict != verifier.Aborted || r.Experiment == nil || r.Experiment.LoadEnded || r.Experiment.Reached != nil || r.Experiment.Scheduled != 240000 {
		t.Fatalf("verdict %s, experiment %+v: want aborted, the load's end never recorded, 240000 scheduled", r.Verdict, r.Experiment)
	}
	why := r.Experiment.Why(r.Sent)
	if !strings.Contains(string(vout), "aborted") || !strings.Contains(why, "never recorded its end") || !strings.Contains(why, fmt.Sprintf("%d of the 240000 scheduled sends", r.Sent)) {
		t.Fatalf("the reason does not say how far the load got: %q\n%s", why, vout)
	}
	if r.Shed != nil || !regexp.MustCompile(`shed\s+unknown`).Match(vout) {
		t.Fatalf("shed %v after SIGKILL: it was never measured, want unknown\n%s", r.Shed, vout)
	}
	raw, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil || !bytes.Contains(raw, []byte(`"shed": null`)) {
		t.Fatalf("result.json's shed is not null: %v", err)
	}
	for _, f := range []string{"report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !bytes.Contains(bytes.ToUpper(b), []byte("ABORTED")) || bytes.Contains(b, []byte("PASS")) {
			t.Fatalf("%s does not say aborted, or says PASS: %v", f, err)
		}
	}

	l, err := ledger.Open(runner.LedgerDir(out), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acks, err := l.Count(context.Background(), ledger.Outcome, func(e ledger.Event) bool { return e.Status == ledger.OutcomeAcked })
	if err != nil {
		t.Fatal(err)
	}
	if acks == 0 || r.Acked != acks {
		t.Fatalf("verdict counts %d acked, ledger holds %d", r.Acked, acks)
	}
	if r.Lost != 0 || r.Phantom != 0 || r.Corrupt != 0 || r.CleanLedger {
		t.Fatalf("lost %d phantom %d corrupt %d clean %v: want 0, 0, 0, false", r.Lost, r.Phantom, r.Corrupt, r.CleanLedger)
	}
	// A real crash: every read whose send the ledger lacks lies in its
	// crash window, and the ledger is proven whole.
	if r.UnrecordedPastWindow != 0 || r.Ledger == nil || !r.Ledger.Whole {
		t.Fatalf("after a real SIGKILL: %d of %d unrecorded reads past the crash window, ledger %+v", r.UnrecordedPastWindow, r.Unrecorded, r.Ledger)
	}
	t.Logf("after SIGKILL: sent %d acked %d indeterminate %d unrecorded %d not written %d",
		r.Sent, r.Acked, r.Indeterminate, r.Unrecorded, r.NotWritten)
}

// Issue 12's probe: every write refused (a message over the topic's
// max.message.bytes) must not pass as "nothing acked was lost"; the
// verdict fails with the broker's reason.
func TestNothingAckedFails(t *testing.T) {
	c := kfakeCluster(t)
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
		"--topic", "small", "--topic-config", "max.message.bytes=500", "--message-size", "1024",
		"--partitions", "2", "--rate", "100", "--duration", "1s"}, &stdout, &stderr)
	if code != exitFail || !strings.Contains(stdout.String(), "verdict: FAIL") {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFail, stdout.String(), stderr.String())
	}
	r := readResult(t, out)
	if r.Acked != 0 || len(r.Reasons) == 0 || !strings.Contains(r.Reasons[0], "only 0 of 100 sent messages were acked") ||
		!strings.Contains(strings.ToUpper(r.Reasons[0]), "MESSAGE_TOO_LARGE") {
		t.Fatalf("acked %d, reasons %q", r.Acked, r.Reasons)
	}
}

// status, down, start and stop of a directory without a cluster are an
// error that says how to make one, never a table of default ports.
func TestClusterActionsNeedACluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	for _, kind := range []string{"kafka", "nats", "pulsar"} {
		for _, action := range []string{"status", "down"} {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), []string{"cluster", kind, action, "--dir", dir}, &stdout, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), "holds no local cluster") || stdout.Len() != 0 {
				t.Errorf("cluster %s %s: exit %d, stdout %q, stderr %q", kind, action, code, stdout.String(), stderr.String())
			}
		}
	}
}

// Issues 12 and 24: a run's ledger damaged in the ways users met (its
// write-ahead log cut, emptied or deleted; COMMITTED deleted or emptied,
// alone or with the log cut) is exit 2 "the ledger is damaged" naming the
// files as they are, never a verdict on what is left: no result.json. verify
// changes no byte of it, and a second verify says the same.
func TestVerifyDamagedLedger(t *testing.T) {
	c := kfakeCluster(t)
	base := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", base,
		"--partitions", "2", "--rate", "500", "--duration", "2s", "--no-verify"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("run: exit %d: %s", code, stderr.String())
	}
	wals, _ := filepath.Glob(filepath.Join(base, "ledger", "*.log"))
	if len(wals) == 0 {
		t.Fatal("no write-ahead log in the run's ledger")
	}
	cutWALs := func(t *testing.T, dir string, keep func(int64) int64) {
		logs, _ := filepath.Glob(filepath.Join(dir, "ledger", "*.log"))
		for _, w := range logs {
			st, _ := os.Stat(w)
			if err := os.Truncate(w, keep(st.Size())); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed := func(dir string) string { return filepath.Join(dir, "ledger", "COMMITTED") }
	cases := []struct {
		name string
		hurt func(t *testing.T, dir string)
	}{
		{"write-ahead log cut to a tenth", func(t *testing.T, dir string) { cutWALs(t, dir, func(n int64) int64 { return n / 10 }) }},
		{"write-ahead log emptied", func(t *testing.T, dir string) { cutWALs(t, dir, func(int64) int64 { return 0 }) }},
		{"write-ahead log deleted", func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, "ledger", "*.log"))
			for _, w := range logs {
				os.Remove(w)
			}
		}},
		{"COMMITTED deleted", func(t *testing.T, dir string) { os.Remove(committed(dir)) }},
		{"COMMITTED emptied", func(t *testing.T, dir string) { os.Truncate(committed(dir), 0) }},
		{"COMMITTED deleted and the log cut by a third", func(t *testing.T, dir string) {
			os.Remove(committed(dir))
			cutWALs(t, dir, func(n int64) int64 { return n * 2 / 3 })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			if err := os.CopyFS(out, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			tc.hurt(t, out)
			before := dirHashes(t, filepath.Join(out, "ledger"))
			var msgs []string
			for i := 0; i < 2; i++ {
				var stdout, stderr bytes.Buffer
				code := execute(context.Background(), []string{"verify", "--out", out}, &stdout, &stderr)
				if code != exitError || !strings.Contains(stderr.String(), "the ledger is damaged") || strings.Contains(stdout.String(), "verdict") {
					t.Fatalf("verify %d: exit %d\nstdout: %s\nstderr: %s", i+1, code, stdout.String(), stderr.String())
				}
				if _, err := os.Stat(filepath.Join(out, "result.json")); err == nil {
					t.Fatalf("verify %d wrote a result.json from a damaged ledger", i+1)
				}
				for _, f := range strings.Fields(stderr.String()) {
					if f = strings.TrimRight(f, ",.;:)"); strings.HasPrefix(f, out) {
						if _, err := os.Stat(f); err != nil && !strings.HasSuffix(f, "COMMITTED") {
							t.Errorf("the error names %s, which is not there", f)
						}
					}
				}
				msgs = append(msgs, stderr.String())
			}
			if msgs[0] != msgs[1] {
				t.Errorf("a second verify said something else:\n%s\n%s", msgs[0], msgs[1])
			}
			if after := dirHashes(t, filepath.Join(out, "ledger")); after != before {
				t.Fatalf("verify changed the damaged ledger:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// dirHashes names every file in dir with a hash of its content.
func dirHashes(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%x ", e.Name(), sha256.Sum256(data))
	}
	return b.String()
}

// Issue 12's probe: 100 bytes altered in a ledger table file after a
// verify; verify again is exit 2 with a sentence naming the file, no panic.
// verify never writes the run's ledger, and a run this short keeps its
// events in the write-ahead log: the ledger is opened for writing once
// here, which writes the log out as a table, as a run of millions of
// messages does while it runs.
func TestVerifyCorruptTable(t *testing.T) {
	c := kfakeCluster(t)
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
		"--partitions", "2", "--rate", "2000", "--duration", "2s"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("run: exit %d: %s", code, stderr.String())
	}
	if code := execute(context.Background(), []string{"verify", "--out", out}, &stdout, &stderr); code != exitPass {
		t.Fatalf("verify: exit %d: %s", code, stderr.String())
	}
	l, err := ledger.Open(filepath.Join(out, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(out, "ledger", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table file in the ledger after it was opened for writing")
	}
	for _, s := range ssts {
		alterMiddle(t, s, 100)
	}
	stdout.Reset()
	stderr.Reset()
	code := execute(context.Background(), []string{"verify", "--out", out}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "the ledger is damaged") || !strings.Contains(stderr.String(), ".sst") ||
		strings.Contains(stderr.String(), "goroutine") || strings.Contains(stdout.String(), "verdict") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}

// Issue 12's probe: two runs started together on one --out. Exactly one
// runs; the other exits 2 at once, and the winner's run.json is its own.
func TestTwoRunsOneOut(t *testing.T) {
	c := kfakeCluster(t)
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--partitions", "2", "--rate", "200", "--duration", "1s"}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			codes[i] = execute(context.Background(), args, &stdout, &stderr)
			errs[i] = stderr.String()
		}()
	}
	wg.Wait()
	slices.Sort(codes)
	if codes[0] != exitPass || codes[1] != exitError || !strings.Contains(errs[0]+errs[1], "already holds a run") {
		t.Fatalf("exit codes %v, stderr %q", codes, errs)
	}
	r := readResult(t, out)
	var s struct {
		RunID string `json:"run_id"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if err := json.Unmarshal(data, &s); err != nil || s.RunID != r.RunID {
		t.Fatalf("run.json run %q, result.json run %q (%v)", s.RunID, r.RunID, err)
	}
}

// Issue 12's probe: a cluster-file node whose pid_file does not exist is
// refused before the load, saying which node and what to fix; it is never
// "node 1 died at 0.6s and no fault killed it" in a failed verdict.
func TestClusterFileNodeNotRunning(t *testing.T) {
	c := kfakeCluster(t)
	dir := t.TempDir()
	cf := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cf, []byte("broker: kafka\nnodes:\n  - id: 1\n    host: local\n    pid_file: "+dir+"/no-such.pid\n    start: \"true\"\n"), 0o644)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--cluster-file", cf,
		"--fault", "at=1s pause node:1", "--duration", "3s", "--rate", "100", "--out", out}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "node 1: its broker does not run") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a refused run left its directory behind")
	}
}

// alterMiddle flips n bytes in the middle of the file at path.
func alterMiddle(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < min(len(b), len(b)/2+n); i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
