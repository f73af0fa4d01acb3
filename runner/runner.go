// Package runner runs one ackcheck check end to end: prepare the topic,
// run the paced load beside the ledger, read everything back, judge, and
// write the run directory:
//
//	<out>/run.json     the settings, written before the load
//	<out>/ledger/      the Pebble ledger (see package ledger)
//	<out>/result.json  the verdict (see verifier.Result)
//
// Verify repeats the read-back and the verdict on an existing run
// directory, for a run whose ackcheck died or whose brokers were down.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/remote"
	"github.com/ackcheck/ackcheck/verifier"
)

// Settings is what run.json holds: enough to reconnect and verify later.
// It never holds secrets (passwords, keys).
type Settings struct {
	RunID          string          `json:"run_id"`
	Driver         string          `json:"driver"`
	DriverSettings json.RawMessage `json:"driver_settings"`
	// DriverRows are the driver's settings as the reports show them
	// (drivers.SettingsDescriber); absent in run.json of older runs.
	DriverRows  [][2]string       `json:"driver_rows,omitempty"`
	Topic       drivers.TopicSpec `json:"topic"`
	Rate        float64           `json:"rate"`
	Duration    string            `json:"duration"`
	Producers   int               `json:"producers"`
	MessageSize int               `json:"message_size"`
	Keys        int               `json:"keys"`
	// Placement is --placement ("round-robin" or "batch:N"); absent in
	// run.json of runs from before it, which were round-robin.
	Placement   string       `json:"placement,omitempty"`
	MaxInFlight int          `json:"max_in_flight"`
	CreatedAt   time.Time    `json:"created_at"`
	Faults      *FaultSource `json:"faults,omitempty"`
	// Checks are the checks the run's verdict was judged by; verify and
	// report judge by them again unless a check flag is given (see
	// verifier.Rejudge). Nil in run.json of runs from before they were
	// saved: their checks are unknown.
	Checks *verifier.Checks `json:"checks,omitempty"`
	// Shard is set for one shard of a load spread over processes (run
	// --shard), and for a merged verdict of such a load (Index -1).
	Shard *ShardSettings `json:"shard,omitempty"`
}

// Config is one run.
type Config struct {
	Out    string
	Driver drivers.Driver
	// DriverSettings is recorded in run.json (secrets removed by the caller).
	DriverSettings any
	Topic          drivers.TopicSpec
	Load           load.Config // RunID, Topic, Partitions and StartOffsets are filled in
	// Verify reads back and judges after the load (--no-verify clears it).
	Verify bool
	Check  verifier.Options
	// ReadIdleTimeout gives up a read-back that makes no progress.
	ReadIdleTimeout time.Duration
	// Progress receives progress lines; nil is silent.
	Progress io.Writer
	// ProgressEvery is the interval of progress lines. Default 10s.
	ProgressEvery time.Duration
	// Abort, when closed (a second Ctrl-C), stops waiting for outstanding
	// outcomes at once: they are recorded Unknown, faults are healed, and
	// the run ends.
	Abort <-chan struct{}
	// Observer, if set, watches the load as it runs (live metrics).
	Observer Observer
	// Live rewrites the progress line in place (a terminal); other lines
	// are printed above it. Otherwise every progress line is its own.
	Live bool
	// Ledger tunes the ledger (tests).
	Ledger ledger.Options
	// Faults, if set, are injected during the load.
	Faults *FaultPlan
	// Shard, if set, makes the run one shard of a load spread over
	// processes (see Shard): Load.Rate is then the whole load's rate.
	Shard *Shard
	// Group, if set, runs a consumer group beside the load (run --group):
	// its deliveries and acknowledged commits go into the ledger and the
	// verdict judges them (skipped, commit lost, redelivered).
	Group *load.GroupConfig
}

// FaultPlan is the faults of a run and the cluster they act on.
type FaultPlan struct {
	// Nodes is the cluster the faults act on (nil: topic-level settings
	// only, such as --fsync).
	Nodes faults.Nodes
	Steps []faults.Step
	// RecoveryTimeout bounds how long after the load the run keeps
	// measuring recovery (node ready, replicas in sync). Default 120s.
	RecoveryTimeout time.Duration
	// Expect is the broker profile's expectation of an action, quoted in
	// reports; nil or "" uses the generic one.
	Expect func(faults.Action) string
	// ConfigFsync is the broker profile's edit of a server configuration
	// file that switches fsync (fsync-on/off brokers); nil: none.
	ConfigFsync *drivers.ConfigEdit
	// DataFiles are the broker profile's data-file globs, for file faults
	// written without one (drivers.DataFiler).
	DataFiles []string
	// Seed makes file faults repeatable (faults.Injector.Seed); 0: from
	// the clock, recorded in each file fault's record.
	Seed int64
	// Fsync, if set, switches the topic's fsync-before-ack on or off
	// before the load; it is put back after the run like any fault.
	Fsync *bool
	// Source says how to reach the cluster again (ackcheck heal).
	Source FaultSource
	// Notes are stated in the run's report (e.g. accepted host keys).
	Notes []string
}

// FaultSource records, in run.json, where a run's faults acted, so that
// `ackcheck heal` can reach the same cluster.
type FaultSource struct {
	ClusterDir  string `json:"cluster_dir,omitempty"`
	ClusterFile string `json:"cluster_file,omitempty"`
	// Broker is the driver the cluster runs (drivers.Profile.Name).
	Broker string `json:"broker,omitempty"`
}

// JournalPath is a run directory's heal journal.
func JournalPath(out string) string { return filepath.Join(out, "heal.jsonl") }

// LedgerDir is where a run directory keeps its ledger: what the load
// recorded, written once by the run and only read after it.
func LedgerDir(out string) string { return filepath.Join(out, "ledger") }

// ReadsDir is where a run directory keeps the ledger of its last
// read-back, replaced by each verify. Run directories from before it kept
// their reads in the run's ledger.
func ReadsDir(out string) string { return filepath.Join(out, "reads") }

