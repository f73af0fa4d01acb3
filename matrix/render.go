package matrix

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// The scorecard's files, written into its directory.
const (
	CardMarkdown = "scorecard.md"
	CardHTML     = "scorecard.html"
	CardJSON     = "scorecard.json"
)

// Write writes the card as scorecard.md, scorecard.html and
// scorecard.json into dir. The links in them are relative to dir.
func (c *Card) Write(dir string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the scorecard: %w", err)
	}
	files := map[string][]byte{CardJSON: append(data, '\n'), CardMarkdown: []byte(c.Markdown()), CardHTML: []byte(c.HTML())}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write the scorecard: %w", err)
		}
	}
	return nil
}

// runLink is where a figure links: the run's own report.
func runLink(run, ext string) string { return run + "/report." + ext }

// legend is the text every rendering opens with.
const legend = "Every figure is read from its run's result.json (the offered rate from run.json) and links to that run's report. " +
	"n counts the runs with a figure; the median is the lower middle one when n is even, so that it is one run's figure. " +
	"A difference is marked (≠) only where two columns' min..max ranges do not overlap and every run of both has a figure, " +
	"with at least 3 runs each."

func mdLink(p *Point) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("[%s](%s)", mdEscape(p.Text), runLink(p.Run, "md"))
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "[", `\[`, "]", `\]`, "\n", " ").Replace(s)
}

func cellValue(p *Point) string {
	if p == nil || p.Value == nil {
		return "—"
	}
	return ms(*p.Value)
}

// differenceText is a row's difference column: the differences it marks,
// or else its note saying why it marks none.
func (r Row) differenceText() string {
	if d := strings.Join(r.Differences, "; "); d != "" {
		return d
	}
	return r.Note
}

// cellMD is one cell as the summary table shows it.
func cellMD(r Row, c Cell, perRun bool) string {
	var b strings.Builder
	if c.Marked {
		b.WriteString("≠ ")
	}
	switch {
	case c.Summary != "":
		fmt.Fprintf(&b, "n=%d: %s", c.N, mdEscape(c.Summary))
	case c.N == 0:
		b.WriteString("n=0")
		if len(c.Runs) > 0 {
			fmt.Fprintf(&b, " (%s)", mdEscape(c.Runs[0].Text))
		}
	default:
		fmt.Fprintf(&b, "n=%d: min [%s](%s) / median [%s](%s) / max [%s](%s)", c.N,
			cellValue(c.Min), runLink(c.Min.Run, "md"), cellValue(c.Median), runLink(c.Median.Run, "md"), cellValue(c.Max), runLink(c.Max.Run, "md"))
		if c.Total != nil {
			fmt.Fprintf(&b, "; total %s", ms(*c.Total))
		}
	}
	if perRun {
		var runs []string
		for _, p := range c.Runs {
			runs = append(runs, mdLink(&p))
		}
		fmt.Fprintf(&b, "<br>runs: %s", strings.Join(runs, ", "))
	}
	return b.String()
}

// Markdown renders the card.
func (c *Card) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n", mdEscape(c.Title), legend)
	for _, t := range c.Tables {
		fmt.Fprintf(&b, "\n## %s\n\n", mdEscape(t.Title))
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
		b.WriteString("\n| measure |")
		for _, col := range t.Columns {
			fmt.Fprintf(&b, " %s |", mdEscape(col))
		}
		b.WriteString(" difference |\n|---|")
		for range t.Columns {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for _, r := range t.Rows {
			name := r.Measure
			if r.Unit != "" {
				name += " (" + r.Unit + ")"
			}
			fmt.Fprintf(&b, "| %s |", mdEscape(name))
			for _, cell := range r.Cells {
				fmt.Fprintf(&b, " %s |", cellMD(r, cell, r.Measure == "acked messages lost"))
			}
			fmt.Fprintf(&b, " %s |\n", mdEscape(r.differenceText()))
		}
		writeRunsMD(&b, t)
	}
	return b.String()
}

