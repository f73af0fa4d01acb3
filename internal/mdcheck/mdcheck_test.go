package mdcheck

import (
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	tests := []struct {
		name string
		md   string
		errs []string // substrings, one per error, in order
	}{
		{"good", "# t\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n| 3 \\| x | 4 |\n", nil},
		{"two good tables", "| a |\n|---|\n| 1 |\n\ntext\n\n| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n", nil},
		{"header wider than delimiter", "| a | b | c |\n|---|---|\n| 1 | 2 |\n", []string{"line 2: \"|---|---|\" is a table's delimiter row, but no table renders there (its header has 3 cells, the delimiter row 2)"}},
		{"row wider than header", "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", []string{"line 3: a row of 3 cells under a header of 2"}},
		{"row narrower than header", "| a | b |\n|---|---|\n| 1 |\n", []string{"line 3: a row of 1 cells under a header of 2"}},
		{"in a code block", "```\n| a | b | c |\n|---|---|\n```\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Tables([]byte(tt.md))
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tt.errs), tt.errs)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.errs[i]) {
					t.Errorf("error %q, want %q", e, tt.errs[i])
				}
			}
		})
	}
}