// clearLine returns to the start of the terminal line and clears it.
const clearLine = "\r\033[K"

func (c *Config) logf(format string, args ...any) {
	if c.Progress == nil {
		return
	}
	if c.Live {
		format = clearLine + format
	}
	fmt.Fprintf(c.Progress, format+"\n", args...)
}

// outcomeGrace is how long after the driver's own send deadline ackcheck
// gives a send the outcome Unknown itself.
const outcomeGrace = 2 * time.Second

// ledgerBytesPerMessage is what the ledger needs per message at most: about
// 40 bytes measured (send, outcome, read and live read, packed), twice that
// while Pebble compacts.
const ledgerBytesPerMessage = 80

// Run performs the run. It returns the verdict (nil with --no-verify).
func Run(ctx context.Context, cfg Config) (res *verifier.Result, err error) {
	totalRate := cfg.Load.Rate
	if err := shardLoad(&cfg); err != nil {
		return nil, err
	}
	// defaults is the load as asked, before prepareLoad knows the topic.
	defaults := cfg.Load.WithDefaults()
	defer func() {
		if errors.Is(err, ledger.ErrDiskFull) {
			l := defaults
			err = fmt.Errorf("%w; the load stopped there. A run of %.0f msg/s for %s needs about %.0f MiB free for its ledger "+
				"(up to %d bytes a message): free space or give --out on a larger disk", err, l.Rate, l.Duration, float64(diskNeed(l))/(1<<20), ledgerBytesPerMessage)
		}
	}()
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 10 * time.Second
	}
	// The load's settings are checked again here, for callers other than
	// the command line, before anything exists; prepareLoad checks them
	// whole once the topic's partitions are known.
	if err := cfg.Load.CheckSettings(nil); err != nil {
		return nil, err
	}
	release, err := claimOut(cfg.Out, diskNeed(defaults))
	if err != nil {
		return nil, err
	}
	// Until the ledger holds the run, a failure undoes the claim: no
	// directory is left that a rerun calls a run and verify does not.
	claimed := false
	defer func() {
		if !claimed {
			release()
		}
	}()
	runID := newRunID(cfg)
	info, lc, startOffsets, err := prepareRun(ctx, cfg, defaults, runID, totalRate)
	if err != nil {
		return nil, err
	}
	l, run, err := openRunLedger(cfg, defaults, runID, info.Name, lc, startOffsets)
	if err != nil {
		return nil, err
	}
	closeLedger := sync.OnceValue(l.Close)
	defer closeLedger()
	claimed = true // the ledger holds the run: the directory is the run's
	cfg.logf("run %016x: %.0f msg/s for %s, %s messages, %d producers -> %s", runID, lc.Rate, drivers.HumanDuration(lc.Duration), drivers.HumanBytes(int64(lc.MessageSize)), run.Producers, cfg.Out)
	grp, err := newGroup(ctx, cfg, lc, l, &run)
	if err != nil {
		return nil, err
	}
	tw, inj, closeJournal, err := startRunFaults(ctx, cfg, runID, info.Name, l, &run)
	if err != nil {
		return nil, err
	}
	defer closeJournal()
	if inj != nil && grp != nil {
		inj.Group = grp
	}
	describeCluster(ctx, cfg, info.Name, &run)

	if err := startSchedule(cfg, &lc, totalRate); err != nil {
		return nil, err
	}
	run.LoadStart = lc.Start
	l.PutMeta(ledger.MetaRun, run)
	if err := startGroup(ctx, grp); err != nil {
		return nil, err
	}
	lres, loadErr := runLoad(ctx, cfg, lc, l, inj, grp)
	stopGroup(ctx, cfg, grp, info.Name, &run)
	if inj != nil && ctx.Err() == nil {
		// The brokers' own account of each node's return, read from
		// their logs once the recovery watches are done: the oracle
		// printed beside ackcheck's figures.
		inj.ReadOracle(ctx, info.Name, time.Now())
	}
	if err := endTimeline(ctx, cfg, l, tw, loadErr); err != nil && loadErr == nil {
		loadErr = err
	}
	recordLoad(&run, lres, cfg.Driver)
	if loadErr != nil {
		l.PutMeta(ledger.MetaRun, run)
		return nil, fmt.Errorf("load: %w", loadErr)
	}
	if err := sealLedger(ctx, cfg, l, &run, closeLedger); err != nil {
		return nil, err
	}
	return judgeRun(ctx, cfg, lres)
}

// prepareRun writes run.json, then prepares the topic and the load
// (prepareLoad) and narrows it to a shard's partitions, returning every
// partition's start offset, the run's for the read-back. Nothing it
// makes holds the run yet: on error, Run releases the directory.
func prepareRun(ctx context.Context, cfg Config, defaults load.Config, runID uint64, totalRate float64) (drivers.TopicInfo, load.Config, drivers.Offsets, error) {
	// run.json first: a disk that cannot hold it fails the run before the
	// topic is made.
	if err := writeSettings(cfg, defaults, runID, totalRate); err != nil {
		return drivers.TopicInfo{}, load.Config{}, drivers.Offsets{}, err
	}
	info, lc, err := prepareLoad(ctx, cfg, runID)
	if err != nil {
		return drivers.TopicInfo{}, load.Config{}, drivers.Offsets{}, err
	}
	// Every partition's start offset is the run's, for the read-back;
	// a shard's load may write and tail fewer (shardPartitions).
	startOffsets := lc.StartOffsets
	shardPartitions(cfg, &lc)
	if cfg.Shard != nil {
		// Checked before the ledger holds the run too: a shard too late
		// leaves no directory, and the merged verify reports it missing.
		if _, err := waitForStart(cfg.Shard); err != nil {
			return drivers.TopicInfo{}, load.Config{}, drivers.Offsets{}, err
		}
	}
	return info, lc, startOffsets, nil
}

