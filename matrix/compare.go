package matrix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// FileCopy is the name of the matrix file's copy in a matrix's
// directory: a matrix started again must be the same matrix.
const FileCopy = "matrix.yaml"

// Card lays out the matrix's runs under out: one table per scenario, one
// column per system x setting, each column's repeats in order.
func (f *File) Card(out string) *Card {
	var specs []TableSpec
	runs := f.Runs()
	for si := range f.Scenarios {
		sc := &f.Scenarios[si]
		spec := TableSpec{Title: "scenario " + sc.Name}
		cols := map[string]int{}
		for _, r := range runs {
			if r.Scenario != sc {
				continue
			}
			i, ok := cols[r.Column()]
			if !ok {
				i = len(spec.Columns)
				cols[r.Column()] = i
				spec.Columns = append(spec.Columns, Column{Label: r.Column()})
			}
			spec.Columns[i].Runs = append(spec.Columns[i].Runs, filepath.Join(out, r.Rel()))
		}
		specs = append(specs, spec)
	}
	return Build(out, "ackcheck matrix scorecard: "+filepath.Base(f.Path), specs)
}

// isRun says whether dir is a run directory (it has run.json).
func isRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "run.json"))
	return err == nil
}

// CompareColumns turns the arguments of `ackcheck compare` into columns:
// a run directory is a column of one run; a matrix cell
// (DIR/<system>/<setting>/<scenario>) is a column of its repeats 1, 2, ...
// (directories moved aside, <i>.partial-..., are left out).
func CompareColumns(args []string) ([]Column, error) {
	var cols []Column
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", a, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("compare %s: not a directory: give run directories (an --out of ackcheck run) or matrix cells (DIR/<system>/<setting>/<scenario>)", a)
		}
		if isRun(a) {
			cols = append(cols, Column{Label: filepath.Clean(a), Runs: []string{a}})
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", a, err)
		}
		var idx []int
		for _, e := range entries {
			if i, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && i > 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			hint := ""
			if _, err := os.Stat(filepath.Join(a, FileCopy)); err == nil {
				hint = fmt.Sprintf(" (it is a matrix directory: its scorecard is %s; compare its cells, %s/<system>/<setting>/<scenario>)", filepath.Join(a, CardMarkdown), a)
			}
			return nil, errors.New("compare " + a + ": neither a run directory (no run.json) nor a matrix cell (no run directories 1, 2, ...)" + hint)
		}
		sort.Ints(idx)
		c := Column{Label: filepath.Clean(a)}
		for _, i := range idx {
			c.Runs = append(c.Runs, filepath.Join(a, strconv.Itoa(i)))
		}
		cols = append(cols, c)
	}
	return cols, nil
}
