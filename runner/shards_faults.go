package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/verifier"
)

// A sharded load has one fault schedule, applied by exactly one process:
// shard 0 (given --fault), or a separate `ackcheck faults` process. The
// applier keeps the timeline, the same records a run's result.json
// reports, in the shared start directory (TimelineFileName), rewritten
// whole at every change: written under a temporary name, synced, renamed
// into place and the directory synced, so that a reader never sees it
// half-written and a crash keeps the last whole version. It is created
// exclusively (linkNew): a second applier of the same load is refused.
//
// Every shard copies the timeline, as it stands when its load ends, into
// its own ledger (MetaShardFaults), with whether the load was given
// faults at all. The merged verify takes the applier's final timeline
// and judges every per-fault figure against all shards' acks; a timeline
// that is missing while faults were given, or that the applier did not
// finish, gives no PASS (unproven), never "no faults".

// TimelineFileName is the fault timeline's name in the shared start
// directory.
const TimelineFileName = "faults.json"

// TimelinePath is the fault timeline's path in the shared directory dir.
func TimelinePath(dir string) string { return filepath.Join(dir, TimelineFileName) }

// Timeline is a sharded load's fault timeline as its applier wrote it.
type Timeline struct {
	RunID  string `json:"run_id"`
	Topic  string `json:"topic"`
	Shards int    `json:"shards"`
	// Applier is who applies the faults: "shard 0" or "ackcheck faults".
	Applier string `json:"applier"`
	// Schedule is the steps asked for, as text, and Planned the same
	// steps as the merged verdict holds the records to (nil in timelines
	// written before it was kept).
	Schedule []string              `json:"schedule"`
	Planned  []ledger.PlannedFault `json:"planned,omitempty"`
	// Done: the applier finished: every step fired, recovery was
	// measured (or its timeout passed) and the cluster was healed. A
	// timeline not done may lack faults or their figures.
	Done bool `json:"done"`
	// Error is why the applier stopped, if it failed.
	Error   string          `json:"error,omitempty"`
	Updated time.Time       `json:"updated"`
	Records []faults.Record `json:"records"`
}

// ReadTimeline reads the fault timeline in the shared directory dir; the
// error wraps os.ErrNotExist when there is none.
func ReadTimeline(dir string) (Timeline, error) {
	var t Timeline
	data, err := os.ReadFile(TimelinePath(dir))
	if err != nil {
		return t, fmt.Errorf("read the fault timeline: %w", err)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("the fault timeline %s is damaged (%v): no per-fault figures can be given from it", TimelinePath(dir), err)
	}
	return t, nil
}

// timelineWriter keeps a sharded load's fault timeline file current.
type timelineWriter struct {
	mu   sync.Mutex
	path string
	t    Timeline
	inj  *faults.Injector
	logf func(format string, args ...any)
}

// newTimelineWriter creates the timeline file in dir, exclusively: it
// fails when dir already holds one (another applier of the same load,
// or an earlier run's), saying so.
func newTimelineWriter(dir string, t Timeline, logf func(string, ...any)) (*timelineWriter, error) {
	t.Updated = time.Now()
	if t.Records == nil {
		t.Records = []faults.Record{}
	}
	path := TimelinePath(dir)
	if err := linkNew(path, t); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists: another process already applies this load's faults (exactly one may: shard 0 given --fault, or one `ackcheck faults`), or it is an earlier run's; give each run its own --start-dir", path)
		}
		return nil, err
	}
	return &timelineWriter{path: path, t: t, logf: logf}, nil
}

// changed rewrites the file with the injector's records now. It reads
// them under its own lock, so that of two changes written concurrently
// the last write holds both.
func (w *timelineWriter) changed() { w.write(false, "") }

// write rewrites the timeline; done marks it finished.
func (w *timelineWriter) write(done bool, errText string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inj != nil {
		w.t.Records = w.inj.Records()
	}
	w.t.Done = w.t.Done || done
	if errText != "" {
		w.t.Error = errText
	}
	w.t.Updated = time.Now()
	err := writeJSON(w.path, w.t)
	if err == nil {
		err = syncDir(filepath.Dir(w.path))
	}
	if err != nil && w.logf != nil {
		w.logf("warning: could not write the shared fault timeline: %v", err)
	}
	return err
}