// startRunFaults starts the run's fault timeline (a sharded load's) and
// its faults (startFaults), which the timeline records; a failure to
// start the faults is written to the timeline. The caller closes the
// heal journal with closeJournal.
func startRunFaults(ctx context.Context, cfg Config, runID uint64, topic string, l *ledger.Ledger, run *ledger.RunInfo) (*timelineWriter, *faults.Injector, func(), error) {
	tw, err := startTimeline(cfg, runID, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	var hook func(*faults.Injector)
	if tw != nil {
		hook = tw.hook
	}
	inj, closeJournal, err := startFaults(ctx, cfg, topic, l, run, hook)
	if err != nil {
		if tw != nil {
			tw.write(false, err.Error())
		}
		return nil, nil, nil, err
	}
	return tw, inj, closeJournal, nil
}

// newRunID is the run's identity in its ledger and messages: random for a
// run of its own, the shared one for a shard of a sharded load.
func newRunID(cfg Config) uint64 {
	if cfg.Shard != nil {
		return cfg.Shard.RunID
	}
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// openRunLedger opens the run's ledger in cfg.Out, sized to the load, and
// records in it the run as planned before the load (its RunInfo, checks
// and plan). Once it returns, the directory is the run's: the caller owns
// closing the ledger and keeps the returned RunInfo current in it.
func openRunLedger(cfg Config, defaults load.Config, runID uint64, topic string, lc load.Config, startOffsets drivers.Offsets) (*ledger.Ledger, ledger.RunInfo, error) {
	lopts := cfg.Ledger
	if lopts.ExpectedMessages == 0 {
		// A ledger sized to the run takes a small run's disk, not 70 MB.
		lopts.ExpectedMessages = int64(defaults.Rate * defaults.Duration.Seconds())
	}
	l, err := ledger.Open(LedgerDir(cfg.Out), lopts)
	if err != nil {
		return nil, ledger.RunInfo{}, err
	}
	checks, err := json.Marshal(verifier.ChecksOf(cfg.Check))
	if err != nil {
		l.Close()
		return nil, ledger.RunInfo{}, fmt.Errorf("record the run's checks: %w", err)
	}
	run := ledger.RunInfo{
		RunID: runID, Driver: cfg.Driver.Name(), Topic: topic, Producers: lc.Producers,
		StartOffsets: startOffsets, LoadStart: time.Now(), Checks: checks,
		Plan: planOf(lc, lopts, cfg.Faults),
	}
	if sh := cfg.Shard; sh != nil {
		run.Shard = &ledger.ShardInfo{Index: sh.Index, Count: sh.Count, ProducerBase: lc.ProducerBase, Rate: lc.Rate}
	}
	if err := l.PutMeta(ledger.MetaRun, run); err != nil {
		l.Close()
		return nil, ledger.RunInfo{}, err
	}
	return l, run, nil
}

// startSchedule sets the load schedule's start: now, after any setting
// was applied, or a shard's at the load's shared start (waited for).
func startSchedule(cfg Config, lc *load.Config, totalRate float64) error {
	lc.Start = time.Now()
	if cfg.Shard == nil {
		return nil
	}
	var err error
	if lc.Start, err = waitForStart(cfg.Shard); err != nil {
		return err
	}
	cfg.logf("shard %d of %d: producers %d-%d, %.0f msg/s of %.0f, schedule starts at %s (in %s)", cfg.Shard.Index, cfg.Shard.Count,
		lc.ProducerBase, lc.ProducerBase+uint32(lc.Producers)-1, lc.Rate, totalRate, lc.Start.Format(time.RFC3339Nano), time.Until(lc.Start).Round(time.Millisecond))
	return nil
}

// recordLoad copies into run what the load measured of itself: its span,
// what it shed and reached, the driver's ack classes, pacing lag,
// callback time and CPU steal.
func recordLoad(run *ledger.RunInfo, lres load.Result, d drivers.Driver) {
	run.LoadStart, run.LoadEnd = lres.Start, lres.End
	run.Shed, run.Errors, run.Reached = lres.Shed, lres.Errors, lres.Sent+lres.Shed
	if ac, ok := d.(drivers.AckClasser); ok {
		run.AckClasses = ac.AckClasses()
	}
	if h := lres.PacingLag; h != nil && h.TotalCount() > 0 {
		run.PacingLag = &ledger.LagSummary{Count: h.TotalCount(), P50Us: h.ValueAtQuantile(50), P99Us: h.ValueAtQuantile(99), MaxUs: h.Max()}
	}
	if h := lres.CallbackTime; h != nil && h.TotalCount() > 0 {
		run.CallbackTime = &ledger.LagSummary{Count: h.TotalCount(), P50Us: h.ValueAtQuantile(50), P99Us: h.ValueAtQuantile(99), MaxUs: h.Max()}
	}
	if lres.StealPct >= 0 {
		run.StealPct = &lres.StealPct
	}
}

// sealLedger completes the run's ledger after a load that ended without
// error: everything flushed, the run marked clean unless ctx was
// cancelled, a shard's latency over time written beside it, and the
// ledger closed, so that it is judged like any run directory, opened
// read-only and proven whole (Verify).
func sealLedger(ctx context.Context, cfg Config, l *ledger.Ledger, run *ledger.RunInfo, closeLedger func() error) error {
	if err := l.Flush(); err != nil {
		return err
	}
	run.Clean = ctx.Err() == nil
	if err := l.PutMeta(ledger.MetaRun, *run); err != nil {
		return err
	}
	if cfg.Shard != nil && run.Clean {
		// A shard's latency over time, for the merged verify to merge
		// (shards_hlog.go); without it the merge is only noted missing.
		if err := writeShardHlogs(cfg.Out, l, *run); err != nil {
			cfg.logf("warning: shard %d of %d: %v", cfg.Shard.Index, cfg.Shard.Count, err)
		}
	}
	if err := closeLedger(); err != nil {
		return fmt.Errorf("close the run's ledger: %w", err)
	}
	return nil
}

// judgeRun is the end of a run whose ledger is sealed: it says what was
// interrupted or left for later (a shard, --no-verify), or reads the topic
// back and returns the verdict, shown to the observer.
func judgeRun(ctx context.Context, cfg Config, lres load.Result) (*verifier.Result, error) {
	if lres.LiveReadErr != nil {
		cfg.logf("warning: the live consumer stopped early: %v (end-to-end latency covers part of the run)", lres.LiveReadErr)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted; what the run recorded is in %s: check it with `ackcheck verify --out %s` (%w)", cfg.Out, cfg.Out, ctx.Err())
	}
	if cfg.Shard != nil {
		cfg.logf("shard %d of %d done; judge every shard together with `ackcheck verify --out MERGED --shard-dir DIR ...` once all have finished", cfg.Shard.Index, cfg.Shard.Count)
		return nil, nil
	}
	if !cfg.Verify {
		cfg.logf("load done; --no-verify: check it later with `ackcheck verify --out %s`", cfg.Out)
		return nil, nil
	}
	res, err := Verify(ctx, cfg.Out, cfg.Driver, cfg.Check, cfg.ReadIdleTimeout, cfg.Progress)
	if v, ok := cfg.Observer.(VerdictObserver); ok && res != nil {
		v.Verdict(res)
	}
	return res, err
}

// planOf is the experiment the run is asked for, as its ledger records it
// before the load: the load's schedule, the ledger's flush interval and
// the fault schedule's steps.
func planOf(lc load.Config, lopts ledger.Options, fp *FaultPlan) *ledger.Plan {
	p := &ledger.Plan{
		Scheduled: int64(lc.Scheduled()), Rate: lc.Rate, Duration: lc.Duration, Unpaced: lc.Unpaced,
		MaxInFlight: lc.MaxInFlight, FlushInterval: lopts.FlushIntervalOrDefault(),
	}
	if fp != nil {
		p.Faults = plannedFaults(fp.Steps)
	}
	return p
}

// plannedFaults are steps as a plan records them (ledger.PlannedFault).
func plannedFaults(steps []faults.Step) []ledger.PlannedFault {
	var out []ledger.PlannedFault
	for _, st := range steps {
		out = append(out, ledger.PlannedFault{At: st.At, Action: string(st.Action), Target: st.Target.String(), Step: st.String()})
	}
	return out
}

// claimOut claims the run directory before anything else happens:
// creating the ledger directory is atomic, so of two runs started on one
// --out exactly one goes on, and the other touches neither the broker nor
// the winner's run.json. It refuses a disk with less than need bytes free
// (diskNeed), saying how much the run needs. release undoes the claim, for
// a run that ends before its load starts: it removes what the claim and
// run.json made, and the directories the claim created.
func claimOut(out string, need uint64) (release func(), err error) {
	top := topMissing(out)
	undoMkdir := func() {
		if top != "" {
			os.RemoveAll(top)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		undoMkdir()
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := os.Mkdir(LedgerDir(out), 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s already holds a run: choose a new --out, or use `ackcheck verify --out %s` to check that run again", out, out)
		}
		undoMkdir()
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	release = func() {
		os.RemoveAll(LedgerDir(out))
		settings := filepath.Join(out, "run.json")
		os.Remove(settings)
		os.Remove(settings + ".tmp")
		undoMkdir()
	}
	if free, ok := freeBytes(out); ok && free < need {
		release()
		return nil, fmt.Errorf("the disk of --out %s has %s free, and this run needs about %s (%d bytes a message for its ledger and the room its next log needs, %s for its reports): free space or give --out on a larger disk",
			out, drivers.ApproxBytes(free), drivers.ApproxBytes(need), ledgerBytesPerMessage, drivers.ApproxBytes(outputBytes))
	}
	return release, nil
}

// outputBytes is room for run.json, result.json, the reports and the
// ledger's own files, which do not grow with the run: about 120 KB
// measured after a 2,000-message run, rounded up.
const outputBytes = 1 << 20

// diskNeed is the free space a run of lc needs in its directory: its
// ledger at ledgerBytesPerMessage a scheduled message, and outputBytes.
// Pebble's WAL preallocation (110% of the memtable) is not counted: it
// asks for it and goes on without it.
func diskNeed(lc load.Config) uint64 {
	return outputBytes + lc.Scheduled()*ledgerBytesPerMessage + ledger.Reserve(int64(lc.Scheduled()))
}

// freeBytes is what an unprivileged writer may still write on the
// filesystem of dir; ok is false where that cannot be read.
func freeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}

// topMissing is the outermost directory of out's path that does not exist
// yet ("" when out exists): what creating out creates.
func topMissing(out string) string {
	top := ""
	for p := filepath.Clean(out); ; {
		if _, err := os.Lstat(p); err == nil {
			return top
		}
		top = p
		next := filepath.Dir(p)
		if next == p {
			return top
		}
		p = next
	}
}

// prepareLoad makes sure of the topic, reads where its partitions end,
// and completes the load's configuration for the run.
func prepareLoad(ctx context.Context, cfg Config, runID uint64) (drivers.TopicInfo, load.Config, error) {
	info, err := cfg.Driver.EnsureTopic(ctx, cfg.Topic)
	if err != nil {
		return info, load.Config{}, fmt.Errorf("prepare topic %s: %w", cfg.Topic.Name, err)
	}
	if info.Created {
		cfg.logf("created topic %s: %d partitions, replication factor %d", info.Name, len(info.Partitions), info.ReplicationFactor)
	} else {
		cfg.logf("topic %s exists: using it as it is (%d partitions, replication factor %d)", info.Name, len(info.Partitions), info.ReplicationFactor)
	}
	starts, err := cfg.Driver.EndOffsets(ctx, info.Name)
	if err != nil {
		return info, load.Config{}, fmt.Errorf("read offsets of %s before the load: %w", info.Name, err)
	}
	lc := cfg.Load.WithDefaults()
	lc.RunID, lc.Topic, lc.Partitions, lc.StartOffsets = runID, info.Name, info.Partitions, starts
	if od, ok := cfg.Driver.(drivers.OutcomeDeadliner); ok && lc.OutcomeTimeout == 0 && od.OutcomeDeadline() > 0 {
		// A little after the client's own deadline, so that the client
		// normally answers first, with its own reason.
		lc.OutcomeTimeout = od.OutcomeDeadline() + outcomeGrace
	}
	if lc.Abort == nil {
		lc.Abort = cfg.Abort
	}
	return info, lc, lc.Validate()
}

// describeCluster records what an ack means on the topic now and what
// each broker runs, as the cluster says.
func describeCluster(ctx context.Context, cfg Config, topic string, run *ledger.RunInfo) {
	if ad, ok := cfg.Driver.(drivers.AckDescriber); ok {
		if m, err := ad.AckMeaning(ctx, topic); err == nil {
			run.AckMeaning = m
		} else {
			cfg.logf("warning: could not read what an ack means on %s: %v", topic, err)
		}
	}
	if run.AckMeaning != "" {
		cfg.logf("an ack means: %s", run.AckMeaning)
	}
	if vr, ok := cfg.Driver.(drivers.VersionReporter); ok {
		if vs, err := vr.BrokerVersions(ctx); err == nil {
			run.BrokerVersions = vs
		}
	}
}

// Observer watches a run's load as it goes: Attach is called before the
// load starts, with its live counters, when its schedule starts, and what
// lists the faults in force (nil when the run has none).
type Observer interface {
	Attach(stats *load.Stats, start time.Time, active func() []faults.Record)
}

// LoadEnder is an Observer told when the load ended: its last send's
// outcome is in (or the wait for it is over), and no ack is due after.
type LoadEnder interface{ LoadEnded(at time.Time) }

// VerdictObserver is an Observer given the verdict once the read-back
// judged the run.
type VerdictObserver interface{ Verdict(res *verifier.Result) }

// runLoad runs the load with its progress lines and, when the run has
// them, its faults and the watch for nodes that die unasked; then heals
// what the faults left applied. An error healing is the run's error when
// the load had none.
func runLoad(ctx context.Context, cfg Config, lc load.Config, l *ledger.Ledger, inj *faults.Injector, grp *load.Group) (load.Result, error) {
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	var faultsDone sync.WaitGroup
	stats := &load.Stats{}
	if cfg.Observer != nil {
		var active func() []faults.Record
		if inj != nil {
			active = inj.Active
		}
		cfg.Observer.Attach(stats, lc.Start, active)
	}
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() {
		defer close(progressDone)
		reportProgress(cfg, lc, stats, stopProgress, inj, grp)
	}()
	if inj != nil {
		faultsDone.Add(2)
		go func() { defer faultsDone.Done(); inj.Run(faultCtx, lc.Start, cfg.Faults.Steps) }()
		go func() { defer faultsDone.Done(); inj.WatchDeaths(faultCtx) }()
	}
	loadDone := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			wait := lc.DrainTimeout
			if lc.OutcomeTimeout > 0 {
				wait = min(wait, lc.OutcomeTimeout)
			}
			cfg.logf("interrupted: no new sends; waiting up to %s for the outcomes of %d sends in flight, then healing what the faults left. "+
				"Interrupt again to stop waiting now (they are recorded unknown) and heal", wait, stats.InFlight.Load())
		case <-loadDone:
		}
	}()
	lres, loadErr := load.Run(ctx, lc, cfg.Driver, l, stats)
	if e, ok := cfg.Observer.(LoadEnder); ok {
		e.LoadEnded(time.Now())
	}
	close(loadDone)
	close(stopProgress)
	<-progressDone
	if inj != nil {
		healErr := finishFaults(ctx, cfg, inj, stopFaults, &faultsDone)
		if loadErr == nil {
			loadErr = healErr
		}
	}
	return lres, loadErr
}

// startFaults opens the run's heal journal and injector and applies the
// run-wide settings (--fsync) before the load. It returns a nil injector
// when the run has no faults.
func startFaults(ctx context.Context, cfg Config, topic string, l *ledger.Ledger, run *ledger.RunInfo, hook func(*faults.Injector)) (*faults.Injector, func(), error) {
	if cfg.Faults == nil {
		return nil, func() {}, nil
	}
	j, err := faults.OpenJournal(JournalPath(cfg.Out))
	if err != nil {
		return nil, nil, err
	}
	inj := &faults.Injector{Nodes: cfg.Faults.Nodes, Topic: topic, Driver: cfg.Driver, Ledger: l, Logf: cfg.logf,
		Journal: j, ConfigFsync: cfg.Faults.ConfigFsync, Expect: cfg.Faults.Expect, DataFiles: cfg.Faults.DataFiles, Seed: cfg.Faults.Seed}
	if hook != nil {
		// A sharded load's shared timeline (shards_faults.go) follows
		// every change from the first, --fsync's included.
		inj.OnChange = func() { hook(inj) }
	}
	run.Notes = append(run.Notes, cfg.Faults.Notes...)
	if f := cfg.Faults.Fsync; f != nil {
		a := faults.FsyncOff
		if *f {
			a = faults.FsyncOn
		}
		rec := inj.Apply(ctx, faults.Step{Action: a, Target: faults.Target{Kind: faults.Topic, Topic: topic}})
		if rec.Result != faults.Applied {
			inj.Heal(context.WithoutCancel(ctx))
			j.Close()
			return nil, nil, fmt.Errorf("--fsync: %s", rec.Error)
		}
	}
	return inj, func() { j.Close() }, nil
}

// finishFaults lets recovery measurements finish (bounded), stops the
// fault goroutines and heals whatever is still applied, even when ctx was
// cancelled (Ctrl-C): a paused broker must not stay paused.
// healTimeout bounds the heal after the faults. Each undo bounds itself
// (a restart: its stop within a minute, back in sync within 3); this is
// the whole heal's bound, and it must hold a rolling restore of every
// node: at one minute, the restore of three Kafka brokers' config files
// (one restart each, waiting for each back in sync) ran out on the third
// node in a CI rehearsal and left it down for every test after it.
const healTimeout = 10 * time.Minute

func finishFaults(ctx context.Context, cfg Config, inj *faults.Injector, stop func(), wg *sync.WaitGroup) error {
	timeout := cfg.Faults.RecoveryTimeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	if ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		inj.WaitRecovery(wctx)
		cancel()
	}
	stop()
	wg.Wait()
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	healed, err := inj.Heal(hctx)
	for _, h := range healed {
		cfg.logf("heal: %s", h)
	}
	if err != nil {
		return fmt.Errorf("heal the cluster after the faults: %w", err)
	}
	return nil
}

