package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/latency"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/verifier"
)

func ptr[T any](v T) *T { return &v }

// The consumer side's finding holds the commits lost to what a commit
// meant under the setting (fsynced or not, as read back), on the same
// grounds as the producer side: no conclusion without an applied power
// loss, a whole read-back, or a commit; no judgement when the commit
// setting could not be switched.
func TestConsumerFinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fsync   *bool
		commits int64
		lost    int64
		acked   int64 // acked messages lost by the producer side
		power   string
		verdict string
		agrees  bool
		broken  bool
		want    string
	}{
		{"from memory, commits lost", ptr(false), 300, 120, 0, "applied", verifier.Pass, true, false, "As documented: 120 of 300 acknowledged commits were lost"},
		{"from memory, the log lost too", ptr(false), 300, 120, 50, "applied", verifier.Fail, true, false, "resumed on a log cut back too"},
		{"from memory, nothing lost", ptr(false), 300, 0, 0, "applied", verifier.Pass, false, false, "Disagrees with the expectation: none of 300"},
		{"fsynced, nothing lost", ptr(true), 300, 0, 0, "applied", verifier.Pass, true, false, "As documented: none of 300 acknowledged commits was lost"},
		{"fsynced, commits lost", ptr(true), 300, 4, 0, "applied", verifier.Fail, false, true, "durability bug"},
		{"not switched", nil, 300, 4, 0, "applied", verifier.Pass, false, false, "Measured, not judged: 4 of 300"},
		{"no power loss", ptr(true), 300, 0, 0, "failed: no lazyfs", verifier.Pass, false, false, "No conclusion: the power loss did not apply"},
		{"read-back unfinished", ptr(false), 300, 3, 0, "applied", verifier.Incomplete, false, false, "verdict is incomplete"},
		{"no commit", ptr(true), 0, 0, 0, "applied", verifier.Pass, false, false, "no commit acknowledged"},
		{"never resumed, nothing lost", ptr(false), 300, 0, 0, "applied", verifier.Fail, false, false, "No conclusion: the group made no progress after the power loss"},
		{"never resumed, fsynced", ptr(true), 300, 0, 0, "applied", verifier.Pass, false, false, "No conclusion: the group made no progress after the power loss"},
		{"never resumed, topic gone", ptr(false), 300, 0, 1000, "applied", verifier.Fail, false, false, "No conclusion: the power loss took every acked message too (1000 of 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ConsumerRow{CommitFsync: tc.fsync, Commits: tc.commits, CommitsLost: tc.lost, UntilProgressMs: 8000}
			if strings.HasPrefix(tc.name, "never resumed") {
				c.UntilProgressMs = -1
			}
			agrees, f := consumerFinding(c, AuditRow{PowerLoss: tc.power, Verdict: tc.verdict, Lost: tc.acked, Acked: 1000})
			if agrees != tc.agrees || !strings.Contains(f, tc.want) {
				t.Fatalf("%v %q; want %v and %q", agrees, f, tc.agrees, tc.want)
			}
			if c.BrokenPromise() != tc.broken {
				t.Fatalf("broken promise %v, want %v", c.BrokenPromise(), tc.broken)
			}
			row := AuditRow{Setting: twoSettings()[1], Consumer: &c}
			if row.Broken() != tc.broken {
				t.Fatalf("row broken %v, want %v", row.Broken(), tc.broken)
			}
		})
	}
}

