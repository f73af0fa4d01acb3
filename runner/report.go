package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/verifier"
)

// keysRow is the settings row of --keys and --placement.
func keysRow(s Settings) string {
	switch {
	case s.Keys > 0:
		return fmt.Sprint(s.Keys)
	case s.Placement != "" && s.Placement != load.RoundRobin:
		return "none: " + s.Placement + " over partitions (" + strings.TrimPrefix(s.Placement, "batch:") + " consecutive messages of a producer to one partition)"
	}
	return "none: round-robin over partitions"
}

// settingsRows lists a run's settings for reports, from run.json and the
// ledger's run description.
func settingsRows(s Settings, run ledger.RunInfo) [][2]string {
	rows := [][2]string{
		{"driver", s.Driver},
		{"topic", fmt.Sprintf("%s (%d partitions, replication factor %d)", s.Topic.Name, s.Topic.Partitions, s.Topic.ReplicationFactor)},
		{"rate", fmt.Sprintf("%.0f msg/s for %s, %d producers", s.Rate, humanDuration(s.Duration), s.Producers)},
		{"message size", drivers.HumanBytes(int64(s.MessageSize))},
		{"keys", keysRow(s)},
		{"max in flight", fmt.Sprint(s.MaxInFlight)},
	}
	rows = append(rows, s.DriverRows...)
	if len(s.DriverRows) == 0 {
		// A run.json from before drivers listed their own rows: its
		// settings as they were saved.
		rows = append(rows, savedRows(s.DriverSettings)...)
	}
	if len(run.BrokerVersions) > 0 {
		var ids []int
		for id := range run.BrokerVersions {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		var vs []string
		for _, id := range ids {
			vs = append(vs, fmt.Sprintf("node %d: %s", id, run.BrokerVersions[int32(id)]))
		}
		rows = append(rows, [2]string{"broker versions (as the brokers report them)", strings.Join(vs, ", ")})
	}
	if run.AckMeaning != "" {
		rows = append(rows, [2]string{"an ack meant at the start", run.AckMeaning})
	}
	if s.Faults != nil {
		where := s.Faults.ClusterDir
		if where == "" {
			where = s.Faults.ClusterFile
		}
		rows = append(rows, [2]string{"faults acted on", where})
	}
	return rows
}

// writeOutputs writes the reports of a judged run, then result.json, the
// file tools read as the verdict, last; then it removes the last
// verdict's stale files. Each is written whole or not at all.
func writeOutputs(out string, res *verifier.Result, run ledger.RunInfo) error {
	s, err := ReadSettings(out)
	if err != nil {
		return err
	}
	if err := report.Write(out, report.Input{Result: res, Settings: settingsRows(s, run)}); err != nil {
		return err
	}
	if err := writeJSON(out+"/result.json", res); err != nil {
		return err
	}
	clearStale(out)
	return nil
}

// StaleSuffix ends the name of a verdict's file that no longer rests on
// the evidence beside it (markStale).
const StaleSuffix = ".stale"

// verdictFiles are what a verdict writes into a run directory beside the
// evidence (ledger/, reads/) it was judged from.
func verdictFiles() []string {
	return append([]string{"result.json", verifier.LostFile, verifier.DuplicatesFile, verifier.ReorderedFile, verifier.PartitionsFile}, report.Files...)
}

// markStale renames each file of the last verdict to NAME.stale before
// the evidence it rests on changes (a new read-back replaces reads/, a
// re-judge rewrites the lists) or once that evidence is found damaged. A
// verify or report killed or refused after it leaves no file stating a
// verdict the evidence beside it does not give; matrix and compare find
// no result.json and count the run as not done.
func markStale(out string) error {
	for _, f := range verdictFiles() {
		p := filepath.Join(out, f)
		if err := os.Rename(p, p+StaleSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mark the last verdict's %s stale before its evidence changes: %w", f, err)
		}
	}
	if d, err := os.Open(out); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// clearStale removes the stale files a new verdict, now written whole,
// replaces.
func clearStale(out string) {
	for _, f := range verdictFiles() {
		os.Remove(filepath.Join(out, f+StaleSuffix))
	}
}

// staleAfter marks the last verdict stale because its evidence is
// damaged (err), and says so in the error.
func staleAfter(out string, err error) error {
	if _, serr := os.Stat(filepath.Join(out, "result.json")); serr != nil {
		return err
	}
	if merr := markStale(out); merr != nil {
		return fmt.Errorf("%w; and the last verdict could not be marked stale: %v", err, merr)
	}
	return fmt.Errorf("%w; the last verdict's files (result.json, the reports, the lists) rest on that evidence and were renamed *%s", err, StaleSuffix)
}

// ReadResult loads the result.json that a run, verify or report left in a
// run directory.
func ReadResult(out string) (verifier.Result, error) {
	var r verifier.Result
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		return r, fmt.Errorf("%s has no result.json (run or verify it first): %w", out, err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s/result.json is damaged (verify the run again to rewrite it): %w", out, err)
	}
	return r, nil
}

// Report judges a run directory again from its ledger alone (the last
// read-back is in it: no broker is needed) and rewrites result.json and
// the reports.
func Report(ctx context.Context, out string, opts verifier.Options) (*verifier.Result, error) {
	l, run, err := openSingleRun(out)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	reads, err := openReads(out)
	if errors.Is(err, ledger.ErrDamaged) {
		return nil, staleAfter(out, err)
	}
	if err != nil {
		return nil, err
	}
	if reads != nil {
		defer reads.Close()
	}
	if err := verifier.ReadsOfRun(l, reads); err != nil {
		return nil, err
	}
	// The lists are rewritten as the verdict is judged: the last
	// verdict's files go stale first.
	if err := markStale(out); err != nil {
		return nil, err
	}
	opts.ListDir = out // lost.jsonl, duplicates.jsonl, reordered.jsonl beside result.json
	res, err := verifier.CheckLedgers(ctx, verifier.Ledgers{Run: l, Reads: reads}, opts)
	if err != nil {
		return nil, err
	}
	settle(out, res, func(string, ...any) {})
	return res, writeOutputs(out, res, run)
}

// durationKey names the saved settings that are durations.
var durationKey = regexp.MustCompile(`(?i)(timeout|linger|delay|interval|duration)$`)

// savedRows lists a driver's saved settings as they are, key by key, in
// key order; set values only, numbers without exponents.
func savedRows(saved json.RawMessage) [][2]string {
	var ds map[string]any
	if json.Unmarshal(saved, &ds) != nil {
		return nil
	}
	keys := make([]string, 0, len(ds))
	for k := range ds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows [][2]string
	for _, k := range keys {
		switch v := ds[k].(type) {
		case nil, bool:
			if v == true {
				rows = append(rows, [2]string{k, "on"})
			}
		case string:
			if v != "" {
				rows = append(rows, [2]string{k, v})
			}
		case float64:
			if durationKey.MatchString(k) {
				// Go's time.Duration, saved in nanoseconds.
				rows = append(rows, [2]string{k, drivers.HumanDuration(time.Duration(v))})
				continue
			}
			rows = append(rows, [2]string{k, strconv.FormatFloat(v, 'f', -1, 64)})
		default:
			if b, err := json.Marshal(v); err == nil {
				rows = append(rows, [2]string{k, string(b)})
			}
		}
	}
	return rows
}

// humanDuration writes a saved duration (Go's 1m0s) as people write it.
func humanDuration(saved string) string {
	if d, err := time.ParseDuration(saved); err == nil {
		return drivers.HumanDuration(d)
	}
	return saved
}