// hook is startFaults' hook for the applier's injector.
func (w *timelineWriter) hook(inj *faults.Injector) {
	w.mu.Lock()
	w.inj = inj
	w.mu.Unlock()
	w.changed()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MetaShardFaults is the ledger metadata name of a shard's ShardFaults.
const MetaShardFaults = "shard_faults"

// ShardFaults is what a shard's ledger says of its load's faults.
type ShardFaults struct {
	// Given: the load was given faults (this shard's --fault, or
	// --external-faults): a merged verdict without their timeline is
	// unproven.
	Given bool `json:"given"`
	// Dir is the shared directory holding the timeline ("" with
	// --start-at: shard 0's ledger holds the faults it applied).
	Dir string `json:"dir,omitempty"`
	// Applier: this shard applied the faults.
	Applier bool `json:"applier,omitempty"`
	// Timeline is the shared timeline as it stood when this shard's load
	// ended; nil when there was none then.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// recordShardFaults copies the shared fault timeline into the shard's
// ledger at the end of its load.
func recordShardFaults(cfg Config, l *ledger.Ledger, given, applier bool) error {
	s := cfg.Shard
	sf := ShardFaults{Given: given, Dir: s.Dir, Applier: applier}
	if s.Dir != "" {
		t, err := ReadTimeline(s.Dir)
		switch {
		case err == nil:
			sf.Timeline = &t
		case errors.Is(err, os.ErrNotExist):
			if given {
				cfg.logf("warning: shard %d of %d: the load was given faults and %s does not exist (yet): the merged verify will look for it again", s.Index, s.Count, TimelinePath(s.Dir))
			}
		default:
			cfg.logf("warning: shard %d of %d: %v", s.Index, s.Count, err)
		}
	}
	return l.PutMeta(MetaShardFaults, sf)
}

// FaultsConfig is a separate fault applier of a sharded load (`ackcheck
// faults`): it applies the load's fault schedule from the shards' shared
// start and writes the timeline every shard and the merged verify read.
type FaultsConfig struct {
	// Out is the applier's own directory: run.json and heal.jsonl, for
	// `ackcheck heal --out` after a crash of this process.
	Out string
	// StartDir is the shared directory (start.json, the timeline).
	StartDir string
	Driver   drivers.Driver
	// DriverSettings is recorded in Out/run.json, for heal.
	DriverSettings any
	Topic          string
	Shards         int
	RunID          uint64
	Start          time.Time
	// Duration is the load's: deaths are watched until Start+Duration.
	Duration time.Duration
	Faults   *FaultPlan
	Progress io.Writer
}

// CheckFaultsToApply refuses the fault process of a sharded load
// (ackcheck faults) that has nothing to apply, or a step that fires after
// the load ends (faults.CheckSchedule, as every command checks it). The
// command checks before it sets the shards' start; ApplyFaults again.
func CheckFaultsToApply(steps []faults.Step, fsync bool, load time.Duration) error {
	if len(steps) == 0 && !fsync {
		return fmt.Errorf("no faults to apply: give --fault (or --fsync)")
	}
	return faults.CheckSchedule(steps, load)
}

// ApplyFaults applies a sharded load's faults as a process of its own:
// it creates the shared timeline (refusing a second applier), applies
// --fsync, fires each step at Start+At, watches for nodes that die
// unasked until the load ends, measures recovery (bounded by the plan's
// RecoveryTimeout), reads the brokers' own account, heals, and marks the
// timeline done. A failure marks the timeline with its error, never done.
func ApplyFaults(ctx context.Context, fc FaultsConfig) (*Timeline, error) {
	cfg := Config{Out: fc.Out, Driver: fc.Driver, Faults: fc.Faults, Progress: fc.Progress}
	var steps []faults.Step
	if fc.Faults != nil {
		steps = fc.Faults.Steps
	}
	if err := CheckFaultsToApply(steps, fc.Faults != nil && fc.Faults.Fsync != nil, fc.Duration); err != nil {
		return nil, err
	}
	switch {
	case fc.StartDir == "" || fc.Out == "":
		return nil, fmt.Errorf("ackcheck faults needs --start-dir (shared with the shards) and --out (its own directory)")
	case fc.Shards < 1 || fc.Start.IsZero():
		return nil, fmt.Errorf("ackcheck faults needs the shards' count and start")
	}
	if err := os.MkdirAll(fc.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create --out %s: %w", fc.Out, err)
	}
	ds, err := json.Marshal(fc.DriverSettings)
	if err != nil {
		return nil, fmt.Errorf("record driver settings: %w", err)
	}
	src := fc.Faults.Source
	if err := writeJSON(filepath.Join(fc.Out, "run.json"), Settings{RunID: verifier.RunIDText(fc.RunID), Driver: fc.Driver.Name(), DriverSettings: ds,
		Topic: drivers.TopicSpec{Name: fc.Topic}, Duration: fc.Duration.String(), CreatedAt: time.Now(), Faults: &src}); err != nil {
		return nil, err
	}
	var sched []string
	for _, st := range fc.Faults.Steps {
		sched = append(sched, st.String())
	}
	tw, err := newTimelineWriter(fc.StartDir, Timeline{RunID: verifier.RunIDText(fc.RunID), Topic: fc.Topic, Shards: fc.Shards,
		Applier: "ackcheck faults", Schedule: sched, Planned: plannedFaults(fc.Faults.Steps)}, cfg.logf)
	if err != nil {
		return nil, err
	}
	// The shards make the topic; a topic setting (--fsync) can only be
	// applied, and targets such as leaders found, once it exists.
	if err := waitForTopic(ctx, fc.Driver, fc.Topic, fc.Start); err != nil {
		if fc.Faults.Fsync != nil {
			tw.write(false, err.Error())
			return nil, err
		}
		cfg.logf("warning: %v; the faults fire on schedule all the same", err)
	}
	inj, closeJournal, err := startFaults(ctx, cfg, fc.Topic, nil, &ledger.RunInfo{}, tw.hook)
	if err != nil {
		tw.write(false, err.Error())
		return nil, err
	}
	defer closeJournal()
	cfg.logf("faults of run %s: %d steps from %s; timeline %s", verifier.RunIDText(fc.RunID), len(fc.Faults.Steps), fc.Start.Format(time.RFC3339Nano), tw.path)
	// The fault goroutines, and the recovery watches they start, live
	// until finishFaults has waited for recovery, as in a run: cut at the
	// load's end, they would leave the last faults without figures.
	faultCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); inj.Run(faultCtx, fc.Start, fc.Faults.Steps) }()
	go func() { defer wg.Done(); inj.WatchDeaths(faultCtx) }()
	end := time.NewTimer(time.Until(fc.Start.Add(fc.Duration)))
	select {
	case <-end.C:
	case <-ctx.Done():
	}
	end.Stop()
	err = finishFaults(ctx, cfg, inj, stop, &wg)
	if ctx.Err() == nil {
		inj.ReadOracle(ctx, fc.Topic, time.Now())
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted; the faults were healed, the timeline %s is not done (the merged verdict is unproven): %w", tw.path, ctx.Err())
	}
	if err != nil {
		tw.write(false, err.Error())
		return &tw.t, err
	}
	if err := tw.write(true, ""); err != nil {
		return &tw.t, err
	}
	t := tw.t
	return &t, nil
}

