package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pidNodes are three nodes that exist only as PIDs, for faults whose
// effect on the broker does not matter (kfake keeps serving), only their
// records.
type pidNodes struct {
	mu   sync.Mutex
	pids map[int32]int
}

func newPIDNodes() *pidNodes { return &pidNodes{pids: map[int32]int{1: 101, 2: 102, 3: 103}} }

func (n *pidNodes) IDs() []int32 { return []int32{1, 2, 3} }
func (n *pidNodes) PID(_ context.Context, id int32) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pids[id], nil
}
func (n *pidNodes) Signal(_ context.Context, id int32, sig syscall.Signal) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pid := n.pids[id]
	if sig == syscall.SIGKILL {
		n.pids[id] = 0
	}
	return pid, nil
}
func (n *pidNodes) Stop(ctx context.Context, id int32, _ time.Duration) error {
	_, err := n.Signal(ctx, id, syscall.SIGKILL)
	return err
}
func (n *pidNodes) Start(_ context.Context, id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pids[id] = 200 + int(id)
	return nil
}
func (n *pidNodes) DataDirInode(context.Context, int32) (uint64, error) { return 7, nil }
func (n *pidNodes) Where() string                                       { return "test nodes" }

// readJSONL reads a listing file: its records, and the trailer of a
// capped one (nil when not capped).
func readJSONL(t *testing.T, path string) (lines []map[string]any, trailer map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		if m["capped"] == true {
			trailer = m
			continue
		}
		lines = append(lines, m)
	}
	return lines, trailer
}

type investigateRun struct {
	out string
	res *verifier.Result
}

