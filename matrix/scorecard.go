package matrix

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
)

// MinRunsForDifference is the fewest runs every column of a row needs
// before the scorecard marks a difference: with fewer, a range says too
// little about the spread.
const MinRunsForDifference = 3

// Column is one column of a scorecard to build: a label and the run
// directories of its repeats, in order.
type Column struct {
	Label string
	Runs  []string
}

// TableSpec is one table to build: one scenario, or the runs compare was
// given.
type TableSpec struct {
	Title   string
	Columns []Column
}

// Card is a scorecard: what scorecard.json holds, and what scorecard.md
// and scorecard.html show.
type Card struct {
	Title  string  `json:"title"`
	Tables []Table `json:"tables"`
}

// Table has one row per measure and one column per system x setting.
type Table struct {
	Title   string   `json:"title"`
	Columns []string `json:"columns"`
	Rows    []Row    `json:"rows"`
	// Notes say why no difference is marked, and what a row leaves out.
	Notes []string `json:"notes,omitempty"`
}

// Row is one measure across the columns.
type Row struct {
	Measure string `json:"measure"`
	Unit    string `json:"unit,omitempty"`
	// Better is "lower", "higher" or "" (not ranked).
	Better string `json:"better,omitempty"`
	Cells  []Cell `json:"cells"`
	// Differences name the pairs of columns whose min..max ranges do not
	// overlap, each with n >= MinRunsForDifference.
	Differences []string `json:"differences,omitempty"`
	// Note says why this row marks no difference, when it is the row's
	// own reason (a column with runs that have no value).
	Note string `json:"note,omitempty"`
}

// Cell is one measure of one column: every run's value and, over the
// runs that have one, n, min, median and max. Median is the lower middle
// value when n is even, so that it is one run's figure and links to it.
type Cell struct {
	N      int      `json:"n"`
	Min    *Point   `json:"min,omitempty"`
	Median *Point   `json:"median,omitempty"`
	Max    *Point   `json:"max,omitempty"`
	Total  *float64 `json:"total,omitempty"`
	// Summary is a text row's count ("3 pass", "3 of 3 hold").
	Summary string  `json:"summary,omitempty"`
	Runs    []Point `json:"runs"`
	// Marked: this column's range does not overlap another's (see
	// Row.Differences).
	Marked bool `json:"marked,omitempty"`
}

// Point is one run's figure. Value is nil when the run has none (no
// fault, not observed, not done); Text then says why.
type Point struct {
	// Run is the run directory relative to the scorecard's directory.
	Run   string   `json:"run"`
	Value *float64 `json:"value,omitempty"`
	Text  string   `json:"text"`
	// Note is a fact beside the figure (the rejoin evidence ackcheck saw).
	Note string `json:"note,omitempty"`
}

// runData is what a run directory holds, as read.
type runData struct {
	dir, rel string
	res      verifier.Result
	settings runner.Settings
	err      error
}

// measure reads one figure from a run's result.json (and run.json for
// the offered rate). It never recomputes what the verifier judged.
type measure struct {
	name, unit, better string
	total              bool
	// text marks a row without numbers (verdicts, kill proofs); summary
	// counts its texts.
	text bool
	get  func(r *runData) Point
}

func num(v float64, text string) Point { return Point{Value: &v, Text: text} }

func ms(v float64) string { return strconv.FormatFloat(v, 'f', msDigits(v), 64) }

// msDigits keeps whole numbers (counts, rounded figures) whole and
// shows two decimals below 10, where they still say something.
func msDigits(v float64) int {
	if v == float64(int64(v)) {
		return 0
	}
	if v < 10 {
		return 2
	}
	return 0
}

// killFault is the run's first kill, the fault the recovery rows are
// about (nil: the run killed nothing).
func killFault(r *verifier.Result) *verifier.FaultReport {
	for i := range r.Faults {
		if r.Faults[i].Action == faults.Kill {
			return &r.Faults[i]
		}
	}
	return nil
}

// ofKill is a row's figure of the run's kill (killFault), of(f); a run
// that killed nothing has "no kill".
func ofKill(of func(f *verifier.FaultReport) Point) func(*runData) Point {
	return func(r *runData) Point {
		f := killFault(&r.res)
		if f == nil {
			return Point{Text: "no kill"}
		}
		return of(f)
	}
}

// msAfterKill is a kill's figure v in ms after the kill (below 0: not
// observed), with the note that goes with it.
func msAfterKill(v float64, note string) Point {
	if v < 0 {
		return Point{Text: "not observed", Note: note}
	}
	p := num(v, ms(v))
	p.Note = note
	return p
}

