package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicExists asks the kfake cluster whether it holds topic.
func topicExists(t *testing.T, c *kfake.Cluster, topic string) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	return topics.Has(topic)
}

// Issue 24, point 7: each input out of bounds is refused, naming the flag
// and the fix, before anything exists: no topic at the broker, no run
// directory. The quiet cases, at the bounds, run and pass.
func TestInputsBoundedBeforeAnySideEffect(t *testing.T) {
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	workload := func(name, body string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	aFile := filepath.Join(dir, "a-file")
	os.WriteFile(aFile, nil, 0o644)
	aDir := filepath.Join(dir, "a-dir")
	os.Mkdir(aDir, 0o755)
	// A short schedule: the quiet cases pass quickly, and the refused ones
	// would have run briefly had they not been refused.
	short := []string{"--rate", "20", "--duration", "1s"}
	tests := []struct {
		name   string
		args   []string
		refuse string // "" runs and passes
	}{
		{"message size of 2 GiB", []string{"--message-size", "2147483648"}, "--message-size 2147483648: no driver sends more than 5177344 bytes"},
		{"message size above kafka's", []string{"--message-size", "1048576"}, "--message-size 1048576: the kafka driver sends at most 999000 bytes"},
		{"workload message size of 2 GiB", []string{"--workload", workload("big", "name: big\nmessageSize: 2147483648\n")}, "--message-size 2147483648: no driver sends more than"},
		{"in flight beyond memory", []string{"--message-size", "999000", "--rate", "10000", "--duration", "60s"}, "could take about"},
		{"partitions beyond every driver's limit", []string{"--partitions", "1000000000"}, "--partitions 1000000000: use 1 to 10000000 (no driver asks for more; queen's limit)"},
		{"partitions one beyond kafka's limit", []string{"--partitions", "1000001"}, "--partitions 1000001: the kafka driver asks for 1 to 1000000 partitions: the cluster itself refuses"},
		{"workload partitions beyond every limit", []string{"--workload", workload("wide", "name: wide\npartitionsPerTopic: 1000000000\n")}, "--partitions 1000000000: use 1 to 10000000"},
		{"placement batch:0", []string{"--placement", "batch:0"}, "--placement batch:0: want batch:N with N a whole number of at least 1"},
		{"placement unknown", []string{"--placement", "random"}, "--placement random: want round-robin or batch:N"},
		{"placement with keys", []string{"--placement", "batch:4", "--keys", "10"}, "--placement batch:4 with --keys 10: keys choose the partition"},
		{"progress every 1ns", []string{"--progress-interval", "1ns"}, "--progress-interval 1ns: use at least 100ms"},
		{"progress 0", []string{"--progress-interval", "0"}, "--progress-interval 0s: must be above 0"},
		{"read idle 0", []string{"--read-idle-timeout", "0"}, "--read-idle-timeout 0s: must be above 0: give a positive duration such as 1s, or leave the flag out for its default, 1m0s"},
		{"read idle negative", []string{"--read-idle-timeout", "-1s"}, "--read-idle-timeout -1s: must be above 0"},
		{"max-no-ack 0", []string{"--max-no-ack", "0"}, "0: a deadline must be above 0"},
		{"max-in-sync negative", []string{"--max-in-sync", "-5s"}, "-5s: a deadline must be above 0"},
		{"recovery 0", []string{"--recovery-timeout", "0s"}, "--recovery-timeout 0s: must be above 0"},
		{"a driver's duration 0", []string{"--linger", "0s"}, "--linger 0s: must be above 0"},
		{"scenario file's read idle 0", []string{"--file", workload("idle0", "read-idle-timeout: 0s\n")}, "--read-idle-timeout 0s: must be above 0"},
		{"junit is a directory", []string{"--junit", aDir}, "--junit " + aDir + " is a directory"},
		{"junit in a missing directory", []string{"--junit", filepath.Join(dir, "nope", "j.xml")}, "does not exist; create it first"},
		{"junit under a file", []string{"--junit", filepath.Join(aFile, "j.xml")}, aFile + " is a file, not a directory"},
		{"out is a file", []string{"--out", aFile}, "--out " + aFile + " is a file"},
		{"out under a file", []string{"--out", filepath.Join(aFile, "r")}, "is a file, not a directory"},
		{"less than one message", []string{"--rate", "1e-9"}, "schedules 1e-09 messages, less than one"},
		// At the bounds: accepted and run.
		{"kafka's largest message", []string{"--message-size", "999000", "--max-in-flight", "10", "--rate", "10", "--duration", "1s"}, ""},
		{"progress every 100ms", []string{"--progress-interval", "100ms"}, ""},
		{"junit in the run directory", []string{"--junit", "OUT/junit.xml"}, ""},
		{"one message", []string{"--rate", "1", "--duration", "1s"}, ""},
		{"placement batch:5", []string{"--placement", "batch:5"}, ""},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topic := fmt.Sprintf("in%02d", i)
			out := filepath.Join(dir, "runs", topic, "r")
			args := append([]string{"run", "--brokers", brokers, "--topic", topic, "--out", out}, short...)
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "OUT", out))
			}
			var stdout, stderr bytes.Buffer
			code := execute(ctx, args, &stdout, &stderr)
			if tc.refuse == "" {
				if code != exitPass {
					t.Fatalf("exit %d, want a pass\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
				}
				return
			}
			if code != exitError || !strings.Contains(stderr.String(), tc.refuse) {
				t.Fatalf("exit %d, stderr %q: want exit %d and %q", code, stderr.String(), exitError, tc.refuse)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs", topic)); !os.IsNotExist(err) {
				t.Errorf("the refused run left %s behind", filepath.Join(dir, "runs", topic))
			}
			if topicExists(t, c, topic) {
				t.Errorf("the refused run created topic %s", topic)
			}
		})
	}
	for i, tc := range tests {
		if tc.name != "junit in the run directory" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "runs", fmt.Sprintf("in%02d", i), "r", "junit.xml")); err != nil {
			t.Errorf("--junit in the run directory: %v", err)
		}
	}
}

