package report_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/internal/need"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/internal/mdcheck"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// realRun runs ackcheck against kfake for 3 s and adds the records of a
// kill, a restart and an fsync toggle, as a fault run would have them.
func realRun(t *testing.T) (*verifier.Result, string) {
	t.Helper()
	d := kafkaDriver(t, newKfake(t).ListenAddrs())
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(context.Background(), runner.Config{
		Out: out, Driver: d, Topic: drivers.TopicSpec{Name: "t", Partitions: 4, ReplicationFactor: 3},
		Load:   load.Config{Rate: 1000, Duration: 3 * time.Second, MessageSize: 128, LiveRead: true},
		Verify: true, Check: verifier.Options{Window: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	res.Faults = append(res.Faults,
		verifier.FaultReport{Record: faults.Record{Action: "kill", Target: "most-leaders:t", Node: 2, Result: "applied",
			InSyncEvidence: "node 2 back in the cluster's node list after leaving it"}, AtS: 1,
			ReadyMs: 900, InSyncMs: 1200, SlowestFirstAckMs: 300, FirstAckMs: map[int32]float64{0: 300},
			LongestStallMs: 280, StallMs: map[int32]float64{0: 280},
			KillProof: &verifier.KillProof{OldPID: 10, NewPID: 11, InodeBefore: 5, InodeAfter: 5, SameDataDir: true, SurvivorsUnchanged: true, Restarts: 1}},
		verifier.FaultReport{Record: faults.Record{Action: "fsync-on", Target: "topic:t", Node: -1, Result: "applied"}, AtS: 1.5},
		verifier.FaultReport{Record: faults.Record{Action: "restart", Target: "previous", Node: 2, Result: "applied"}, AtS: 2},
	)
	return res, out
}

var settings = [][2]string{{"driver", "kafka"}, {"acks", "all"}, {"rate", "1000 msg/s"}}

type svgDoc struct {
	ID     string `xml:"id,attr"`
	Groups []struct {
		Class  string `xml:"class,attr"`
		Name   string `xml:"data-name,attr"`
		Points int    `xml:"data-points,attr"`
	} `xml:"g"`
	Rects []struct {
		Class string `xml:"class,attr"`
		Label string `xml:"data-label,attr"`
		Row   string `xml:"data-row,attr"`
	} `xml:"rect"`
}

func TestChartsAreWellFormedWithSeriesAndFaultBands(t *testing.T) {
	res, _ := realRun(t)
	svgs := report.Charts(report.Input{Result: res, Settings: settings})
	want := map[string][]string{
		"acks":            {"acked/s", "offered/s"},
		"publish-latency": {"p50", "p99", "max"},
		"e2e-latency":     {"p50", "p99", "max"},
		"partition-gaps":  nil,
	}
	for _, s := range svgs {
		var doc svgDoc
		if err := xml.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%.300s", err, s)
		}
		names, ok := want[doc.ID]
		if !ok {
			t.Fatalf("unexpected chart %q", doc.ID)
		}
		delete(want, doc.ID)
		got := map[string]int{}
		for _, g := range doc.Groups {
			if g.Class == "series" {
				got[g.Name] = g.Points
			}
		}
		for _, n := range names {
			if got[n] < 2 {
				t.Errorf("%s: series %q has %d points", doc.ID, n, got[n])
			}
		}
		bands := map[string]bool{}
		for _, r := range doc.Rects {
			if r.Class == "fault-band" {
				bands[r.Label] = true
			}
		}
		if !bands["kill node 2"] || !bands["fsync-on topic:t"] {
			t.Errorf("%s: fault bands %v", doc.ID, bands)
		}
	}
	if len(want) != 0 {
		t.Fatalf("charts missing: %v", want)
	}
}

func TestPartitionGapsAreDrawn(t *testing.T) {
	r := &verifier.Result{LoadEnd: time.Unix(10, 0), LoadStart: time.Unix(0, 0),
		PartitionGaps: map[int32][]verifier.Gap{0: {{FromS: 2, ToS: 5}}, 1: nil}}
	svgs := report.Charts(report.Input{Result: r})
	var doc svgDoc
	if err := xml.Unmarshal([]byte(svgs[3]), &doc); err != nil {
		t.Fatal(err)
	}
	gaps := 0
	for _, rc := range doc.Rects {
		if rc.Class == "gap" {
			gaps++
			if rc.Row != "p0" {
				t.Fatalf("gap drawn in row %s", rc.Row)
			}
		}
	}
	if gaps != 1 {
		t.Fatalf("%d gaps drawn, want 1", gaps)
	}
}

func TestMarkdownHasTheTables(t *testing.T) {
	res, _ := realRun(t)
	res.AckedByClass = map[string]int64{"queued": 7, "buffered": 3}
	md := report.Markdown(report.Input{Result: res, Settings: settings})
	for _, want := range []string{
		"## ackcheck: PASS",
		"buffered 3, queued 7 |",
		"| acked lost | 0 |  |",
		"| check | count |  |\n|---|---:|---|",
		"### Recovery\n\n| at | fault | node | slowest partition's first ack of a message sent after it | longest partition stall over it | killed server ready | all replicas in sync | rejoin seen as | kill proof |",
		"| 1.0 s | kill most-leaders:t | 2 | 300 ms | 280 ms | 900 ms | 1200 ms | node 2 back in the cluster's node list after leaving it | PID 10 -> 11",
		"| publish |",
		"| acks | all |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q\n%s", want, md)
		}
	}
}