// A setting's consumer row comes from its run's group result: the
// counts, the commit latency over the run and over the commits after
// polls wholly before the loss, and the group's first progress after the
// power loss; no row for a run without a group.
func TestConsumerRowFromResult(t *testing.T) {
	a := FsyncAudit{LossAt: 6 * time.Second} // before the loss: [1 s, 4 s)
	h := &verifier.Histograms{Window: time.Second, CommitAll: latency.New(3)}
	for _, ms := range []int{100, 4, 5, 6, 8, 9000} { // a commit a window; 100 ms while connecting, 9 s after the loss
		w := latency.New(2)
		latency.Record(w, time.Duration(ms)*time.Millisecond)
		latency.Record(h.CommitAll, time.Duration(ms)*time.Millisecond)
		h.Commit = append(h.Commit, w)
	}
	r := &verifier.Result{Hist: h, Group: &verifier.GroupResult{GroupInfo: ledger.GroupInfo{Name: "g-flush1", Promise: "written to __consumer_offsets with acks=all, replication factor 1, fsynced"},
		Commits: 6, CommitsLost: 0, Redelivered: 2, CommitLatency: verifier.Latency{Count: 6, P50: 6, Max: 9000},
		Stalls: []verifier.GroupStall{{Fault: "power-loss all", AtS: 6, UntilProgressMs: 8123}}}}
	row := AuditRow{PowerLoss: "applied", Verdict: verifier.Pass}
	c := a.consumerRow(r, row, "__consumer_offsets flush.messages", commitFsync{on: ptr(true)})
	if c == nil {
		t.Fatal("no consumer row")
	}
	if c.Group != "g-flush1" || c.Commits != 6 || c.Redelivered != 2 || c.CommitLatency.Max != 9000 || c.UntilProgressMs != 8123 || !c.Agrees {
		t.Fatalf("%+v", c)
	}
	if s := c.SteadyCommit; s.Count != 3 || s.Max < 5.9 || s.Max > 6.1 { // per-window histograms keep 2 significant figures
		t.Fatalf("commit latency before the loss %+v, want the 3 commits of [1 s, 4 s), max 6 ms", s)
	}
	if a.consumerRow(&verifier.Result{}, row, "", commitFsync{}) != nil {
		t.Fatal("a run without a group has no consumer row")
	}
}

// fakeCommits is a CommitFsyncSetter whose broker may not take the
// setting.
type fakeCommits struct {
	on, ignore bool
	err        error
}

func (f *fakeCommits) CommitFsyncSetting() string { return "offsets flush.messages" }
func (f *fakeCommits) CommitFsync(context.Context) (bool, error) {
	return f.on, nil
}
func (f *fakeCommits) SetCommitFsync(_ context.Context, on bool) error {
	if f.err != nil {
		return f.err
	}
	if !f.ignore {
		f.on = on
	}
	return nil
}

// Each setting's commits are fsynced where its acks are, and the value
// is read back; a broker that does not take it stops the audit with the
// setting's name.
func TestSwitchCommits(t *testing.T) {
	lossy, safe := twoSettings()[0], twoSettings()[1]
	for _, tc := range []struct {
		name string
		c    *fakeCommits
		s    AuditSetting
		want *bool
		err  string
	}{
		{"fsync where acks are", &fakeCommits{}, safe, ptr(true), ""},
		{"memory where they are not", &fakeCommits{on: true}, lossy, ptr(false), ""},
		{"not taken", &fakeCommits{ignore: true}, safe, nil, "do not take the setting"},
		{"refused", &fakeCommits{err: errors.New("not authorized")}, safe, nil, "switch offsets flush.messages for the group: not authorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FsyncAudit{Commits: tc.c}.switchCommits(context.Background(), tc.s)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got == nil || *got != *tc.want {
				t.Fatalf("%v %v, want %v", got, err, *tc.want)
			}
		})
	}
	if got, err := (FsyncAudit{}).switchCommits(context.Background(), safe); got != nil || err != nil {
		t.Fatalf("without a switch: %v %v", got, err)
	}
}

// groupCommits is a CommitFsyncSetter that also reads a group's own
// commits (drivers.GroupCommitFsyncReader), as NATS does.
type groupCommits struct {
	fakeCommits
	on  bool
	why string
	err error
	// asked is the group and topic read.
	asked [2]string
}

func (g *groupCommits) GroupCommitFsync(_ context.Context, group, topic string) (bool, string, error) {
	g.asked = [2]string{group, topic}
	return g.on, g.why, g.err
}