func writeSettings(cfg Config, lc load.Config, runID uint64, totalRate float64) error {
	ds, err := json.Marshal(cfg.DriverSettings)
	if err != nil {
		return fmt.Errorf("record driver settings: %w", err)
	}
	s := Settings{
		RunID: verifier.RunIDText(runID), Driver: cfg.Driver.Name(), DriverSettings: ds,
		Topic: cfg.Topic, Rate: lc.Rate, Duration: lc.Duration.String(), Producers: lc.Producers,
		MessageSize: lc.MessageSize, Keys: lc.Keys, Placement: lc.Placement.String(), MaxInFlight: lc.MaxInFlight, CreatedAt: time.Now(),
	}
	checks := verifier.ChecksOf(cfg.Check)
	s.Checks = &checks
	if sd, ok := cfg.Driver.(drivers.SettingsDescriber); ok {
		s.DriverRows = sd.SettingsRows()
	}
	if cfg.Faults != nil {
		src := cfg.Faults.Source
		s.Faults = &src
	}
	if sh := cfg.Shard; sh != nil {
		s.Shard = &ShardSettings{Index: sh.Index, Count: sh.Count, TotalRate: totalRate}
	}
	return writeJSON(filepath.Join(cfg.Out, "run.json"), s)
}

// ReadSettings loads run.json from a run directory.
func ReadSettings(out string) (Settings, error) {
	var s Settings
	data, err := os.ReadFile(filepath.Join(out, "run.json"))
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%s is not an ackcheck run directory (no run.json): pass the --out of an earlier run", out)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s/run.json is damaged: %w", out, err)
	}
	return s, nil
}