// Every table of report.md renders as a table, parsed as GitHub does
// (goldmark, GFM tables): the Recovery table had 9 header cells over 7
// delimiter cells, and rendered as a paragraph of pipes.
func TestMarkdownTablesRender(t *testing.T) {
	res, _ := realRun(t)
	res.AckMeanings = []verifier.Phase{{FromS: 0, Since: "start", Meaning: "fsynced | on the leader"}}
	md := report.Markdown(report.Input{Result: res, Settings: settings})
	for _, want := range []string{"### Recovery", "### Latency", "### What an ack meant", "### Settings"} {
		if !strings.Contains(md, want) {
			t.Fatalf("report.md lacks %s: the check below would not see its table\n%s", want, md)
		}
	}
	for _, err := range mdcheck.Tables([]byte(md)) {
		t.Errorf("report.md: %v", err)
	}
	if n := strings.Count(md, "\n|---"); n != 5 {
		t.Errorf("%d tables in report.md, want 5 (counts, recovery, latency, ack meanings, settings)\n%s", n, md)
	}
}

func TestHlogRoundTrips(t *testing.T) {
	res, _ := realRun(t)
	for _, publish := range []bool{true, false} {
		var b bytes.Buffer
		if err := report.WriteHlog(&b, res.Hist, publish); err != nil {
			t.Fatal(err)
		}
		r := hdrhistogram.NewHistogramLogReader(&b)
		var n int
		var total int64
		for {
			h, err := r.NextIntervalHistogram()
			if err == io.EOF || (err == nil && h == nil) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
			total += h.TotalCount()
		}
		want := res.Hist.PublishAll.TotalCount()
		wantN := len(res.Hist.Publish)
		if !publish {
			want, wantN = res.Hist.E2EAll.TotalCount(), len(res.Hist.E2E)
		}
		if n != wantN || total != want || total == 0 {
			t.Fatalf("publish=%v: read %d intervals with %d values, want %d with %d", publish, n, total, wantN, want)
		}
	}
}