// runKfake runs a short load against a fresh 3-broker kfake through d
// (wrapped by wrap), with faults if given, and verifies it unless
// before is set: then before runs first (it may change the topic) and
// the run is verified after.
func runKfake(t *testing.T, wrap func(drivers.Driver) drivers.Driver, schedule string, check verifier.Options,
	before func(t *testing.T, brokers []string, topic string)) investigateRun {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inner, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	d := wrap(inner)
	defer d.Close()
	var plan *runner.FaultPlan
	if schedule != "" {
		steps, err := faults.ParseSchedule(schedule)
		if err != nil {
			t.Fatal(err)
		}
		plan = &runner.FaultPlan{Nodes: newPIDNodes(), Steps: steps, RecoveryTimeout: time.Second}
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d,
		Topic: drivers.TopicSpec{Name: "inv", Partitions: 4, ReplicationFactor: 3},
		Load: load.Config{Rate: 1000, Duration: 2 * time.Second, Producers: 2, MessageSize: 256,
			DrainTimeout: 20 * time.Second},
		Verify: before == nil, Check: check, ReadIdleTimeout: 10 * time.Second, Faults: plan,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if before != nil {
		before(t, c.ListenAddrs(), "inv")
		if res, err = runner.Verify(ctx, out, d, check, 10*time.Second, nil); err != nil {
			t.Fatalf("verify: %v", err)
		}
	}
	return investigateRun{out: out, res: res}
}

// A clean run lists nothing: the four files exist and are empty, and no
// partition lost anything.
func TestInvestigationQuietOnACleanRun(t *testing.T) {
	r := runKfake(t, func(d drivers.Driver) drivers.Driver { return d }, "", verifier.Options{}, nil)
	if r.res.Verdict != verifier.Pass || r.res.LostByPartition != nil {
		t.Fatalf("verdict %s, lost by partition %v", r.res.Verdict, r.res.LostByPartition)
	}
	for _, f := range []string{verifier.LostFile, verifier.DuplicatesFile, verifier.ReorderedFile, verifier.UnreadFile} {
		if lines, tr := readJSONL(t, filepath.Join(r.out, f)); len(lines) != 0 || tr != nil {
			t.Errorf("%s: %d lines on a clean run", f, len(lines))
		}
	}
	if len(r.res.Listings) != 4 {
		t.Fatalf("listings %+v", r.res.Listings)
	}
	var sum strings.Builder
	r.res.WriteSummary(&sum)
	if strings.Contains(sum.String(), "lost by partition") || strings.Contains(sum.String(), ".jsonl") {
		t.Fatalf("a clean run's summary speaks of losses:\n%s", sum.String())
	}
}

// Messages the broker acked and then dropped from the head of a partition
// (DeleteRecords, as a truncation) are listed one by one with their acked
// offsets, summed per partition with the exact offset range, and put next
// to the fault in force when they were acked.
func TestInvestigationListsTruncatedMessages(t *testing.T) {
	var cut int64
	r := runKfake(t, func(d drivers.Driver) drivers.Driver { return d },
		"at=0s pause node:2; at=1s resume node:2", verifier.Options{},
		func(t *testing.T, brokers []string, topic string) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ends, err := adm.ListEndOffsets(context.Background(), topic)
			if err != nil {
				t.Fatal(err)
			}
			end, _ := ends.Lookup(topic, 1)
			cut = end.Offset / 2
			o := kadm.Offsets{}
			o.Add(kadm.Offset{Topic: topic, Partition: 1, At: cut})
			resp, err := adm.DeleteRecords(context.Background(), o)
			if err != nil || resp.Error() != nil {
				t.Fatalf("delete records: %v %v", err, resp.Error())
			}
		})
	res := r.res
	if res.Verdict != verifier.Fail || res.Lost != cut {
		t.Fatalf("verdict %s, lost %d, want fail with %d lost\n%v", res.Verdict, res.Lost, cut, res.Reasons)
	}
	pl := res.LostByPartition[1]
	if len(res.LostByPartition) != 1 || pl == nil || pl.Count != cut || pl.FirstOffset != 0 || pl.LastOffset != cut-1 {
		t.Fatalf("lost by partition %+v, want partition 1: %d lost at offsets 0-%d", res.LostByPartition, cut, cut-1)
	}
	lines, tr := readJSONL(t, filepath.Join(r.out, verifier.LostFile))
	if int64(len(lines)) != cut || tr != nil {
		t.Fatalf("lost.jsonl has %d lines (trailer %v), want %d", len(lines), tr, cut)
	}
	var pause, resume float64
	for _, f := range res.Faults {
		switch f.Action {
		case faults.Pause:
			pause = f.AtS
		case faults.Resume:
			resume = f.AtS
		}
	}
	seen := map[float64]bool{}
	paused := int64(0)
	for _, l := range lines {
		off := l["acked_offset"].(float64)
		if l["partition"].(float64) != 1 || off < 0 || off >= float64(cut) || seen[off] {
			t.Fatalf("line %v: not a distinct acked offset of partition 1 below %d", l, cut)
		}
		seen[off] = true
		acked := l["acked_s"].(float64)
		inForce, _ := l["in_force"].([]any)
		during := acked >= pause && acked < resume
		if during != (len(inForce) == 1 && strings.HasPrefix(inForce[0].(string), "node 2 paused")) {
			t.Fatalf("line %v: acked at %.3f s, the pause lasted %.3f-%.3f s, in force %v", l, acked, pause, resume, inForce)
		}
		if during {
			paused++
		}
		if l["id"] == "" || l["sent_s"].(float64) > acked {
			t.Fatalf("line %v: no ID, or sent after it was acked", l)
		}
	}
	if paused == 0 || pl.AckedWhile[verifier.NoFaultInForce]+paused != cut {
		t.Fatalf("acked while %v; %d lines acked during the pause", pl.AckedWhile, paused)
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	t.Logf("cut %d, %d acked during the pause %.2f-%.2f s\n%s", cut, paused, pause, resume, sum.String())
	for _, want := range []string{"lost by partition", "partition 1: ", "acked while", "node 2 paused", "lost.jsonl lists all"} {
		if !strings.Contains(sum.String(), want) {
			t.Fatalf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}

// Each misbehaviour of a Faulty driver fills its own list, a line per
// failing message, and a capped list says so.
func TestInvestigationListsEachClass(t *testing.T) {
	tests := []struct {
		mode  drivertest.Misbehavior
		file  string
		count func(*verifier.Result) int64
		key   string // a field every line must carry
		max   int
	}{
		{drivertest.DropAfterAck, verifier.LostFile, func(r *verifier.Result) int64 { return r.Lost }, "acked_at", 0},
		{drivertest.Duplicate, verifier.DuplicatesFile, func(r *verifier.Result) int64 { return r.Duplicates }, "other_offsets", 0},
		{drivertest.Reorder, verifier.ReorderedFile, func(r *verifier.Result) int64 { return r.Reordered }, "previous_offset", 0},
		{drivertest.DropAfterAck, verifier.LostFile, func(r *verifier.Result) int64 { return r.Lost }, "acked_at", 3},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String()+"/"+tc.file, func(t *testing.T) {
			var f *drivertest.Faulty
			r := runKfake(t, func(d drivers.Driver) drivers.Driver {
				f = &drivertest.Faulty{Driver: d, Mode: tc.mode, Every: 97}
				return f
			}, "", verifier.Options{ListMax: tc.max}, nil)
			n := tc.count(r.res)
			if n == 0 || f.Done() == 0 {
				t.Fatalf("the class never fired: count %d, misbehaved %d", n, f.Done())
			}
			lines, trailer := readJSONL(t, filepath.Join(r.out, tc.file))
			want := n
			if tc.max > 0 {
				want = int64(tc.max)
				if trailer == nil || trailer["total"].(float64) != float64(n) {
					t.Fatalf("capped list without a trailer that says so: %v", trailer)
				}
				var sum strings.Builder
				r.res.WriteSummary(&sum)
				if !strings.Contains(sum.String(), "capped by --list-max") {
					t.Fatalf("summary does not say the list is capped:\n%s", sum.String())
				}
			} else if trailer != nil {
				t.Fatalf("uncapped list with trailer %v", trailer)
			}
			if int64(len(lines)) != want {
				t.Fatalf("%s: %d lines, class counted %d (want %d lines)", tc.file, len(lines), n, want)
			}
			for _, l := range lines {
				if _, ok := l[tc.key]; !ok || l["id"] == "" {
					t.Fatalf("line %v lacks id or %s", l, tc.key)
				}
			}
			for _, other := range []string{verifier.LostFile, verifier.DuplicatesFile, verifier.ReorderedFile} {
				if other == tc.file {
					continue
				}
				if ls, _ := readJSONL(t, filepath.Join(r.out, other)); len(ls) != 0 {
					t.Errorf("%s has %d lines: only %s should", other, len(ls), tc.file)
				}
			}
			if tc.mode == drivertest.DropAfterAck {
				var total int64
				for _, pl := range r.res.LostByPartition {
					total += pl.Count
				}
				if total != n {
					t.Fatalf("lost by partition sums to %d, lost %d", total, n)
				}
			}
		})
	}
}