// Verify reads back and judges an existing run directory again. It opens
// the run's ledger read-only (ledger.OpenReadOnly: a damaged ledger is
// refused, byte for byte as it was) and records the read-back in a fresh
// ledger, which replaces ReadsDir only once the read-back has ended (see
// replaceReads): a verify interrupted before leaves the last read-back
// and its result.json as they were, and report judges them alike.
//
// Everything that can refuse the run directory is checked before the
// topic is read: a damaged ledger, another run's, a shard's (judged only
// with the others), run.json changed. A damaged ledger marks the last
// verdict stale (markStale): the evidence it rests on is gone.
func Verify(ctx context.Context, out string, d drivers.Driver, opts verifier.Options, idle time.Duration, progress io.Writer) (*verifier.Result, error) {
	l, run, err := openSingleRun(out)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return verify(ctx, out, d, l, run, opts, idle, progress)
}

// openSingleRun is openRun for a run of its own: a shard's directory is
// refused (before anything is read), and a damaged ledger marks the last
// verdict stale.
func openSingleRun(out string) (*ledger.Ledger, ledger.RunInfo, error) {
	l, run, err := openRun(out)
	if errors.Is(err, ledger.ErrDamaged) {
		return nil, run, staleAfter(out, err)
	}
	if err != nil {
		return nil, run, err
	}
	if sh := run.Shard; sh != nil {
		l.Close()
		return nil, run, fmt.Errorf("%s is shard %d of %d of run %s: its verdict is judged with every shard's, reading the topic once: "+
			"`ackcheck verify --out MERGED --shard-dir DIR ...` (MERGED a directory of its own)", out, sh.Index, sh.Count, verifier.RunIDText(run.RunID))
	}
	return l, run, nil
}