// A --junit or --out on a read-only filesystem is refused up front, not
// after the whole run.
func TestInputsReadOnlyPlaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only tmpfs needs root")
	}
	ro := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", ro).Run() })
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	for _, tc := range []struct{ name, out, junit, refuse string }{
		{"junit", filepath.Join(dir, "r1"), filepath.Join(ro, "j.xml"), "--junit " + filepath.Join(ro, "j.xml") + ": cannot write " + ro},
		{"out", filepath.Join(ro, "r2"), "", "--out " + filepath.Join(ro, "r2") + ": cannot write " + ro},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run", "--brokers", brokers, "--topic", "ro" + tc.name, "--out", tc.out, "--rate", "10", "--duration", "1s"}
			if tc.junit != "" {
				args = append(args, "--junit", tc.junit)
			}
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), args, &stdout, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), tc.refuse) {
				t.Fatalf("exit %d, stderr %q: want %q", code, stderr.String(), tc.refuse)
			}
			if _, err := os.Stat(tc.out); !os.IsNotExist(err) {
				t.Errorf("left %s behind", tc.out)
			}
			if topicExists(t, c, "ro"+tc.name) {
				t.Errorf("created the topic")
			}
		})
	}
}

// checkMessageSize: each driver takes its own limit, and not a byte more;
// with the driver unknown, the largest of them.
func TestCheckMessageSize(t *testing.T) {
	want := map[string]int{"kafka": 999_000, "pulsar": 5<<20 - 64<<10, "nats": 1<<20 - 4<<10, "queen": 1 << 20}
	for _, p := range profiles() {
		max, ok := want[p.Name()]
		if !ok {
			t.Fatalf("no expected limit for driver %s", p.Name())
		}
		if p.MaxMessageSize() != max {
			t.Errorf("%s: MaxMessageSize %d, want %d", p.Name(), p.MaxMessageSize(), max)
		}
		if err := checkMessageSize(p, max); err != nil {
			t.Errorf("%s at its limit: %v", p.Name(), err)
		}
		if err := checkMessageSize(p, max+1); err == nil || !strings.Contains(err.Error(), "the "+p.Name()+" driver sends at most") {
			t.Errorf("%s above its limit: %v", p.Name(), err)
		}
	}
	if err := checkMessageSize(nil, 5<<20-64<<10); err != nil {
		t.Errorf("the largest any driver takes: %v", err)
	}
	if err := checkMessageSize(nil, 5<<20-64<<10+1); err == nil {
		t.Errorf("above every driver's limit: accepted")
	}
}