// mergedTimeline decides the fault timeline of a merged verdict from the
// shared timeline file (in dir, "" when none is known) and what each
// shard's ledger recorded (sfs, in shard order; missing shards left
// out). It returns nil when the shards' own ledgers hold the faults (shard
// 0 applying under --start-at) or the load had none. Shard copies that
// disagree with the timeline file are refused: one of them is not this
// load's.
func mergedTimeline(dir string, runID string, sfs []ShardFaults) (*verifier.FaultTimeline, error) {
	given := false
	var copyOf *Timeline
	for _, sf := range sfs {
		given = given || sf.Given
		if dir == "" {
			dir = sf.Dir
		}
		if t := sf.Timeline; t != nil && (copyOf == nil || len(t.Records) > len(copyOf.Records) || t.Done) {
			copyOf = t
		}
	}
	var file *Timeline
	if dir != "" {
		t, err := ReadTimeline(dir)
		switch {
		case err == nil:
			file = &t
		case errors.Is(err, os.ErrNotExist):
		default:
			return &verifier.FaultTimeline{Source: TimelinePath(dir), Unproven: err.Error()}, nil
		}
	}
	if file != nil {
		if file.RunID != runID {
			return nil, fmt.Errorf("the fault timeline %s is run %s's, and the shards are run %s's: give each run its own --start-dir, or --fault-timeline the right one",
				TimelinePath(dir), file.RunID, runID)
		}
		for i, sf := range sfs {
			if sf.Timeline == nil {
				continue
			}
			if err := samePrefix(sf.Timeline.Records, file.Records); err != nil {
				return nil, fmt.Errorf("shard %d's copy of the fault timeline and %s disagree (%v): they are not one load's", i, TimelinePath(dir), err)
			}
		}
		ft := &verifier.FaultTimeline{Records: file.Records, Planned: file.Planned, Source: TimelinePath(dir) + " (" + file.Applier + ")"}
		if !file.Done {
			why := "the fault applier (" + file.Applier + ") did not finish"
			if file.Error != "" {
				why += ": " + file.Error
			}
			ft.Unproven = fmt.Sprintf("the fault timeline %s is not done (%s): it may lack faults or their recovery figures", TimelinePath(dir), why)
		}
		return ft, nil
	}
	if copyOf != nil {
		ft := &verifier.FaultTimeline{Records: copyOf.Records, Source: "the shards' copies of the fault timeline"}
		if !copyOf.Done {
			ft.Unproven = fmt.Sprintf("the fault timeline %s is gone and the shards' copies were taken before its applier (%s) finished: they may lack faults or their recovery figures",
				TimelinePath(dir), copyOf.Applier)
		}
		return ft, nil
	}
	for _, sf := range sfs {
		if sf.Applier {
			return nil, nil // its ledger holds the faults it applied
		}
	}
	if given {
		where := "no shared --start-dir is known"
		if dir != "" {
			where = TimelinePath(dir) + " does not exist"
		}
		return &verifier.FaultTimeline{Source: "none", Unproven: fmt.Sprintf("the load was given faults, and their timeline was not found (%s): "+
			"which faults ran is unknown; give --fault-timeline DIR (the directory holding %s), or rerun", where, TimelineFileName)}, nil
	}
	return nil, nil
}