// ReadRunInfo reads a run directory's run description from its ledger.
func ReadRunInfo(out string) (ledger.RunInfo, error) {
	l, run, err := openRun(out)
	if err != nil {
		return run, err
	}
	return run, l.Close()
}

// openRun opens an existing run directory's ledger and its run
// description. The caller closes the ledger.
func openRun(out string) (*ledger.Ledger, ledger.RunInfo, error) {
	var run ledger.RunInfo
	if _, err := os.Stat(LedgerDir(out)); err != nil {
		return nil, run, fmt.Errorf("%s has no ledger: pass the --out of an earlier run", out)
	}
	l, err := ledger.OpenReadOnly(LedgerDir(out), ledger.Options{})
	if err != nil {
		return nil, run, err
	}
	if err := l.GetMeta(ledger.MetaRun, &run); err != nil {
		l.Close()
		return nil, run, fmt.Errorf("%s: ledger has no run description: %w", out, err)
	}
	// The ledger must be the run's that run.json describes: another run's
	// ledger in its place would be judged, and its verdict given, under
	// this run's name, settings and saved checks.
	s, err := ReadSettings(out)
	if err != nil {
		l.Close()
		return nil, run, err
	}
	if want := verifier.RunIDText(run.RunID); s.RunID != want {
		l.Close()
		return nil, run, fmt.Errorf("%s: the ledger is not this run's: run.json describes run %q and the ledger %s holds run %s; "+
			"no verdict can be given from them: put the run's own ledger back, or verify the directory the ledger came from",
			out, s.RunID, LedgerDir(out), want)
	}
	if err := sameChecks(out, s, run); err != nil {
		l.Close()
		return nil, run, err
	}
	return l, run, nil
}

