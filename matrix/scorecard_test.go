package matrix

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/verifier"
)

// killRun is a result of a leader kill with the given figures.
func killRun(lost int64, noAck, ready, inSync float64) verifier.Result {
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	v := verifier.Pass
	if lost > 0 {
		v = verifier.Fail
	}
	return verifier.Result{Verdict: v, Lost: lost, Acked: 1000, LongestNoAckMs: noAck,
		LoadStart: start, LoadEnd: start.Add(10 * time.Second),
		Publish: verifier.Latency{Count: 1000, P50: 2, P99: 20}, E2E: verifier.Latency{Count: 1000, P50: 3, P99: 30},
		Faults: []verifier.FaultReport{{Record: faults.Record{Action: faults.Kill, InSyncEvidence: "node 1 left the ISR"}, ReadyMs: ready, InSyncMs: inSync,
			KillProof: &verifier.KillProof{OldPID: 10, NewPID: 11, SameDataDir: true, SurvivorsUnchanged: true}}}}
}

func columnOf(t *testing.T, dir, label string, results ...verifier.Result) Column {
	c := Column{Label: label}
	for i, r := range results {
		d := filepath.Join(dir, label, fmt.Sprint(i+1))
		writeRun(t, d, r, 100)
		c.Runs = append(c.Runs, d)
	}
	return c
}

func rowOf(t *testing.T, tb Table, name string) Row {
	t.Helper()
	for _, r := range tb.Rows {
		if r.Measure == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return Row{}
}

func TestScorecardFigures(t *testing.T) {
	dir := t.TempDir()
	all := columnOf(t, dir, "all", killRun(0, 800, 9000, 12000), killRun(0, 600, 7000, 11000), killRun(0, 700, 8000, -1))
	one := columnOf(t, dir, "one", killRun(5, 100, 6000, 9000), killRun(40, 90, 6500, 9500), killRun(12, 120, 7000, 9900))
	card := Build(dir, "t", []TableSpec{{Title: "x", Columns: []Column{all, one}}})
	tb := card.Tables[0]
	lost := rowOf(t, tb, "acked messages lost")
	c := lost.Cells[1]
	if c.N != 3 || *c.Min.Value != 5 || *c.Median.Value != 12 || *c.Max.Value != 40 || *c.Total != 57 {
		t.Fatalf("lost of one: %+v", c)
	}
	if c.Min.Run != "one/1" || c.Median.Run != "one/3" || c.Max.Run != "one/2" || c.Runs[1].Text != "40 of 1000 acked (FAIL)" {
		t.Fatalf("links: %+v", c)
	}
	// 0..0 against 5..40: the ranges do not overlap.
	if !c.Marked || !lost.Cells[0].Marked || len(lost.Differences) != 1 || lost.Differences[0] != "all (0..0) below one (5..40): all is better" {
		t.Fatalf("lost differences %+v", lost)
	}
	// 600..800 against 90..120, higher is worse.
	if d := rowOf(t, tb, "longest interval with zero acks").Differences; len(d) != 1 || !strings.HasPrefix(d[0], "one (90..120) below all (600..800): one is better") {
		t.Fatalf("no-ack differences %v", d)
	}
	// 7000..9000 against 6000..7000 touch: no difference.
	if r := rowOf(t, tb, "killed server ready"); len(r.Differences) != 0 || r.Cells[0].Marked {
		t.Fatalf("overlapping ranges marked: %+v", r)
	}
	// One run of all did not see its replicas in sync: not a figure, and
	// the row marks nothing.
	inSync := rowOf(t, tb, "all replicas in sync")
	if inSync.Cells[0].N != 2 || inSync.Cells[0].Runs[2].Text != "not observed" || len(inSync.Differences) != 0 || !strings.Contains(inSync.Note, "all has 2 runs with a value of 3") {
		t.Fatalf("in sync %+v", inSync)
	}
	if inSync.Cells[1].Runs[0].Note != "node 1 left the ISR" {
		t.Fatalf("evidence not kept: %+v", inSync.Cells[1].Runs[0])
	}
	if kp := rowOf(t, tb, "kill proof").Cells[0]; kp.Summary != "3 holds" || kp.N != 3 {
		t.Fatalf("kill proof %+v", kp)
	}
	if v := rowOf(t, tb, "verdict").Cells[1].Summary; v != "3 fail" {
		t.Fatalf("verdicts %q", v)
	}
	if r := rowOf(t, tb, "achieved rate").Cells[0]; *r.Median.Value != 100 || r.Runs[0].Text != "100 of 100 offered" {
		t.Fatalf("rate %+v", r)
	}
	if len(tb.Notes) != 1 {
		t.Fatalf("notes %v", tb.Notes)
	}
	if err := card.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, CardMarkdown))
	for _, want := range []string{"≠ n=3: min [5](one/1/report.md) / median [12](one/3/report.md) / max [40](one/2/report.md); total 57", "[40 of 1000 acked (FAIL)](one/2/report.md)", "- one/1, all replicas in sync: node 1 left the ISR"} {
		if !strings.Contains(string(md), want) {
			t.Fatalf("scorecard.md lacks %q:\n%s", want, md)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, CardHTML))
	if !strings.Contains(string(html), `<a href="one/2/report.html">40</a>`) || !strings.Contains(string(html), "<li>one/1, all replicas in sync: node 1 left the ISR</li>") {
		t.Fatalf("scorecard.html lacks the link:\n%s", html)
	}
	var back Card
	data, _ := os.ReadFile(filepath.Join(dir, CardJSON))
	if err := json.Unmarshal(data, &back); err != nil || len(back.Tables[0].Rows) != len(measures) {
		t.Fatalf("scorecard.json: %v", err)
	}
}

