package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/verifier"
)

// twoSettings is an audit of two settings as a broker's profile declares
// them (Kafka's, here): one whose acks do not wait for fsync, expected to
// lose in a power loss, and one that fsyncs before acking.
func twoSettings() []AuditSetting {
	return AuditSettings(drivers.Durability{Settings: []drivers.DurabilitySetting{
		{Name: "default", Label: "default (no fsync per message)", ExpectLoss: true, Why: "an ack does not wait for fsync"},
		{Name: "flush1", Label: "flush.messages=1 (fsync every message)", TopicConfigs: map[string]string{"flush.messages": "1"},
			Why: "each replica fsyncs an append before it counts"},
	}}, nil)
}

func TestAuditFinding(t *testing.T) {
	lossy, safe := twoSettings()[0], twoSettings()[1]
	tests := []struct {
		name    string
		s       AuditSetting
		lost    int64
		applied string
		verdict string
		agrees  bool
		want    string
	}{
		{"default loses", lossy, 40, "applied", verifier.Fail, true, "As documented: 40 of 100"},
		{"default keeps everything", lossy, 0, "applied", verifier.Pass, false, "Disagrees with the expectation: no acked message was lost"},
		{"flush keeps everything", safe, 0, "applied", verifier.Pass, true, "As documented: none of 100"},
		{"flush loses", safe, 3, "applied", verifier.Fail, false, "durability bug"},
		{"no power loss", safe, 0, "failed: no lazyfs", verifier.Pass, false, "No conclusion"},
		// An unfinished read-back: what it did not read is no loss, and no
		// finding either way (this once read "As documented: N lost").
		{"default, read-back unfinished", lossy, 0, "applied", verifier.Incomplete, false, "No conclusion yet: the read-back did not finish; 7 acked messages are not read"},
		{"default, unfinished with a proven loss", lossy, 5, "applied", verifier.Fail, true, "As documented: 5 of 100"},
		{"flush, ledger unproven", safe, 2, "applied", verifier.Unproven, false, "cannot be proven whole"},
	}
	for _, tc := range tests {
		row := AuditRow{Acked: 100, Lost: tc.lost, PowerLoss: tc.applied, Verdict: tc.verdict, Out: "runs/a"}
		if tc.verdict == verifier.Incomplete || strings.Contains(tc.name, "unfinished") {
			row.Unread = 7
		}
		agrees, f := finding(tc.s, row)
		if agrees != tc.agrees || !strings.Contains(f, tc.want) {
			t.Errorf("%s: %v %q; want %v and %q", tc.name, agrees, f, tc.agrees, tc.want)
		}
	}
}

func TestAuditMarkdown(t *testing.T) {
	a := FsyncAudit{LossAt: 10 * time.Second}
	res := a.NewResult()
	for i, s := range twoSettings() {
		row := AuditRow{Setting: s, Out: "runs/a/" + s.Name, Acked: 1000, Lost: int64(500 * (1 - i)), PowerLoss: "applied",
			SteadyPublish: verifier.Latency{Count: 1, P50: float64(2 + 6*i), P99: float64(10 + 30*i), Max: 50},
			NodeLoss:      map[int32]string{2: "x", 1: "y"}}
		row.Agrees, row.Finding = finding(s, row)
		res.Rows = append(res.Rows, row)
	}
	md := res.Markdown()
	for _, want := range []string{
		"| **acked lost** | **500** | **0** |",
		"| publish p50 / p99 / max ms, sent before the loss | 2.0 / 10.0 / 50.0 | 8.0 / 40.0 / 50.0 |",
		"4.00x the publish p50 and 4.00x the publish p99",
		"from 1 s (after the producers connected) to 8.0 s (2 s before the loss",
		"- default, node 1: y\n- default, node 2: x",
		"runs/a/flush1/report.html",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Every table row has one cell per setting.
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(line, " | ") != 2 {
			t.Errorf("row with %d cells: %s", strings.Count(line, " | "), line)
		}
	}
}