// sameChecks refuses a run.json whose saved checks are not those the run
// recorded in its ledger: verify and report judge by run.json's, and a
// run.json changed after the run (a check turned off, or dropped) would
// otherwise turn the run's FAIL into a PASS that nothing records. A check
// changed on the command line is the way to judge by other checks: it is
// printed and recorded. Runs recorded before the ledger kept its checks
// have nothing to hold run.json to.
func sameChecks(out string, s Settings, run ledger.RunInfo) error {
	if len(run.Checks) == 0 {
		return nil
	}
	var recorded verifier.Checks
	if err := json.Unmarshal(run.Checks, &recorded); err != nil {
		return fmt.Errorf("%s: the checks in the ledger's run description are not ones ackcheck wrote (%v): no verdict can be given from it", out, err)
	}
	if s.Checks != nil && *s.Checks == recorded {
		return nil
	}
	saved := "none"
	if s.Checks != nil {
		b, _ := json.Marshal(s.Checks)
		saved = string(b)
	}
	return fmt.Errorf("%s/run.json's checks (%s) are not those the run recorded in its ledger (%s): run.json was changed after the run. "+
		"Put its checks back to judge the run as it ran; to judge it by other checks, give them as flags to verify or report, which record the change",
		out, saved, run.Checks)
}

func verify(ctx context.Context, out string, d drivers.Driver, l *ledger.Ledger, run ledger.RunInfo, opts verifier.Options, idle time.Duration, progress io.Writer) (*verifier.Result, error) {
	logf := progressf(progress)
	if !run.Clean {
		logf("note: this run's ackcheck did not finish its load; up to the last %s of its ledger may be missing (see the ledger package doc)", ledger.Options{}.FlushIntervalOrDefault())
	}
	if p := l.Proof(); !p.Whole {
		logf("note: %s", p.Reason)
	}
	logf("reading back %s ...", run.Topic)
	judge := func(reads *ledger.Ledger, listDir string) (*verifier.Result, error) {
		o := opts
		o.ListDir = listDir // lost.jsonl, unread.jsonl, duplicates.jsonl, reordered.jsonl beside result.json
		return verifier.CheckLedgers(ctx, verifier.Ledgers{Run: l, Reads: reads}, o)
	}
	res, err := readBackAndJudge(ctx, out, d, run, idle, sentCount(l), "ackcheck verify --out "+shellQuote(out), logf, judge)
	if err != nil {
		return nil, err
	}
	if err := writeOutputs(out, res, run); err != nil {
		return nil, err
	}
	return res, nil
}

// progressf prints a line of progress to w; nil prints nothing.
func progressf(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format+"\n", args...)
		}
	}
}

// readBackAndJudge reads the run's topic back (readBack, sized for sent
// messages), judges the read-back with judge, its lists written into out,
// and says how to finish a read-back the broker left unsettled (resume:
// the command that reads again, see settleWith). The read-back's ledger
// is closed on return.
func readBackAndJudge(ctx context.Context, out string, d drivers.Driver, run ledger.RunInfo, idle time.Duration, sent int64, resume string, logf func(string, ...any), judge judgeFunc) (*verifier.Result, error) {
	reads, err := readBack(ctx, out, d, run, idle, sent, logf, judge)
	if err != nil {
		return nil, err
	}
	defer reads.Close()
	res, err := judge(reads, out)
	if err != nil {
		return nil, err
	}
	settleWith(resume, res, logf)
	return res, nil
}

// readBack reads the run's topic back into the run directory's staged
// read-back ledger (sized for sent messages), swaps it in once the read
// ended, and opens it read-only, proven whole: the read-back a verdict is
// judged from, as report judges it again. A read-back that fails leaves
// the last one, and the result judged from it, as they were: an
// interrupted verify must not leave a result.json whose evidence is gone.
// So does a read-back that adds nothing proven to the run directory's
// verdict (keepProven, which judges the staged read-back with judge).
func readBack(ctx context.Context, out string, d drivers.Driver, run ledger.RunInfo, idle time.Duration, sent int64, logf func(string, ...any), judge judgeFunc) (*ledger.Ledger, error) {
	staged, err := freshLedger(stagedReadsDir(out), sent)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rb, err := verifier.ReadBackLogged(ctx, d, staged, run, idle, logf)
	if cerr := staged.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the read-back's ledger: %w", cerr)
	}
	if err != nil {
		os.RemoveAll(stagedReadsDir(out))
		return nil, err
	}
	logf("read %d records in %s", rb.Records, time.Since(start).Round(time.Millisecond))
	if err := keepProven(out, rb, judge); err != nil {
		os.RemoveAll(stagedReadsDir(out))
		return nil, err
	}
	if err := replaceReads(out); err != nil {
		return nil, err
	}
	return openReads(out)
}

// judgeFunc judges a read-back's ledger beside the run's, writing the
// lists of failing messages into listDir ("" writes none).
type judgeFunc func(reads *ledger.Ledger, listDir string) (*verifier.Result, error)

// ErrNothingAdded is returned (wrapped, with the reason) by a verify whose
// read-back did not finish and proves nothing the run directory's verdict
// does not (verifier.Adds): the run directory is left as it was.
var ErrNothingAdded = errors.New("this verify added nothing proven, and changed nothing")

// keepProven decides, before the staged read-back replaces anything,
// whether it adds to the verdict the run directory holds: a read-back
// that did not finish is judged (no lists written) beside the earlier
// result.json, and when it adds nothing proven the earlier verdict and
// everything judged with it stay as they are (ErrNothingAdded). A
// finished read-back, or a run directory without a readable result.json,
// is not held back.
func keepProven(out string, rb verifier.ReadBackReport, judge judgeFunc) error {
	if judge == nil || rb.Complete || rb.TopicGone {
		return nil
	}
	earlier, err := ReadResult(out)
	if err != nil {
		return nil // nothing proven to keep
	}
	staged, err := ledger.OpenReadOnly(stagedReadsDir(out), ledger.Options{})
	if err != nil {
		return fmt.Errorf("the read-back's ledger: %w", err)
	}
	next, err := judge(staged, "")
	if cerr := staged.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if adds, why := verifier.Adds(&earlier, next); !adds {
		return fmt.Errorf("%w: %s. Run `ackcheck verify --out %s` again when the brokers answer", ErrNothingAdded, why, shellQuote(out))
	}
	return nil
}

// sentCount is how many sends a run ledger holds: what sizes its
// read-back's ledger.
func sentCount(l *ledger.Ledger) int64 {
	var sent int64
	for _, seq := range l.SentThrough() {
		sent += int64(seq) + 1
	}
	return sent
}