// With fewer than 3 runs in a column, ranges that do not overlap are not
// marked, and the card says why.
func TestScorecardNoDifferenceBelowThreeRuns(t *testing.T) {
	dir := t.TempDir()
	all := columnOf(t, dir, "all", killRun(0, 800, 9000, 12000), killRun(0, 600, 7000, 11000))
	one := columnOf(t, dir, "one", killRun(5, 100, 6000, 9000), killRun(40, 90, 6500, 9500), killRun(12, 120, 7000, 9900))
	tb := Build(dir, "t", []TableSpec{{Title: "x", Columns: []Column{all, one}}}).Tables[0]
	for _, r := range tb.Rows {
		if len(r.Differences) > 0 || r.Cells[0].Marked || r.Cells[1].Marked {
			t.Fatalf("row %s marked with n=2: %+v", r.Measure, r)
		}
	}
	if !strings.Contains(tb.Notes[0], "No difference is marked in this table: all has n=2") {
		t.Fatalf("notes %v", tb.Notes)
	}
}

// A run that is not done (no result.json, or no final verdict) is shown
// as such and counts in no figure.
func TestScorecardRunNotDone(t *testing.T) {
	dir := t.TempDir()
	col := columnOf(t, dir, "a", killRun(0, 800, 9000, 12000), verifier.Result{Verdict: verifier.Incomplete})
	col.Runs = append(col.Runs, filepath.Join(dir, "a", "3"))
	tb := Build(dir, "t", []TableSpec{{Title: "x", Columns: []Column{col}}}).Tables[0]
	c := rowOf(t, tb, "acked messages lost").Cells[0]
	if c.N != 1 || c.Runs[1].Text != "not done (verdict incomplete)" || c.Runs[2].Text != "not done (no result.json)" || c.Runs[1].Value != nil {
		t.Fatalf("cell %+v", c)
	}
	if v := rowOf(t, tb, "verdict").Cells[0]; v.N != 1 || v.Summary != "1 pass" {
		t.Fatalf("verdict %+v", v)
	}
}

// A column of 4 runs, one without a figure: n is 3, the median is the
// lower middle figure (one run's), and the row marks no difference
// although the ranges of the figures do not overlap: the missing run
// could lie anywhere.
func TestScorecardRunWithoutFigure(t *testing.T) {
	dir := t.TempDir()
	a := columnOf(t, dir, "a", killRun(0, 1, 1, 500), killRun(0, 1, 1, 400), killRun(0, 1, 1, -1), killRun(0, 1, 1, 300))
	b := columnOf(t, dir, "b", killRun(0, 1, 1, 10), killRun(0, 1, 1, 20), killRun(0, 1, 1, 30), killRun(0, 1, 1, 40))
	tb := Build(dir, "t", []TableSpec{{Title: "x", Columns: []Column{a, b}}}).Tables[0]
	r := rowOf(t, tb, "all replicas in sync")
	if r.Cells[0].N != 3 || len(r.Differences) != 0 || !strings.Contains(r.Note, "a has 3 runs with a value of 4") {
		t.Fatalf("row %+v", r)
	}
	if m := r.Cells[1].Median; *m.Value != 20 || m.Run != "b/2" {
		t.Fatalf("median of 10,20,30,40: %+v", m)
	}
}

// Links are relative to the scorecard's directory even when the runs are
// given relative to the current directory and the card is written
// elsewhere (ackcheck compare a b --out elsewhere).
func TestScorecardLinksFromElsewhere(t *testing.T) {
	dir := t.TempDir()
	columnOf(t, dir, "runs", killRun(0, 1, 1, 1))
	t.Chdir(dir)
	card := Build(filepath.Join(dir, "cards", "c"), "t", []TableSpec{{Title: "x", Columns: []Column{{Label: "r", Runs: []string{"runs/1"}}}}})
	if got := card.Tables[0].Rows[0].Cells[0].Runs[0].Run; got != "../../runs/1" {
		t.Fatalf("link %q, want ../../runs/1", got)
	}
}

// The brokers' logs' in-sync row shows the run's own oracle: an exact
// event as a figure, a bound as a bound and not as a figure to rank.
func TestScorecardOracleRow(t *testing.T) {
	var row measure
	for _, m := range measures {
		if m.name == "all replicas in sync, by the brokers' logs" {
			row = m
		}
	}
	if row.get == nil {
		t.Fatal("no oracle row")
	}
	at := time.Now()
	for _, tc := range []struct {
		name  string
		bound drivers.Bound
		text  string
		value bool
	}{
		{"an exact event is a figure", drivers.Exact, "8870", true},
		{"a lower bound is said as one", drivers.NotBefore, "no earlier than 8870", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := 8870.0
			f := verifier.FaultReport{Record: faults.Record{Action: faults.Kill, At: at,
				Oracle: &drivers.LogAccount{Source: "logs", InSync: &drivers.LogEvent{At: at.Add(8870 * time.Millisecond), What: "back", Bound: tc.bound}}},
				OracleInSyncMs: &v}
			p := row.get(&runData{res: verifier.Result{Faults: []verifier.FaultReport{f}}})
			if p.Text != tc.text || (p.Value != nil) != tc.value || p.Note != "logs: back" {
				t.Errorf("point %+v (value %v), want text %q, a value %v", p, p.Value != nil, tc.text, tc.value)
			}
		})
	}
}