// samePrefix checks that a shard's earlier copy of the records agrees
// with the final ones on what it holds.
func samePrefix(early, final []faults.Record) error {
	if len(early) > len(final) {
		return fmt.Errorf("the copy holds %d faults, the timeline %d", len(early), len(final))
	}
	for i, r := range early {
		f := final[i]
		if r.Seq != f.Seq || r.Action != f.Action || r.Target != f.Target || !r.At.Equal(f.At) {
			return fmt.Errorf("fault %d: %s %s at %s in the copy, %s %s at %s in the timeline", i, r.Action, r.Target, r.At.Format(time.RFC3339Nano), f.Action, f.Target, f.At.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// startTimeline creates the shared fault timeline when this run is the
// shard that applies a sharded load's faults and the shards share a
// directory; nil otherwise.
func startTimeline(cfg Config, runID uint64, topic string) (*timelineWriter, error) {
	s := cfg.Shard
	if s == nil || cfg.Faults == nil || s.Dir == "" {
		return nil, nil
	}
	var sched []string
	for _, st := range cfg.Faults.Steps {
		sched = append(sched, st.String())
	}
	return newTimelineWriter(s.Dir, Timeline{RunID: verifier.RunIDText(runID), Topic: topic, Shards: s.Count,
		Applier: fmt.Sprintf("shard %d", s.Index), Schedule: sched, Planned: plannedFaults(cfg.Faults.Steps)}, cfg.logf)
}

// endTimeline, at the end of a shard's load (its faults healed), marks
// the timeline done when this shard applied the faults, and copies the
// shared timeline into the shard's ledger (recordShardFaults).
func endTimeline(ctx context.Context, cfg Config, l *ledger.Ledger, tw *timelineWriter, loadErr error) error {
	if cfg.Shard == nil {
		return nil
	}
	if tw != nil {
		switch {
		case loadErr != nil:
			tw.write(false, loadErr.Error())
		case ctx.Err() != nil:
			tw.write(false, "interrupted: "+ctx.Err().Error())
		default:
			if err := tw.write(true, ""); err != nil {
				return err
			}
		}
	}
	return recordShardFaults(cfg, l, cfg.Shard.given, cfg.Faults != nil)
}

// waitForTopic waits, polling, until topic exists or until is reached.
func waitForTopic(ctx context.Context, d drivers.Driver, topic string, until time.Time) error {
	for {
		_, err := d.EndOffsets(ctx, topic)
		if err == nil {
			return nil
		}
		if time.Now().After(until) {
			return fmt.Errorf("topic %s did not exist by the load's start (%v): are the shards running with --topic %s?", topic, err, topic)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
