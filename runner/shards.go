package runner

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/verifier"
)

// Shard makes a run one of Count processes that share one load (run
// --shard I/N). Every shard of the load has the same RunID and Start;
// shard Index sends Rate/Count of the load's rate, with producers
// numbered from Index x Producers (load.Config.ProducerBase), so that no
// two shards' message IDs collide and a read-back tells which shard wrote
// a message. Each shard keeps its own run directory and ledger; only
// shard 0 applies the run's faults, and no shard judges the run alone:
// VerifyShards reads the topic back once and judges every shard's ledger.
type Shard struct {
	Index, Count int
	// RunID is the load's run ID, the same in every shard (JoinStart or
	// RunIDFor).
	RunID uint64
	// Start is when every shard's schedule begins (message 0 is due).
	Start time.Time
	// Late is how long after Start a shard may still begin its schedule.
	// Default 1s. A shard later than that would send every message it
	// missed at once, out of step with the others and the faults.
	Late time.Duration
	// Dir is the shared start directory (--start-dir), where the load's
	// fault timeline is kept (TimelinePath); "" with --start-at.
	Dir string
	// ExternalFaults: a separate `ackcheck faults` process applies the
	// load's faults. No shard applies any, and the merged verdict
	// requires the timeline that process writes in Dir.
	ExternalFaults bool

	// AllPartitions makes the shard write every partition and its live
	// consumer read the whole topic, as every shard did before
	// shardPartitions: for comparing the two (BenchmarkShardCPU).
	AllPartitions bool

	// given: the load was given faults (set by shardLoad).
	given bool
}

// Validate says what cannot work, naming the flag.
func (s Shard) Validate() error {
	switch {
	case s.Count < 1 || s.Count > 1024:
		return fmt.Errorf("--shard %d/%d: N must be 1 to 1024", s.Index, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("--shard %d/%d: I must be 0 to %d", s.Index, s.Count, s.Count-1)
	case s.Start.IsZero():
		return fmt.Errorf("a shard needs its start instant: give --start-at RFC3339 or --start-dir DIR")
	}
	return nil
}

// RunIDFor is the run ID of a sharded load started with --start-at, the
// same in every shard without talking to the others: a hash of the topic,
// the start instant and the shard count. Two loads on one topic that
// start at one instant would share it, and are one load's mistake anyway.
func RunIDFor(topic string, start time.Time, count int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "ackcheck-shards\x00%s\x00%d\x00%d", topic, start.UnixNano(), count)
	return h.Sum64()
}

// StartFile is the start a sharded load's first shard writes in the
// shared --start-dir for the others (JoinStart).
type StartFile struct {
	RunID  string    `json:"run_id"`
	Start  time.Time `json:"start"`
	Shards int       `json:"shards"`
	Topic  string    `json:"topic"`
}

// StartFileName is the start file's name in --start-dir.
const StartFileName = "start.json"