// writeRunsMD lists every run of every column with all its figures.
func writeRunsMD(b *strings.Builder, t Table) {
	fmt.Fprintf(b, "\n### Every run of %s\n\n| column | run |", mdEscape(t.Title))
	for _, r := range t.Rows {
		fmt.Fprintf(b, " %s |", mdEscape(r.Measure))
	}
	b.WriteString("\n|---|---|")
	for range t.Rows {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var notes []string
	for ci, col := range t.Columns {
		if len(t.Rows) == 0 {
			break
		}
		for ri := range t.Rows[0].Cells[ci].Runs {
			run := t.Rows[0].Cells[ci].Runs[ri].Run
			fmt.Fprintf(b, "| %s | [%s](%s) |", mdEscape(col), mdEscape(run), runLink(run, "md"))
			for _, r := range t.Rows {
				p := r.Cells[ci].Runs[ri]
				fmt.Fprintf(b, " %s |", mdLink(&p))
				if p.Note != "" {
					notes = append(notes, fmt.Sprintf("- %s, %s: %s", run, r.Measure, mdEscape(p.Note)))
				}
			}
			b.WriteString("\n")
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
}

// HTML renders the card as one page.
func (c *Card) HTML() string {
	var b strings.Builder
	e := html.EscapeString
	a := func(p *Point) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf(`<a href="%s">%s</a>`, e(runLink(p.Run, "html")), e(cellValue(p)))
	}
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}td.marked{background:#fff3c4}small{color:#555}</style></head><body>\n", e(c.Title))
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", e(c.Title), e(legend))
	for _, t := range c.Tables {
		fmt.Fprintf(&b, "<h2>%s</h2>\n<ul>", e(t.Title))
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "<li>%s</li>", e(n))
		}
		b.WriteString("</ul>\n<table><tr><th>measure</th>")
		for _, col := range t.Columns {
			fmt.Fprintf(&b, "<th>%s</th>", e(col))
		}
		b.WriteString("<th>difference</th></tr>\n")
		for _, r := range t.Rows {
			fmt.Fprintf(&b, "<tr><th>%s<br><small>%s</small></th>", e(r.Measure), e(r.Unit))
			for _, cell := range r.Cells {
				class := ""
				if cell.Marked {
					class = ` class="marked"`
				}
				fmt.Fprintf(&b, "<td%s>", class)
				if cell.Marked {
					b.WriteString("≠ ")
				}
				switch {
				case cell.Summary != "":
					fmt.Fprintf(&b, "n=%d: %s", cell.N, e(cell.Summary))
				case cell.N == 0:
					b.WriteString("n=0")
				default:
					fmt.Fprintf(&b, "n=%d: min %s / median %s / max %s", cell.N, a(cell.Min), a(cell.Median), a(cell.Max))
					if cell.Total != nil {
						fmt.Fprintf(&b, "; total %s", ms(*cell.Total))
					}
				}
				b.WriteString("<br><small>runs: ")
				for i, p := range cell.Runs {
					if i > 0 {
						b.WriteString(", ")
					}
					fmt.Fprintf(&b, `<a href="%s" title="%s">%s</a>`, e(runLink(p.Run, "html")), e(p.Note), e(p.Text))
				}
				b.WriteString("</small></td>")
			}
			fmt.Fprintf(&b, "<td>%s</td></tr>\n", e(r.differenceText()))
		}
		b.WriteString("</table>\n")
		writeRunsHTML(&b, t)
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// writeRunsHTML lists every run of every column with all its figures and
// the notes beside them (the rejoin evidence, the kill proof).
func writeRunsHTML(b *strings.Builder, t Table) {
	e := html.EscapeString
	if len(t.Rows) == 0 {
		return
	}
	fmt.Fprintf(b, "<h3>Every run of %s</h3>\n<table><tr><th>column</th><th>run</th>", e(t.Title))
	for _, r := range t.Rows {
		fmt.Fprintf(b, "<th>%s</th>", e(r.Measure))
	}
	b.WriteString("</tr>\n")
	var notes []string
	for ci, col := range t.Columns {
		for ri, first := range t.Rows[0].Cells[ci].Runs {
			fmt.Fprintf(b, `<tr><td>%s</td><td><a href="%s">%s</a></td>`, e(col), e(runLink(first.Run, "html")), e(first.Run))
			for _, r := range t.Rows {
				p := r.Cells[ci].Runs[ri]
				fmt.Fprintf(b, `<td><a href="%s">%s</a></td>`, e(runLink(p.Run, "html")), e(p.Text))
				if p.Note != "" {
					notes = append(notes, fmt.Sprintf("<li>%s, %s: %s</li>", e(p.Run), e(r.Measure), e(p.Note)))
				}
			}
			b.WriteString("</tr>\n")
		}
	}
	b.WriteString("</table>\n")
	if len(notes) > 0 {
		b.WriteString("<ul>" + strings.Join(notes, "") + "</ul>\n")
	}
}