// checkMemory refuses a load whose values in flight exceed what the
// machine has, naming the estimate and the --max-in-flight that fits.
func TestCheckMemory(t *testing.T) {
	base := load.Config{Rate: 1000, Duration: time.Minute, MessageSize: 1 << 20}
	for _, tc := range []struct {
		name      string
		mut       func(*load.Config)
		available uint64
		refuse    string
	}{
		{"fits", func(c *load.Config) { c.MaxInFlight = 100 }, 1 << 30, ""},
		{"exactly fits", func(c *load.Config) { c.MaxInFlight = 100 }, load.ValueCopies * 100 << 20, ""},
		{"one byte short", func(c *load.Config) { c.MaxInFlight = 100 }, load.ValueCopies*100<<20 - 1, "could take about 300.0 MiB (3 copies of each), more than the 300.0 MiB of memory available (test): lower --max-in-flight to at most 99"},
		{"default bound", func(*load.Config) {}, 24 << 30, "--max-in-flight 100000 x --message-size 1048576: the values in flight could take about 175.8 GiB (3 copies of each), more than the 24.0 GiB of memory available (test): lower --max-in-flight to at most 8192"},
		{"short schedule", func(c *load.Config) { c.Rate = 1; c.Duration = 10 * time.Second }, 24 << 30, ""},
		{"2 GiB values", func(c *load.Config) { c.MessageSize = 1 << 31 }, 24 << 30, "could take about"},
		{"not one value fits", func(c *load.Config) { c.MaxInFlight = 1 }, 1 << 20, "lower --message-size: not even one value fits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mut(&c)
			err := checkMemory(c, tc.available, "test")
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
				t.Fatalf("got %v, want %q", err, tc.refuse)
			}
		})
	}
	if avail, from, ok := availableMemory(); !ok || avail == 0 || from == "" {
		t.Errorf("availableMemory on Linux: %d from %q (%v)", avail, from, ok)
	}
}

// refuseDurations refuses every duration flag given as 0 or below, and
// leaves alone those not given or given above 0. Every command checks its
// own (verify, report, leader-kill, ...), before anything else.
func TestRefuseDurations(t *testing.T) {
	for _, args := range [][]string{
		{"verify", "--out", t.TempDir(), "--read-idle-timeout", "0"},
		{"report", "--out", t.TempDir(), "--max-no-ack", "-1s"},
		{"leader-kill", "--kill-at", "0s", "--out", t.TempDir() + "/r"},
		{"fsync-audit", "--loss-at", "-2s", "--out", t.TempDir() + "/r"},
	} {
		var stdout, stderr bytes.Buffer
		if code := execute(context.Background(), args, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "must be above 0") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
	// verify's --junit, too, is checked before its read-back.
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"verify", "--out", dir, "--junit", dir}, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "--junit "+dir+" is a directory") {
		t.Errorf("verify --junit DIR: exit %d, stderr %q", code, stderr.String())
	}
	for _, tc := range []struct {
		args   []string
		refuse string
	}{
		{nil, ""},
		{[]string{"--idle", "1ms"}, ""},
		{[]string{"--idle", "0"}, "--idle 0s: must be above 0: give a positive duration such as 1s, or leave the flag out for its default, 1m0s"},
		{[]string{"--idle", "-1s"}, "--idle -1s: must be above 0"},
		{[]string{"--at", "0s"}, "--at 0s: must be above 0: give a positive duration such as 1s, or leave the flag out for its default"},
		{[]string{"--count", "0"}, ""}, // not a duration
		{[]string{"--wait-closed", "0"}, ""},
		{[]string{"--wait-closed", "-1s"}, "--wait-closed -1s: must be above 0"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.Duration("wait-closed", 10*time.Second, "")
		fs.Duration("idle", time.Minute, "")
		fs.Duration("at", 0, "")
		fs.Int("count", 1, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := refuseDurations(fs)
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.args, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.refuse)
		}
	}
}

// bench --peer's workloads are bounded like a run's.
func TestPeerShapeBounds(t *testing.T) {
	ok := peerShape{Messages: 1_000_000, Size: 1024, Producers: 4, Partitions: 16, MaxInFlight: 100_000}
	const avail = 24 << 30
	for _, tc := range []struct {
		name   string
		mut    func(*peerShape)
		refuse string
	}{
		{"defaults", func(*peerShape) {}, ""},
		{"kafka's largest message, few messages", func(s *peerShape) { s.Size = 999_000; s.Messages = 1000; s.MaxInFlight = 1000 }, ""},
		{"above kafka's message size", func(s *peerShape) { s.Size = 999_001 }, "the kafka driver sends at most 999000"},
		{"2 GiB values", func(s *peerShape) { s.Size = 1 << 31 }, "the kafka driver sends at most"},
		{"kfake holds every record", func(s *peerShape) { s.Size = 64 << 10 }, "the in-process kfake would hold about 61.0 GiB"},
		{"a broker of its own holds them", func(s *peerShape) { s.Size = 64 << 10; s.Brokers = []string{"b:9092"}; s.MaxInFlight = 1000 }, ""},
		{"in flight beyond memory", func(s *peerShape) { s.Size = 512 << 10; s.Messages = 40_000; s.MaxInFlight = 40_000 }, "could take about 58.6 GiB"},
		{"partitions", func(s *peerShape) { s.Partitions = 1_000_000_000 }, "--partitions 1000000000: the kafka driver asks for 1 to 1000000 partitions"},
		{"partitions above the old cap of 10,000", func(s *peerShape) { s.Partitions = 20_000 }, ""},
		{"no messages", func(s *peerShape) { s.Messages = 0 }, "--messages 0"},
		{"tiny values", func(s *peerShape) { s.Size = 8 }, "--message-size must be at least"},
	} {
		s := ok
		tc.mut(&s)
		err := s.validate(avail, "test")
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.refuse)
		}
	}
}