// JoinStart returns the run ID and start instant of a sharded load from
// dir/start.json. The first shard to get there writes it, with a random
// run ID and a start lead after now; the others read it. The file is
// written whole under a temporary name, synced and then hard-linked to its
// name, which fails if it exists: of shards arriving at once exactly one
// writes it, and no shard reads it half-written. A start file for another
// topic or shard count, or whose start has passed by more than late, is
// refused: it is an earlier run's, and joining it would misalign the load.
func JoinStart(dir string, count int, topic string, lead, late time.Duration) (uint64, time.Time, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, time.Time{}, fmt.Errorf("--start-dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, StartFileName)
	var b [8]byte
	rand.Read(b[:])
	want := StartFile{RunID: verifier.RunIDText(binary.BigEndian.Uint64(b[:])), Start: time.Now().Add(lead).UTC().Truncate(time.Millisecond), Shards: count, Topic: topic}
	if err := linkNew(path, want); err != nil && !errors.Is(err, os.ErrExist) {
		return 0, time.Time{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read the shared start %s: %w", path, err)
	}
	var got StartFile
	if err := json.Unmarshal(data, &got); err != nil {
		return 0, time.Time{}, fmt.Errorf("the shared start %s is damaged (%v): remove it, or give each run its own --start-dir", path, err)
	}
	var id uint64
	if _, err := fmt.Sscanf(got.RunID, "%016x", &id); err != nil {
		return 0, time.Time{}, fmt.Errorf("the shared start %s has run ID %q, not one ackcheck wrote: remove it, or give each run its own --start-dir", path, got.RunID)
	}
	switch {
	case got.Shards != count || got.Topic != topic:
		return 0, time.Time{}, fmt.Errorf("the shared start %s is for %d shards on topic %s, and this shard is one of %d on %s: it is another run's; give each run its own --start-dir",
			path, got.Shards, got.Topic, count, topic)
	case time.Since(got.Start) > late:
		return 0, time.Time{}, fmt.Errorf("the shared start %s began at %s, %s ago: it is an earlier run's (or this shard came too late); give each run its own --start-dir",
			path, got.Start.Format(time.RFC3339Nano), time.Since(got.Start).Round(time.Millisecond))
	}
	return id, got.Start, nil
}

// linkNew writes v as JSON to a temporary file beside path, syncs it and
// links it to path; os.ErrExist (wrapped) when path exists.
func linkNew(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".start-*.tmp")
	if err != nil {
		return fmt.Errorf("write the shared start in %s: %w", filepath.Dir(path), err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write the shared start %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync the shared start %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the shared start %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return err
		}
		return fmt.Errorf("publish the shared start %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// shardLoad applies cfg.Shard to the run: its share of the rate, its
// producer range, the shared start, and faults for shard 0 only.
func shardLoad(cfg *Config) error {
	s := cfg.Shard
	if s == nil {
		return nil
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Late <= 0 {
		s.Late = time.Second
	}
	lc := cfg.Load.WithDefaults()
	cfg.Load.Rate = lc.Rate / float64(s.Count)
	cfg.Load.ProducerBase = uint32(s.Index * lc.Producers)
	s.given = s.ExternalFaults || cfg.Faults != nil
	switch {
	case s.ExternalFaults && cfg.Faults != nil:
		return fmt.Errorf("shard %d of %d: --external-faults says a separate `ackcheck faults` process applies the load's faults: give --fault and --fsync to that process, not to the shards", s.Index, s.Count)
	case s.ExternalFaults && s.Dir == "":
		return fmt.Errorf("shard %d of %d: --external-faults needs --start-dir, the directory shared with `ackcheck faults`, where it keeps the fault timeline", s.Index, s.Count)
	case s.Index != 0 && cfg.Faults != nil:
		cfg.logf("shard %d of %d: shard 0 applies the run's faults; this shard records its load only", s.Index, s.Count)
		cfg.Faults = nil
	}
	// A shard does not judge the run alone: its read-back would count
	// the other shards' messages as phantoms.
	cfg.Verify = false
	return nil
}

// shardPartitions gives shard I of N the topic's partitions at places I,
// I+N, I+2N, ... (sorted), when the load is unkeyed and the topic has at
// least N partitions: the shards together still write every partition at
// the load's rate, and each shard's live consumer reads only the
// partitions it writes. Had every shard written every partition, every
// shard's consumer would read the whole topic to find its own messages,
// and the CPU per message would grow with N (BenchmarkShardCPU). A keyed
// load (the key picks the partition) or a topic with fewer partitions
// than shards keeps every partition in every shard.
func shardPartitions(cfg Config, lc *load.Config) {
	s := cfg.Shard
	if s == nil || s.Count == 1 || s.AllPartitions {
		return
	}
	if lc.Keys > 0 || len(lc.Partitions) < s.Count {
		cfg.logf("shard %d of %d: writes every partition (a keyed load, or fewer partitions than shards): its live consumer reads the whole topic", s.Index, s.Count)
		return
	}
	parts := slices.Sorted(slices.Values(lc.Partitions))
	var mine []int32
	starts := drivers.MakeOffsets(lc.StartOffsets.Slots())
	for k, p := range parts {
		if k%s.Count == s.Index {
			mine = append(mine, p)
			if off, ok := lc.StartOffsets.Get(p); ok {
				starts.Set(p, off)
			}
		}
	}
	lc.Partitions, lc.StartOffsets = mine, starts
}

// waitForStart checks that the shared start is not past (by more than
// Late) and returns it; the load's schedule waits for it itself.
func waitForStart(s *Shard) (time.Time, error) {
	if late := time.Since(s.Start); late > s.Late {
		return time.Time{}, fmt.Errorf("shard %d of %d is ready %s after the load's start %s: its schedule would be out of step with the other shards and the faults. "+
			"Give --start-at far enough ahead (or a larger --start-lead) for every shard to connect and prepare first",
			s.Index, s.Count, late.Round(time.Millisecond), s.Start.Format(time.RFC3339Nano))
	}
	return s.Start, nil
}

// ShardSettings is what run.json says of a shard (Index, Count,
// TotalRate), and a merged verdict's run.json (Index -1) of the shards'
// run directories it judged.
type ShardSettings struct {
	Index int      `json:"index"`
	Count int      `json:"count"`
	Dirs  []string `json:"dirs,omitempty"`
	// TotalRate is the load's rate over every shard.
	TotalRate float64 `json:"total_rate,omitempty"`
}

// VerifyShards reads back, once, the topic of a load spread over shards
// (run --shard) and judges it against every shard's ledger, writing one
// result.json, report and list set in out. dirs are the shards' run
// directories. Each shard's ledger is opened read-only and proven whole
// like a run's (openRun); a directory that is missing or whose ledger is
// refused (damaged) is judged as a missing shard: the verdict is then no
// PASS (see verifier.Shard).
func VerifyShards(ctx context.Context, out string, dirs []string, d drivers.Driver, opts verifier.Options, idle time.Duration, progress io.Writer) (*verifier.Result, error) {
	return VerifyShardsTimeline(ctx, out, dirs, "", d, opts, idle, progress)
}

// VerifyShardsTimeline is VerifyShards with the directory holding the
// load's fault timeline (TimelinePath) given: "" takes the shared start
// directory the shards recorded (see mergedTimeline).
func VerifyShardsTimeline(ctx context.Context, out string, dirs []string, timelineDir string, d drivers.Driver, opts verifier.Options, idle time.Duration, progress io.Writer) (*verifier.Result, error) {
	logf := progressf(progress)
	if err := makeMergedOut(out, dirs); err != nil {
		return nil, err
	}
	shards, settings, err := openShardDirs(dirs, logf)
	defer func() {
		for _, s := range shards {
			if s.Ledger != nil {
				s.Ledger.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	run, err := verifier.ShardRun(shards)
	if err != nil {
		return nil, err
	}
	timeline, err := shardsTimeline(timelineDir, run, shards, logf)
	if err != nil {
		return nil, err
	}
	// The merged directory's run.json is rewritten for these shards: a
	// verdict already there (of this load, or of another one whose --out
	// this reuses) no longer rests on what run.json describes.
	if prev, err := ReadSettings(out); err == nil && prev.RunID != verifier.RunIDText(run.RunID) {
		if err := markStale(out); err != nil {
			return nil, err
		}
	}
	if err := writeMergedSettings(out, settings, run, dirs); err != nil {
		return nil, err
	}
	var sent int64 // sizes the read-back's ledger, as for one run
	for _, sh := range shards {
		if sh.Ledger != nil {
			sent += sentCount(sh.Ledger)
		}
	}
	logf("reading back %s once for %d shards ...", run.Topic, run.Shard.Count)
	judge := func(reads *ledger.Ledger, listDir string) (*verifier.Result, error) {
		o := opts
		o.ListDir = listDir
		return verifier.CheckLedgers(ctx, verifier.Ledgers{Reads: reads, Shards: shards, Timeline: timeline}, o)
	}
	res, err := readBackAndJudge(ctx, out, d, run, idle, sent, "ackcheck verify --out "+shellQuote(out)+shardDirArgs(dirs), logf, judge)
	if err != nil {
		return nil, err
	}
	var opened []string // the shards judged: the others have no logs to merge
	for _, sh := range shards {
		if sh.Ledger != nil {
			opened = append(opened, sh.Dir)
		}
	}
	if err := hlogCheck(out, opened, res); err != nil {
		return nil, err
	}
	if err := writeOutputs(out, res, run); err != nil {
		return nil, err
	}
	return res, nil
}

// makeMergedOut makes out, the merged verdict's directory, refusing one
// of the shards' directories and one that holds a run.
func makeMergedOut(out string, dirs []string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("--shard-dir: give the run directory of every shard (a glob such as 'runs/x/shard-*' works)")
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	for _, dir := range dirs {
		if abs(dir) == abs(out) {
			return fmt.Errorf("--out %s is one of the --shard-dir directories: give the merged verdict a directory of its own", out)
		}
	}
	if _, err := os.Stat(LedgerDir(out)); err == nil {
		return fmt.Errorf("--out %s holds a run: give the merged verdict a directory of its own", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create the merged verdict's directory: %w", err)
	}
	return nil
}

// openShardDirs opens each shard directory's ledger read-only (openRun),
// numbered by its ledger or else by its run.json. A directory whose
// ledger is refused is kept with its error, to be judged missing; one
// holding a run of its own is refused. settings are the first opened
// shard's. The caller closes the shards' ledgers, also on error.
func openShardDirs(dirs []string, logf func(string, ...any)) (shards []verifier.Shard, settings *Settings, err error) {
	for _, dir := range dirs {
		sh := verifier.Shard{Index: -1, Dir: dir}
		s, serr := ReadSettings(dir)
		if serr == nil && s.Shard != nil {
			sh.Index = s.Shard.Index
		}
		l, run, err := openRun(dir)
		switch {
		case err != nil:
			sh.Err = err
			logf("shard directory %s: %v", dir, err)
		case run.Shard == nil:
			l.Close()
			return shards, nil, fmt.Errorf("%s holds a run of its own, not a shard (run --shard I/N): verify it alone with `ackcheck verify --out %s`", dir, dir)
		default:
			sh.Ledger, sh.Index = l, run.Shard.Index
			if settings == nil {
				settings = &s
			}
			if !run.Clean {
				logf("note: shard %d's ackcheck did not finish its load; up to the last %s of its ledger may be missing", run.Shard.Index, ledger.Options{}.FlushIntervalOrDefault())
			}
		}
		shards = append(shards, sh)
	}
	return shards, settings, nil
}

// shardsTimeline is the load's fault timeline, merged from timelineDir
// and what each opened shard recorded of the faults (mergedTimeline);
// nil when there is none.
func shardsTimeline(timelineDir string, run ledger.RunInfo, shards []verifier.Shard, logf func(string, ...any)) (*verifier.FaultTimeline, error) {
	var sfs []ShardFaults
	for _, sh := range shards {
		var sf ShardFaults
		if sh.Ledger == nil {
			continue
		}
		if err := sh.Ledger.GetMeta(MetaShardFaults, &sf); err != nil && !errors.Is(err, ledger.ErrNoMeta) {
			return nil, fmt.Errorf("shard directory %s: %w", sh.Dir, err)
		}
		sfs = append(sfs, sf)
	}
	timeline, err := mergedTimeline(timelineDir, verifier.RunIDText(run.RunID), sfs)
	if err != nil {
		return nil, err
	}
	if timeline != nil {
		logf("fault timeline: %d faults from %s", len(timeline.Records), timeline.Source)
		if timeline.Unproven != "" {
			logf("note: %s", timeline.Unproven)
		}
	}
	return timeline, nil
}

// writeMergedSettings writes the merged verdict's run.json: the first
// opened shard's settings, as a merge of run's shards (dirs) at the
// load's total rate.
func writeMergedSettings(out string, settings *Settings, run ledger.RunInfo, dirs []string) error {
	merged := *settings
	merged.Shard = &ShardSettings{Index: -1, Count: run.Shard.Count, Dirs: dirs}
	if settings.Shard != nil {
		merged.Rate = settings.Shard.TotalRate
	}
	merged.CreatedAt = time.Now()
	return writeJSON(filepath.Join(out, "run.json"), merged)
}

func shardDirArgs(dirs []string) string {
	s := ""
	for _, d := range dirs {
		s += " --shard-dir " + shellQuote(d)
	}
	return s
}
