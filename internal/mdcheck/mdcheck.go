// Package mdcheck checks Markdown the way GitHub renders it (goldmark
// with its GFM table extension): every table written is a table read.
// Tests use it on report.md and on README.md and docs/; the product does
// not link it (nothing outside _test.go files imports it).
package mdcheck

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// delimiterRow is a GFM table's second line: cells of dashes, with
// optional colons for alignment.
var delimiterRow = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// Tables parses md and returns one error per table that does not render
// as the table it was written as: a delimiter row (|---|) with no table
// parsed at it (its header has another number of cells, so GFM renders
// the lines as a paragraph), or a row whose cell count differs from the
// header's (GFM pads or drops cells silently). Lines inside code
// blocks are not tables and are not counted.
func Tables(md []byte) []error {
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(md))
	var errs []error
	tables := map[int]bool{} // line number of each parsed table's delimiter row
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			return ast.WalkSkipChildren, nil
		case *east.Table:
			header := n.FirstChild()
			headLine := lineOf(md, header)
			tables[headLine+1] = true
			want := header.ChildCount()
			for row := header.NextSibling(); row != nil; row = row.NextSibling() {
				if got := rawCells(md, lineOf(md, row)); got != want {
					errs = append(errs, fmt.Errorf("line %d: a row of %d cells under a header of %d", lineOf(md, row), got, want))
				}
			}
		}
		return ast.WalkContinue, nil
	})
	inFence := false
	for i, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.Contains(line, "-") || !strings.Contains(line, "|") || !delimiterRow.MatchString(line) {
			continue
		}
		if !tables[i+1] {
			errs = append(errs, fmt.Errorf("line %d: %q is a table's delimiter row, but no table renders there (its header has %d cells, the delimiter row %d)",
				i+1, line, rawCells(md, i), rawCells(md, i+1)))
		}
	}
	return errs
}

// lineOf is the 1-based line of a block node's first text segment (a
// table row's: its first cell's).
func lineOf(md []byte, n ast.Node) int {
	for c := n; c != nil; c = c.FirstChild() {
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			return 1 + strings.Count(string(md[:c.Lines().At(0).Start]), "\n")
		}
		if t, ok := c.(*ast.Text); ok {
			return 1 + strings.Count(string(md[:t.Segment.Start]), "\n")
		}
	}
	return 0
}

// rawCells counts the cells of the 1-based line n as written: pipes not
// escaped, less a leading and a trailing one.
func rawCells(md []byte, n int) int {
	lines := strings.Split(string(md), "\n")
	if n < 1 || n > len(lines) {
		return 0
	}
	l := strings.TrimSpace(strings.ReplaceAll(lines[n-1], `\|`, ""))
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	return strings.Count(l, "|") + 1
}
