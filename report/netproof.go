package report

import (
	"html"
	"strings"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/verifier"
)

// The network proof of each network fault (faults.NetworkProof): the rules
// it installed, the paths they were meant to cut, and every path probed
// before the rules, after them, and after the heal. A fault whose probe
// after showed a meant path answering is Failed, and its row says so.

var networkProofHeader = []string{"at", "fault", "result", "rules", "meant to be cut", "before", "after", "after the heal"}

// networkProofs are the rows, one per fault with a network proof.
func networkProofs(r *verifier.Result) [][]string {
	var rows [][]string
	for _, f := range r.Faults {
		p := f.NetworkProof
		if p == nil {
			continue
		}
		var rules []string
		for _, rl := range p.Rules {
			rules = append(rules, rl.String())
		}
		res := string(f.Result)
		if f.Error != "" {
			res += ": " + f.Error
		}
		meant := strings.Join(p.MeantCut, ", ")
		if meant == "" {
			meant = "none for sure"
		}
		healed := p.Healed.String()
		if f.Action == faults.HealNetwork {
			healed = "" // its After is the probe after the heal
		}
		rows = append(rows, []string{f.FaultWhen(), string(f.Action) + " " + f.Target, res,
			strings.Join(rules, "; "), meant, p.Before.String(), p.After.String(), healed})
	}
	return rows
}

// networkProofMarkdown is the section of report.md, "" without network
// faults.
func networkProofMarkdown(r *verifier.Result) string {
	rows := networkProofs(r)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Network proof\n\n")
	mdHeader(&b, networkProofHeader...)
	for _, row := range rows {
		b.WriteString(mdRow(row...))
	}
	return b.String()
}

// networkProofHTML is the section of report.html, "" without network
// faults.
func networkProofHTML(r *verifier.Result) string {
	rows := networkProofs(r)
	if len(rows) == 0 {
		return ""
	}
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<h2>Network proof</h2><table id="network-proof"><tr>`)
	for _, h := range networkProofHeader {
		b.WriteString("<th>" + e(h) + "</th>")
	}
	b.WriteString("</tr>")
	for _, row := range rows {
		b.WriteString("<tr>")
		for _, c := range row {
			b.WriteString("<td>" + e(c) + "</td>")
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return b.String()
}