// The page renders in a real browser and shows something: headless
// Chromium (Debian's) takes a screenshot, which must not be blank.
func TestHTMLRendersInChromium(t *testing.T) {
	need.Tools(t, need.Chromium, "chromium")
	res, out := realRun(t)
	if err := report.Write(out, report.Input{Result: res, Settings: settings}); err != nil {
		t.Fatal(err)
	}
	for _, f := range report.Files {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	page := filepath.Join(out, "report.html")
	// Self-contained: nothing to fetch at view time (the SVG namespace is a
	// name, not a download).
	body := strings.ReplaceAll(mustRead(t, page), "http://www.w3.org/2000/svg", "")
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "src=") {
		t.Fatal("report.html refers to the network")
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := report.Screenshot(ctx, page, shot, 1000, 1800); err != nil {
		t.Fatal(err)
	}
	colors, inked, err := report.Inked(shot)
	if err != nil {
		t.Fatal(err)
	}
	if colors < 8 || inked < 0.02 {
		t.Fatalf("the screenshot looks blank: %d colours, %.1f%% inked", colors, inked*100)
	}
	if dir := os.Getenv("ACKCHECK_REPORT_DIR"); dir != "" {
		os.MkdirAll(dir, 0o755)
		data, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(dir, "report-screenshot.png"), data, 0o644)
	}
	t.Logf("screenshot: %d colours, %.1f%% inked", colors, inked*100)
}

// A blank page is recognised as blank: the check above can fail.
func TestInkedSeesABlankPage(t *testing.T) {
	need.Tools(t, need.Chromium, "chromium")
	page := filepath.Join(t.TempDir(), "blank.html")
	os.WriteFile(page, []byte("<html><body></body></html>"), 0o644)
	shot := filepath.Join(t.TempDir(), "blank.png")
	if err := report.Screenshot(context.Background(), page, shot, 400, 300); err != nil {
		t.Fatal(err)
	}
	colors, inked, err := report.Inked(shot)
	if err != nil || colors > 2 || inked > 0 {
		t.Fatalf("blank page: %d colours, %.3f inked, %v", colors, inked, err)
	}
}

func mustRead(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The Recovery table of report.md and of the HTML page shows each figure
// beside the brokers' logs' account of it, as the summary does, and the
// warning when they disagree (here ready 2.1 s after an exact line, over
// the 2 s tolerance; in sync after a lower bound, which never warns);
// the table still renders.
func TestReportsShowTheOracle(t *testing.T) {
	res, _ := realRun(t)
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ready, inSync := 600.0, 300.0
	f := &res.Faults[0]
	f.At = at
	f.ReadyMs, f.InSyncMs = 2700, 1200
	f.Oracle = &drivers.LogAccount{Source: "nats-server's logs (nodes [2])",
		Ready:  &drivers.LogEvent{At: at.Add(600 * time.Millisecond), What: "the server | listens"},
		InSync: &drivers.LogEvent{At: at.Add(300 * time.Millisecond), What: "node 2 (PID 11) started", Bound: drivers.NotBefore}}
	f.OracleReadyMs, f.OracleInSyncMs = &ready, &inSync
	md := report.Markdown(report.Input{Result: res, Settings: settings})
	page := report.HTML(report.Input{Result: res, Settings: settings})
	for _, want := range []string{
		`| 2700 ms (nats-server's logs (nodes [2]): the server \| listens at 600 ms); warning: disagrees with the logs, 2.1s after the log's line, which says when it came (tolerance 2s late) |`,
		`| 1200 ms (nats-server's logs (nodes [2]): no earlier than node 2 (PID 11) started at 300 ms) |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q\n%s", want, md)
		}
	}
	for _, want := range []string{
		"<td>2700 ms (nats-server&#39;s logs (nodes [2]): the server | listens at 600 ms); warning: disagrees with the logs, 2.1s after",
		"<td>1200 ms (nats-server&#39;s logs (nodes [2]): no earlier than node 2 (PID 11) started at 300 ms)</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	for _, err := range mdcheck.Tables([]byte(md)) {
		t.Errorf("report.md: %v", err)
	}
	// Within the tolerances: the account, and no warning.
	f.ReadyMs = 900
	md = report.Markdown(report.Input{Result: res, Settings: settings})
	if !strings.Contains(md, "| 900 ms (nats-server's logs (nodes [2]): the server \\| listens at 600 ms) |") || strings.Contains(md, "disagrees") {
		t.Errorf("an agreeing figure: report.md\n%s", md)
	}
}