// KillProofHolds is the kill proof's own facts, all true: the process
// changed, the data dir is the same inode, the other nodes were untouched.
func KillProofHolds(kp *verifier.KillProof) bool {
	return kp != nil && kp.OldPID != 0 && kp.NewPID != 0 && kp.OldPID != kp.NewPID && kp.SameDataDir && kp.SurvivorsUnchanged
}

var measures = []measure{
	{name: "acked messages lost", unit: "messages", better: "lower", total: true, get: func(r *runData) Point {
		return num(float64(r.res.Lost), fmt.Sprintf("%d of %d acked (%s)", r.res.Lost, r.res.Acked, strings.ToUpper(r.res.Verdict)))
	}},
	{name: "verdict", text: true, get: func(r *runData) Point { return Point{Text: r.res.Verdict} }},
	{name: "longest interval with zero acks", unit: "ms", better: "lower", get: func(r *runData) Point {
		return num(r.res.LongestNoAckMs, ms(r.res.LongestNoAckMs))
	}},
	{name: "killed server ready", unit: "ms after the kill", better: "lower", get: ofKill(func(f *verifier.FaultReport) Point {
		return msAfterKill(f.ReadyMs, "")
	})},
	{name: "all replicas in sync", unit: "ms after the kill", better: "lower", get: ofKill(func(f *verifier.FaultReport) Point {
		return msAfterKill(f.InSyncMs, f.InSyncEvidence)
	})},
	{name: "all replicas in sync, by the brokers' logs", unit: "ms after the kill", better: "lower", get: ofKill(func(f *verifier.FaultReport) Point {
		// The run's own cross-check, read from the brokers' logs when the
		// run ended (result.json's oracle_in_sync_ms), never recomputed.
		if f.OracleInSyncMs == nil {
			return Point{Text: "no broker logs read (the run's cluster could not show its logs)"}
		}
		v := *f.OracleInSyncMs
		p := num(v, ms(v))
		if f.Oracle != nil && f.Oracle.InSync != nil {
			p.Note = f.Oracle.Source + ": " + f.Oracle.InSync.What
			if b := f.Oracle.InSync.Bound; b != drivers.Exact {
				// A bound (NATS logs no line when a replica is current)
				// is said as one and not ranked as a figure.
				p = Point{Text: b.Words() + ms(v), Note: p.Note}
			}
		}
		return p
	})},
	{name: "kill proof", text: true, get: ofKill(func(f *verifier.FaultReport) Point {
		switch {
		case f.KillProof == nil:
			return Point{Text: "none recorded"}
		case KillProofHolds(f.KillProof):
			return Point{Text: "holds", Note: f.KillProof.String()}
		}
		return Point{Text: "does not hold", Note: f.KillProof.String()}
	})},
	{name: "publish latency p50", unit: "ms", better: "lower", get: func(r *runData) Point { return latency(r.res.Publish, r.res.Publish.P50) }},
	{name: "publish latency p99", unit: "ms", better: "lower", get: func(r *runData) Point { return latency(r.res.Publish, r.res.Publish.P99) }},
	{name: "end-to-end latency p50", unit: "ms", better: "lower", get: func(r *runData) Point { return latency(r.res.E2E, r.res.E2E.P50) }},
	{name: "end-to-end latency p99", unit: "ms", better: "lower", get: func(r *runData) Point { return latency(r.res.E2E, r.res.E2E.P99) }},
	{name: "achieved rate", unit: "acks/s over the load", better: "higher", get: func(r *runData) Point {
		secs := r.res.LoadEnd.Sub(r.res.LoadStart).Seconds()
		if secs <= 0 {
			return Point{Text: "no load times"}
		}
		v := float64(r.res.Acked) / secs
		return num(v, fmt.Sprintf("%.0f of %.0f offered", v, r.settings.Rate))
	}},
}

func latency(l verifier.Latency, v float64) Point {
	if l.Count == 0 {
		return Point{Text: "not measured"}
	}
	return num(v, ms(v))
}

// Build reads every run's result.json and run.json and lays them out as
// a scorecard whose links are relative to cardDir.
func Build(cardDir, title string, specs []TableSpec) *Card {
	card := &Card{Title: title}
	for _, spec := range specs {
		card.Tables = append(card.Tables, buildTable(cardDir, spec))
	}
	return card
}

