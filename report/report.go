// Package report turns a judged run into what people read and what CI
// systems parse: a self-contained HTML page with SVG charts, a Markdown
// summary to paste into a pull request, HdrHistogram interval logs of the
// latencies (readable by HdrHistogram's own tools, so runs from several
// load machines can be merged), and a JUnit XML file with one test case
// per check.
//
// Everything is produced from the run directory alone (the ledger, after a
// read-back), so `ackcheck report` can regenerate it at any time.
package report

import (
	"fmt"
	"github.com/ackcheck/ackcheck/faults"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/verifier"
)

// Input is a judged run and the settings it ran with, in display order.
type Input struct {
	Result   *verifier.Result
	Settings [][2]string
}

// Files names what Write writes into a run directory.
var Files = []string{"report.html", "report.md", "publish.hlog", "e2e.hlog"}

// Write writes report.html, report.md, publish.hlog and e2e.hlog to dir.
func Write(dir string, in Input) error {
	if err := writeFile(filepath.Join(dir, "report.html"), HTML(in)); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.md"), Markdown(in)); err != nil {
		return err
	}
	if h := in.Result.Hist; h != nil {
		for _, name := range []string{"publish.hlog", "e2e.hlog"} {
			var b strings.Builder
			if err := WriteHlog(&b, h, name == "publish.hlog"); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
			if err := writeFile(filepath.Join(dir, name), b.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFile writes path whole or not at all (a temporary file renamed
// into place): a report cut short by a kill could say PASS of a verdict
// that was never finished.
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// faultBands turns the faults into shaded stretches: a node taken away
// (kill, stop, pause) from the fault to the action that gave it back (or
// the end of the run); a setting change as a thin mark.
func faultBands(r *verifier.Result, end float64) []band {
	var out []band
	for i, f := range r.Faults {
		if f.Result != faults.Applied {
			continue
		}
		switch f.Action {
		case faults.Kill, faults.Stop, faults.Pause:
			to := end
			for _, g := range r.Faults[i+1:] {
				if g.Node == f.Node && g.Result == faults.Applied && (g.Action == faults.Restart || g.Action == faults.Resume) {
					to = g.AtS
					break
				}
			}
			out = append(out, band{From: f.AtS, To: to, Label: fmt.Sprintf("%s node %d", f.Action, f.Node)})
		case faults.PowerLoss:
			// Down from the loss until the node(s) answered again.
			to := end
			if f.ReadyMs >= 0 {
				to = f.AtS + f.ReadyMs/1000
			}
			out = append(out, band{From: f.AtS, To: to, Label: faults.PowerLoss.String() + " " + f.Target})
		case faults.FsyncOn, faults.FsyncOff:
			out = append(out, band{From: f.AtS, To: f.AtS, Label: string(f.Action) + " " + f.Target})
		case faults.Partition, faults.PartitionClient, faults.Loss, faults.Bandwidth:
			// In force from its rules until the next heal-network (or the
			// end of the run, whose heal removes it).
			to := end
			for _, g := range r.Faults[i+1:] {
				if g.Action == faults.HealNetwork && g.Result == faults.Applied {
					to = g.AtS
					break
				}
			}
			out = append(out, band{From: f.AtS, To: to, Label: string(f.Action) + " " + f.Target})
		}
	}
	return out
}

func loadSeconds(r *verifier.Result) float64 {
	if !r.LoadEnd.IsZero() {
		return r.LoadEnd.Sub(r.LoadStart).Seconds()
	}
	return float64(len(r.Timeline))
}

// Charts returns the report's charts as SVG documents: acks per second,
// publish and end-to-end latency per window, and partitions without acks,
// each with the faults shaded.
func Charts(in Input) []string {
	r := in.Result
	end := loadSeconds(r)
	bands := faultBands(r, end)
	acks := lineChart{ID: "acks", Title: "Acks per second (offered: sends scheduled)", XLabel: "seconds since the load started", YLabel: "messages/s", Bands: bands, XMax: end}
	var xs, acked, sent []float64
	// The chart covers the seconds in which sends were scheduled: a last
	// second holding only late acks would draw a drop that did not happen.
	tl := r.Timeline
	for len(tl) > 0 && tl[len(tl)-1].Sent == 0 {
		tl = tl[:len(tl)-1]
	}
	for _, s := range tl {
		xs = append(xs, float64(s.T)+0.5)
		acked = append(acked, float64(s.Acked))
		sent = append(sent, float64(s.Sent))
	}
	acks.Series = []series{{Name: "acked/s", X: xs, Y: acked}, {Name: "offered/s", X: xs, Y: sent, Color: "#999"}}

	lat := func(id, title string, get func(verifier.Window) verifier.Latency) lineChart {
		var wx, p50, p99, mx []float64
		width := 10.0
		if r.Hist != nil && r.Hist.Window > 0 {
			width = r.Hist.Window.Seconds()
		} else if len(r.Windows) > 1 {
			width = r.Windows[1].StartS - r.Windows[0].StartS
		}
		title = fmt.Sprintf("%s, windows of %s", title, time.Duration(width*float64(time.Second)).Round(time.Millisecond))
		c := lineChart{ID: id, Title: title, XLabel: "seconds since the load started", YLabel: "ms (log scale)", LogY: true, Bands: bands, XMax: end}
		for _, w := range r.Windows {
			l := get(w)
			if l.Count == 0 {
				continue
			}
			wx = append(wx, w.StartS+width/2)
			p50, p99, mx = append(p50, l.P50), append(p99, l.P99), append(mx, l.Max)
		}
		c.Series = []series{{Name: "p50", X: wx, Y: p50}, {Name: "p99", X: wx, Y: p99}, {Name: "max", X: wx, Y: mx}}
		return c
	}
	pub := lat("publish-latency", "Publish latency per window (from the scheduled send time)", func(w verifier.Window) verifier.Latency { return w.Publish })
	e2e := lat("e2e-latency", "End-to-end latency per window", func(w verifier.Window) verifier.Latency { return w.E2E })

	var parts []int32
	for p := range r.PartitionGaps {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	ln := lanes{ID: "partition-gaps", Title: "Partitions without acks", XMax: end, Bands: bands}
	if r.PartitionGapsListed != "" {
		ln.Title += ": " + r.PartitionGapsListed
	}
	for _, p := range parts {
		ln.Rows = append(ln.Rows, fmt.Sprintf("p%d", p))
		var gs [][2]float64
		for _, g := range r.PartitionGaps[p] {
			gs = append(gs, [2]float64{g.FromS, g.ToS})
		}
		ln.Gaps = append(ln.Gaps, gs)
	}
	return []string{acks.SVG(), pub.SVG(), e2e.SVG(), ln.SVG()}
}

// counts are the verdict's rows: name, value, whether it fails the verdict.
func counts(r *verifier.Result) [][3]string {
	bad := func(n int64) string {
		if n > 0 {
			return "FAIL"
		}
		return ""
	}
	rows := [][3]string{{"acked lost", fmt.Sprint(r.Lost), bad(r.Lost)}}
	if r.Unread > 0 {
		// Never lost: acked messages of partitions not read to their end.
		rows = append(rows, [3]string{"acked unread (partitions not read to their end: not judged)", fmt.Sprint(r.Unread), ""})
	}
	rows = append(rows, [][3]string{
		{"corrupt", fmt.Sprint(r.Corrupt), bad(r.Corrupt)},
		{"phantom", fmt.Sprint(r.Phantom), bad(r.Phantom)},
		{"duplicates", fmt.Sprint(r.Duplicates), ""},
		{"reordered", fmt.Sprint(r.Reordered), ""},
		{"indeterminate", fmt.Sprint(r.Indeterminate), ""},
		{"not written", fmt.Sprint(r.NotWritten), ""},
		{"sent", fmt.Sprint(r.Sent), ""},
		{"acked", fmt.Sprint(r.Acked), r.AckClassesText()},
		{"failed", fmt.Sprint(r.Failed), ""},
		{"shed", r.ShedText(), ""},
		{"read back", fmt.Sprint(r.Read), ""},
	}...)
	return append(rows, groupCounts(r)...)
}

// groupCounts are the consumer group's rows (none without a group).
func groupCounts(r *verifier.Result) [][3]string {
	g := r.Group
	if g == nil {
		return nil
	}
	lost := ""
	if g.CommitsLost > 0 {
		lost = "counted (commits not promised durable)"
		if g.Durable {
			lost = "FAIL"
		}
	}
	bad := ""
	if g.Skipped > 0 {
		bad = "FAIL"
	}
	rows := [][3]string{
		{"group " + g.Name + ": delivered", fmt.Sprint(g.Delivered), fmt.Sprintf("%d deliveries, %d commits acknowledged; a commit: %s", g.Deliveries, g.Commits, g.Promise)},
		{"group " + g.Name + ": skipped", fmt.Sprint(g.Skipped), bad},
		{"group " + g.Name + ": commits lost", fmt.Sprint(g.CommitsLost), lost},
		{"group " + g.Name + ": redelivered", fmt.Sprint(g.Redelivered), fmt.Sprintf("%d after a commit covered them", g.RedeliveredAfterCommit)},
	}
	if l := g.CommitLatency; l.Count > 0 {
		rows = append(rows, [3]string{"group " + g.Name + ": commit calls timed", fmt.Sprint(l.Count),
			fmt.Sprintf("poll's return to the broker's answer, ms: p50 %.2f, p99 %.2f, max %.2f", l.P50, l.P99, l.Max)})
	}
	return rows
}

// lossLines are the worst partitions' losses and where every lost,
// duplicate and reordered message is listed, a line each.
func lossLines(r *verifier.Result) []string {
	var out []string
	for _, p := range r.WorstPartitions(10) {
		out = append(out, r.PartitionLossText(p))
	}
	if n := len(r.LostByPartition); n > 10 {
		out = append(out, fmt.Sprintf("and %d more partitions", n-10))
	}
	for _, l := range r.Listings {
		switch {
		case l.Total == 0:
		case l.Capped:
			out = append(out, fmt.Sprintf("%s lists %d of %d %s messages (capped by --list-max)", l.File, l.Listed, l.Total, l.Class))
		default:
			out = append(out, fmt.Sprintf("%s lists all %d %s messages", l.File, l.Listed, l.Class))
		}
	}
	return out
}

func ms(v float64) string {
	if v < 0 {
		return "not observed"
	}
	return fmt.Sprintf("%.0f ms", v)
}

// recovery rows: per fault that took a node away.
func recovery(r *verifier.Result) [][]string {
	var rows [][]string
	for _, f := range r.Faults {
		if f.FirstAckMs == nil {
			continue
		}
		proof := ""
		if kp := f.KillProof; kp != nil {
			proof = kp.String()
		}
		node := fmt.Sprint(f.Node)
		if len(f.Nodes) > 0 {
			node = strings.Trim(fmt.Sprint(f.Nodes), "[]")
			var lost []string
			for _, id := range f.Nodes {
				lost = append(lost, fmt.Sprintf("node %d PID %d → %d, lost %s", id, f.PIDs[id], f.Restarted[id], f.Lost[id]))
			}
			proof = strings.Join(lost, "; ")
		}
		rows = append(rows, []string{f.FaultWhen(), string(f.Action) + " " + f.Target, node,
			ms(f.SlowestFirstAckMs), ms(f.LongestStallMs), withOracle(f, f.ReadyMs, true), withOracle(f, f.InSyncMs, false), f.InSyncEvidence, proof})
	}
	return rows
}

// withOracle is a recovery figure beside the brokers' own account of it,
// as the summary prints it ("900 ms (Kafka's logs (nodes [1 2 3]): the
// controller unfenced broker 2 at 850 ms)"), followed by the verdict's
// warning when the two disagree beyond the tolerances: a reader of the
// table sees the cross-check and its failure where the figure is.
func withOracle(f verifier.FaultReport, v float64, ready bool) string {
	s := ms(v) + f.OracleText(ready)
	if d := f.OracleDisagreement(ready); d != "" {
		s += "; warning: disagrees with the logs, " + d
	}
	return s
}

var recoveryHeader = []string{"at", "fault", "node", "slowest partition's first ack of a message sent after it",
	"longest partition stall over it", "killed server ready", "all replicas in sync", "rejoin seen as", "kill proof"}

// HTML renders the self-contained page.
func HTML(in Input) string {
	r := in.Result
	e := html.EscapeString
	var b strings.Builder
	verdictColor := "#1a9850"
	if r.Verdict != verifier.Pass {
		verdictColor = "#d73027"
	}
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>ackcheck %s: %s</title>
<style>body{font-family:sans-serif;margin:24px;max-width:980px;color:#222}table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}th{background:#f3f3f3}
.verdict{font-size:28px;font-weight:bold;color:#fff;background:%s;padding:10px 16px;display:inline-block;border-radius:4px}
.fail{color:#d73027;font-weight:bold}svg{display:block;margin:12px 0;background:#fff}</style></head><body>
`, e(r.RunID), e(r.Verdict), verdictColor)
	fmt.Fprintf(&b, `<div class="verdict" id="verdict">%s</div><p>run %s, driver %s, topic %s, longest without acks <b>%.0f ms</b></p>`,
		e(strings.ToUpper(r.Verdict)), e(r.RunID), e(r.Driver), e(r.Topic), r.LongestNoAckMs)
	if len(r.Reasons) > 0 {
		b.WriteString("<ul>")
		for _, reason := range r.Reasons {
			fmt.Fprintf(&b, `<li class="fail">%s</li>`, e(reason))
		}
		b.WriteString("</ul>")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, `<p class="fail">warning: %s</p>`, e(w))
	}
	if lines := lossLines(r); len(lines) > 0 {
		b.WriteString(`<h2>Lost by partition</h2><ul id="lost-by-partition">`)
		for _, l := range lines {
			fmt.Fprintf(&b, "<li>%s</li>", e(l))
		}
		b.WriteString("</ul>")
	}
	b.WriteString(`<table id="counts"><tr><th>check</th><th>count</th><th></th></tr>`)
	for _, c := range counts(r) {
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td class="fail">%s</td></tr>`, e(c[0]), e(c[1]), e(c[2]))
	}
	b.WriteString("</table>")
	if rows := recovery(r); len(rows) > 0 {
		b.WriteString(`<h2>Recovery</h2><table id="recovery"><tr>`)
		for _, h := range recoveryHeader {
			fmt.Fprintf(&b, "<th>%s</th>", e(h))
		}
		b.WriteString("</tr>")
		for _, row := range rows {
			b.WriteString("<tr>")
			for _, c := range row {
				fmt.Fprintf(&b, "<td>%s</td>", e(c))
			}
			b.WriteString("</tr>")
		}
		b.WriteString("</table>")
	}
	fmt.Fprintf(&b, `<h2>Latency</h2><p>publish p50 %.2f ms, p99 %.2f ms, max %.2f ms; end-to-end p50 %.2f ms, p99 %.2f ms, max %.2f ms</p>`,
		r.Publish.P50, r.Publish.P99, r.Publish.Max, r.E2E.P50, r.E2E.P99, r.E2E.Max)
	for _, svg := range Charts(in) {
		b.WriteString(svg)
	}
	if len(r.Faults) > 0 {
		b.WriteString(`<h2>Faults</h2><table id="faults"><tr><th>at</th><th>fault</th><th>result</th><th>expected</th></tr>`)
		for _, f := range r.Faults {
			res := string(f.Result)
			if f.Error != "" {
				res += ": " + f.Error
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s %s</td><td>%s</td><td>%s</td></tr>", e(f.FaultWhen()), e(string(f.Action)), e(f.Target), e(res), e(f.Expect))
		}
		b.WriteString("</table>")
	}
	b.WriteString(networkProofHTML(r))
	if len(r.AckMeanings) > 0 {
		b.WriteString(`<h2>What an ack meant</h2><table id="ack-meanings"><tr><th>from</th><th>since</th><th>meaning</th></tr>`)
		for _, p := range r.AckMeanings {
			fmt.Fprintf(&b, "<tr><td>%.1f s</td><td>%s</td><td>%s</td></tr>", p.FromS, e(p.Since), e(p.Meaning))
		}
		b.WriteString("</table>")
	}
	b.WriteString(`<h2>Settings</h2><table id="settings">`)
	for _, s := range in.Settings {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>", e(s[0]), e(s[1]))
	}
	b.WriteString("</table>")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "<p><b>Note:</b> %s</p>", e(n))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

func mdRow(cells ...string) string {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdHeader writes a table's header and its delimiter row, one cell each
// per column: GFM renders no table whose two counts differ. A name that
// ends in ":" is a right-aligned column (the colon is not shown).
func mdHeader(b *strings.Builder, names ...string) {
	cells := make([]string, len(names))
	delim := make([]string, len(names))
	for i, n := range names {
		cells[i], delim[i] = n, "---"
		if strings.HasSuffix(n, ":") {
			cells[i], delim[i] = strings.TrimSuffix(n, ":"), "---:"
		}
	}
	b.WriteString(mdRow(cells...))
	b.WriteString("|" + strings.Join(delim, "|") + "|\n")
}

// Markdown renders the tables of the HTML page for a pull request.
func Markdown(in Input) string {
	r := in.Result
	var b strings.Builder
	fmt.Fprintf(&b, "## ackcheck: %s\n\nRun `%s`, driver %s, topic `%s`. Longest interval without acks: **%.0f ms**.\n\n",
		strings.ToUpper(r.Verdict), r.RunID, r.Driver, r.Topic, r.LongestNoAckMs)
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "- **%s**\n", reason)
	}
	if len(r.Reasons) > 0 {
		b.WriteString("\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "- warning: %s\n", w)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
	}
	if lines := lossLines(r); len(lines) > 0 {
		b.WriteString("### Lost by partition\n\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
		b.WriteString("\n")
	}
	mdHeader(&b, "check", "count:", "")
	for _, c := range counts(r) {
		b.WriteString(mdRow(c[0], c[1], c[2]))
	}
	if rows := recovery(r); len(rows) > 0 {
		b.WriteString("\n### Recovery\n\n")
		mdHeader(&b, recoveryHeader...)
		for _, row := range rows {
			b.WriteString(mdRow(row...))
		}
	}
	b.WriteString(networkProofMarkdown(r))
	b.WriteString("\n### Latency (ms)\n\n")
	mdHeader(&b, "", "p50:", "p99:", "p99.9:", "max:")
	for _, l := range []struct {
		name string
		v    verifier.Latency
	}{{"publish", r.Publish}, {"end-to-end", r.E2E}} {
		b.WriteString(mdRow(l.name, fmt.Sprintf("%.2f", l.v.P50), fmt.Sprintf("%.2f", l.v.P99), fmt.Sprintf("%.2f", l.v.P999), fmt.Sprintf("%.2f", l.v.Max)))
	}
	if len(r.AckMeanings) > 0 {
		b.WriteString("\n### What an ack meant\n\n")
		mdHeader(&b, "from", "since", "meaning")
		for _, p := range r.AckMeanings {
			b.WriteString(mdRow(fmt.Sprintf("%.1f s", p.FromS), p.Since, p.Meaning))
		}
	}
	b.WriteString("\n### Settings\n\n")
	mdHeader(&b, "setting", "value")
	for _, s := range in.Settings {
		b.WriteString(mdRow(s[0], s[1]))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}