// After the run, a driver that reads the group's own consumers overrides
// the setting as switched (an R1 consumer's acks are never fsynced before
// their answer, whatever the servers' setting); one that cannot read them
// keeps the setting and says why; a driver without the reader, or an
// audit without a switch, leaves the value as it was.
func TestReadGroupCommits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits drivers.CommitFsyncSetter
		before  commitFsync
		want    *bool
		wantWhy string
	}{
		{"R1 under sync always", &groupCommits{on: false, why: "an R1 consumer answers an ack before it writes its state file"}, commitFsync{on: ptr(true)}, ptr(false), "an R1 consumer"},
		{"R3 under sync always", &groupCommits{on: true, why: "an R3 consumer answers once its Raft group committed it"}, commitFsync{on: ptr(true)}, ptr(true), "R3"},
		{"consumers gone", &groupCommits{err: errors.New("stream not found")}, commitFsync{on: ptr(false)}, ptr(false), "could not be read after the run (stream not found): held to the setting as switched"},
		{"no reader", &fakeCommits{}, commitFsync{on: ptr(true)}, ptr(true), ""},
		{"nothing switched", &groupCommits{on: true, why: "x"}, commitFsync{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FsyncAudit{Commits: tc.commits}.readGroupCommits(context.Background(), tc.before, "g-always", "t-always")
			if (got.on == nil) != (tc.want == nil) || (got.on != nil && *got.on != *tc.want) || !strings.Contains(got.why, tc.wantWhy) || (tc.wantWhy == "" && got.why != "") {
				t.Fatalf("%v %q, want %v %q", got.on, got.why, tc.want, tc.wantWhy)
			}
			if g, ok := tc.commits.(*groupCommits); ok && tc.before.on != nil && g.asked != [2]string{"g-always", "t-always"} {
				t.Fatalf("asked %v", g.asked)
			}
		})
	}
}

func TestAuditMarkdownConsumer(t *testing.T) {
	a := FsyncAudit{LossAt: 10 * time.Second}
	res := a.NewResult()
	for i, s := range twoSettings() {
		row := AuditRow{Setting: s, Out: "runs/a/" + s.Name, Acked: 1000, PowerLoss: "applied", Verdict: verifier.Pass}
		c := &ConsumerRow{Group: "g-" + s.Name, CommitSetting: "__consumer_offsets flush.messages", CommitFsync: ptr(i == 1),
			CommitMeaning: "written", Commits: 300, CommitsLost: int64(100 * (1 - i)),
			SteadyCommit:  verifier.Latency{Count: 80, P50: float64(3 + 3*i), P99: float64(10 + 10*i), Max: 40},
			CommitLatency: verifier.Latency{Count: 300, P50: 5, P99: 9000, Max: 12000}, UntilProgressMs: 8000}
		c.Agrees, c.Finding = consumerFinding(*c, row)
		row.Consumer = c
		res.Rows = append(res.Rows, row)
	}
	res.Rows[1].Consumer.CommitFsyncWhy = "an R3 consumer answers once its Raft group committed it"
	md := res.Markdown()
	for _, want := range []string{
		"| commit setting (read back) | __consumer_offsets flush.messages: fsync off | __consumer_offsets flush.messages: commits fsynced on: an R3 consumer answers once its Raft group committed it |",
		"## Consumer groups g-default, g-flush1: commits through the same power loss",
		"| **commits lost** | **100** | **0** |",
		"| commit p50 / p99 / max ms, before the loss | 3.0 / 10.0 / 40.0 (80 calls) | 6.0 / 20.0 / 40.0 (80 calls) |",
		"2.00x the commit p50 and 2.00x the commit p99",
		"| group's first progress after the loss | 8000 ms | 8000 ms |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(line, " | ") != 2 {
			t.Errorf("row with %d cells: %s", strings.Count(line, " | "), line)
		}
	}
	// Without a group, the audit reads as before.
	res.Rows[0].Consumer, res.Rows[1].Consumer = nil, nil
	if md := res.Markdown(); strings.Contains(md, "Consumer groups") {
		t.Errorf("a consumer table without a group:\n%s", md)
	}
}