func readRun(cardDir, dir string) *runData {
	// Both made absolute: a relative run directory (compare's arguments)
	// and a card directory elsewhere have no relative path otherwise.
	absCard, err1 := filepath.Abs(cardDir)
	absDir, err2 := filepath.Abs(dir)
	rel, err := filepath.Rel(absCard, absDir)
	if err1 != nil || err2 != nil || err != nil {
		rel = absDir
	}
	d := &runData{dir: dir, rel: filepath.ToSlash(rel)}
	if st, v := StateOf(dir); st != Done {
		d.err = fmt.Errorf("not done (%s)", orNone(v))
		return d
	}
	if d.res, d.err = runner.ReadResult(dir); d.err != nil {
		return d
	}
	d.settings, d.err = runner.ReadSettings(dir)
	return d
}

func buildTable(cardDir string, spec TableSpec) Table {
	t := Table{Title: spec.Title}
	runs := make([][]*runData, len(spec.Columns))
	short := []string{}
	for i, c := range spec.Columns {
		t.Columns = append(t.Columns, c.Label)
		done := 0
		for _, dir := range c.Runs {
			d := readRun(cardDir, dir)
			runs[i] = append(runs[i], d)
			if d.err == nil {
				done++
			}
		}
		if done < MinRunsForDifference {
			short = append(short, fmt.Sprintf("%s has n=%d", c.Label, done))
		}
	}
	if len(short) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("No difference is marked in this table: %s, and a difference needs at least %d runs in every column whose min..max ranges do not overlap.",
			strings.Join(short, ", "), MinRunsForDifference))
	}
	if len(spec.Columns) < 2 {
		t.Notes = append(t.Notes, "One column: nothing to compare it with.")
	}
	for _, m := range measures {
		row := Row{Measure: m.name, Unit: m.unit, Better: m.better}
		for _, col := range runs {
			row.Cells = append(row.Cells, buildCell(m, col))
		}
		if m.better != "" && len(short) == 0 {
			markDifferences(&row, t.Columns)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, "Killed server ready and all replicas in sync are ackcheck's own figures (result.json); the rejoin evidence it saw is quoted per run below. "+
		"Beside them, \"by the brokers' logs\" is the brokers' own account, which each run read from its cluster's logs when it ended (result.json's oracle_in_sync_ms; "+
		"for a local Kafka: the controller's unfencing of the killed broker, then the first ISR line of each partition that holds it again).")
	return t
}

func buildCell(m measure, col []*runData) Cell {
	c := Cell{Runs: []Point{}}
	var vals []Point
	counts := map[string]int{}
	done := 0
	for _, d := range col {
		var p Point
		if d.err != nil {
			p = Point{Text: d.err.Error()}
		} else {
			p = m.get(d)
			counts[p.Text]++
			done++
		}
		p.Run = d.rel
		c.Runs = append(c.Runs, p)
		if p.Value != nil {
			vals = append(vals, p)
		}
	}
	if m.text {
		var keys []string
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
		c.Summary = strings.Join(parts, ", ")
		c.N = done
		return c
	}
	c.N = len(vals)
	if c.N == 0 {
		return c
	}
	sort.SliceStable(vals, func(i, j int) bool { return *vals[i].Value < *vals[j].Value })
	lo, mid, hi := vals[0], vals[(c.N-1)/2], vals[c.N-1]
	c.Min, c.Median, c.Max = &lo, &mid, &hi
	if m.total {
		var sum float64
		for _, v := range vals {
			sum += *v.Value
		}
		c.Total = &sum
	}
	return c
}

// markDifferences marks the pairs of columns whose ranges do not overlap,
// when every column has at least MinRunsForDifference values and every run
// of it has a value: a run without one (not observed) could lie anywhere.
func markDifferences(row *Row, labels []string) {
	for i, c := range row.Cells {
		if c.N < MinRunsForDifference || c.N < len(c.Runs) {
			row.Note = fmt.Sprintf("no difference marked: %s has %d runs with a value of %d", labels[i], c.N, len(c.Runs))
			return
		}
	}
	for i := range row.Cells {
		for j := i + 1; j < len(row.Cells); j++ {
			a, b := row.Cells[i], row.Cells[j]
			var lowI, lowJ int
			switch {
			case *a.Max.Value < *b.Min.Value:
				lowI, lowJ = i, j
			case *b.Max.Value < *a.Min.Value:
				lowI, lowJ = j, i
			default:
				continue
			}
			row.Cells[i].Marked, row.Cells[j].Marked = true, true
			lo, hi := row.Cells[lowI], row.Cells[lowJ]
			better := labels[lowI]
			if row.Better == "higher" {
				better = labels[lowJ]
			}
			row.Differences = append(row.Differences, fmt.Sprintf("%s (%s..%s) below %s (%s..%s): %s is better",
				labels[lowI], ms(*lo.Min.Value), ms(*lo.Max.Value), labels[lowJ], ms(*hi.Min.Value), ms(*hi.Max.Value), better))
		}
	}
}