// stagedFlushInterval is how often a staged read-back's ledger flushes
// (see freshLedger); a shard still flushes early at FlushEvents.
const stagedFlushInterval = time.Second

// stagedReadsDir is where verify records a read-back until it has
// finished: only a read-back that ran to its end (complete or not, its
// ReadBackReport written) replaces ReadsDir (replaceReads).
func stagedReadsDir(out string) string { return ReadsDir(out) + ".new" }

// freshLedger makes an empty ledger at dir, removing what was there (the
// staged read-back of a verify that was killed).
// expected sizes it (ledger.Options.ExpectedMessages).
//
// It flushes every stagedFlushInterval, not every 50 ms: a staged
// read-back is used only once it has run to its end and its ledger is
// closed (Close flushes and syncs what is left), and a verify killed
// before that loses it whole whatever was flushed, so the run ledger's
// short window buys nothing here. What the interval does cost: each flush
// writes every producer's reads of that interval as fragments sorted
// among themselves, and partitions read at different speeds make one
// flush's fragments overlap the next's, so the verdict's merge reads a
// few events at a time through a heap (verifier.CheckLedgers was an
// eighth of the verify child's CPU in bench --peer's profile).
func freshLedger(dir string, expected int64) (*ledger.Ledger, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remove %s: %w", dir, err)
	}
	l, err := ledger.Open(dir, ledger.Options{ExpectedMessages: expected, FlushInterval: stagedFlushInterval})
	if err != nil {
		return nil, fmt.Errorf("ledger for the read-back: %w", err)
	}
	return l, nil
}

// replaceReads puts the staged read-back in ReadsDir's place. The
// verdict judged from the read-back it replaces is marked stale first
// (markStale): from here on it would describe evidence that is gone.
func replaceReads(out string) error {
	dir, old := ReadsDir(out), ReadsDir(out)+".old"
	if err := markStale(out); err != nil {
		return err
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("remove %s: %w", old, err)
	}
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace the last read-back's ledger %s: %w", dir, err)
	}
	if err := os.Rename(stagedReadsDir(out), dir); err != nil {
		return fmt.Errorf("replace the last read-back's ledger %s: %w", dir, err)
	}
	if d, err := os.Open(out); err == nil {
		d.Sync()
		d.Close()
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("remove %s: %w", old, err)
	}
	return nil
}

// openReads opens, read-only, the reads ledger of a run directory's last
// verify; nil without error for a run directory from before such ledgers,
// whose reads are in its run ledger.
func openReads(out string) (*ledger.Ledger, error) {
	dir := ReadsDir(out)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	l, err := ledger.OpenReadOnly(dir, ledger.Options{})
	if err != nil {
		return nil, fmt.Errorf("the last read-back's ledger: %w (run `ackcheck verify --out %s` to read back again)", err, out)
	}
	return l, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A temporary file that could not be finished is removed: left behind
	// (an empty run.json.tmp on a full disk) it only confuses.
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		return fail(fmt.Errorf("write %s: %w", path, err))
	}
	// fsync before rename: a result that survives a crash is a whole one.
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func reportProgress(cfg Config, lc load.Config, s *load.Stats, stop <-chan struct{}, inj *faults.Injector, grp *load.Group) {
	if cfg.Progress == nil {
		return
	}
	t := time.NewTicker(cfg.ProgressEvery)
	defer t.Stop()
	start := time.Now()
	var lastAcked int64
	last := start
	for {
		select {
		case <-stop:
			if cfg.Live {
				fmt.Fprint(cfg.Progress, "\n")
			}
			return
		case <-t.C:
			now := time.Now()
			acked := s.Acked.Load()
			p99, _ := s.WindowP99()
			rate := float64(acked-lastAcked) / now.Sub(last).Seconds()
			lastAcked, last = acked, now
			sinceAck := "-"
			if la := s.LastAck(); !la.IsZero() {
				sinceAck = max(0, now.Sub(la)).Round(time.Millisecond).String()
			}
			inForce := ""
			if inj != nil {
				if f := inj.InForce(); f != "" {
					inForce = "  in force: " + f
				}
			}
			line := fmt.Sprintf("%6s/%s  sent %d  acked %d (%.0f/s of %.0f offered)  failed %d  shed %d  in flight %d  p99 %s  last ack %s ago%s%s",
				drivers.HumanDuration(now.Sub(start).Round(time.Second)), drivers.HumanDuration(lc.Duration), s.Sent.Load(), acked, rate, lc.Rate,
				s.Rejected.Load()+s.Unknown.Load(), s.Shed.Load(), s.InFlight.Load(), p99, sinceAck, groupProgress(grp, now), inForce)
			if cfg.Live {
				fmt.Fprint(cfg.Progress, clearLine+line)
			} else {
				fmt.Fprintln(cfg.Progress, line)
			}
		}
	}
}

// settle completes a judged result before it is written: a read-back that
// did not finish names, in result.json and on the progress writer, the
// command that finishes it.
func settle(out string, res *verifier.Result, logf func(string, ...any)) {
	settleWith("ackcheck verify --out "+shellQuote(out), res, logf)
}

// settleWith is settle with the command that finishes the read-back.
func settleWith(resume string, res *verifier.Result, logf func(string, ...any)) {
	if !res.Unfinished() {
		return
	}
	res.Resume = resume
	finish := "finish it with `" + res.Resume + "` when the brokers answer"
	for i := range res.Reasons {
		res.Reasons[i] = strings.Replace(res.Reasons[i], verifier.ResumeHint, finish, 1)
	}
	for i := range res.Failures {
		res.Failures[i].Message = strings.Replace(res.Failures[i].Message, verifier.ResumeHint, finish, 1)
	}
	logf("the read-back did not finish (%d of %d acked messages read so far): verdict %s; finish it with `%s` when the brokers answer",
		res.Acked-res.Lost-res.Unread, res.Acked, res.Verdict, res.Resume)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:=@%,") == "" {
		return s
	}
	return remote.Quote(s)
}