// A deadline flag takes a positive duration or none; 0 and below are
// refused at parse time, never read as none.
func TestDeadlineFlag(t *testing.T) {
	for _, tc := range []struct {
		arg, want, refuse string
	}{
		{"2s", "2s", ""},
		{"none", "none", ""},
		{"None", "none", ""},
		{"0", "", "0: a deadline must be above 0"},
		{"0s", "", "0s: a deadline must be above 0"},
		{"-1s", "", "-1s: a deadline must be above 0"},
		{"soon", "", "want a duration such as 30s, or none"},
	} {
		d := 5 * time.Second
		err := deadline{&d}.Set(tc.arg)
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.arg, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s: got %v, want %q", tc.arg, err, tc.refuse)
		case tc.refuse == "" && (deadline{&d}).String() != tc.want:
			t.Errorf("%s: reads back as %s", tc.arg, deadline{&d})
		case tc.refuse != "" && d != 5*time.Second:
			t.Errorf("%s: refused but changed the value to %s", tc.arg, d)
		}
	}
}

// Issue 37, point 1: each driver's profile says its own partition limit
// and why; the limit is accepted and one more is refused, naming the
// driver, the limit and the reason. Without a driver, the largest limit
// applies; a profile that states none gets drivers.DefaultMaxPartitions.
func TestPartitionLimitPerProfile(t *testing.T) {
	most := 0
	for _, p := range profiles() {
		max, why := drivers.MaxPartitions(p)
		if why == "" || max < 1 {
			t.Errorf("%s: limit %d, reason %q: a profile's limit needs a reason", p.Name(), max, why)
		}
		most = maxInt(most, max)
		if err := checkPartitions(p, max); err != nil {
			t.Errorf("%s at its limit %d: %v", p.Name(), max, err)
		}
		want := fmt.Sprintf("--partitions %d: the %s driver asks for 1 to %d partitions: %s", max+1, p.Name(), max, why)
		if err := checkPartitions(p, max+1); err == nil || err.Error() != want {
			t.Errorf("%s at %d: got %v, want %q", p.Name(), max+1, err, want)
		}
		if err := checkPartitions(p, 0); err == nil {
			t.Errorf("%s: 0 partitions accepted", p.Name())
		}
	}
	if err := checkPartitions(nil, most); err != nil {
		t.Errorf("no driver yet, at the largest limit %d: %v", most, err)
	}
	if err := checkPartitions(nil, most+1); err == nil || !strings.Contains(err.Error(), "no driver asks for more") {
		t.Errorf("no driver yet, at %d: got %v", most+1, err)
	}
	var plain drivers.Profile = plainProfile{profiles()[0]}
	if max, _ := drivers.MaxPartitions(plain); max != drivers.DefaultMaxPartitions {
		t.Errorf("a profile without a limit of its own: %d, want %d", max, drivers.DefaultMaxPartitions)
	}
}

// plainProfile hides a profile's optional interfaces.
type plainProfile struct{ drivers.Profile }

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Issue 37, point 1: a topic that exists is used with its own partition
// count, whatever --partitions says (here more than the topic has).
func TestExistingTopicKeepsItsPartitions(t *testing.T) {
	c := kfakeCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "there"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r")
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--topic", "there", "--partitions", "20000",
		"--rate", "30", "--duration", "1s", "--out", out}, &stdout, &stderr)
	if code != exitPass {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	td, err := adm.ListTopics(ctx, "there")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["there"].Partitions); n != 3 {
		t.Errorf("the topic has %d partitions after the run, want its own 3", n)
	}
	run, err := runner.ReadRunInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if run.StartOffsets.Len() != 3 {
		t.Errorf("run.json start offsets for %d partitions, want the topic's 3", run.StartOffsets.Len())
	}
}

// --consumers without --group is refused before anything is opened, but
// its default (1), which every scenario file written by scenario show or
// demo carries, is not: TestRealDemo's run -f was refused on it.
func TestConsumersWithoutGroup(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		refuse bool
	}{
		{[]string{"--consumers", "3"}, true},
		{[]string{"--consumers", "1"}, false},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "--brokers", "127.0.0.1:1", "--duration", "1s", "--out", t.TempDir() + "/r"}, tc.args...)
		code := execute(context.Background(), args, &stdout, &stderr)
		refused := strings.Contains(stderr.String(), "is the size of a consumer group: give --group too")
		if refused != tc.refuse || (tc.refuse && code != exitError) {
			t.Errorf("%v: exit %d, stderr %q; want refused %v", tc.args, code, stderr.String(), tc.refuse)
		}
	}
}
