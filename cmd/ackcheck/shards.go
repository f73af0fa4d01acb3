package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

// shardFlags are run's flags for one shard of a load spread over
// processes (issue 27; see runner.Shard and docs/scale-out.md).
type shardFlags struct {
	shard    string
	startAt  string
	startDir string
	lead     time.Duration
	external bool
}

// jobIndexEnv is where Kubernetes gives an Indexed Job's pod its index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

func (s *shardFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.shard, "shard", "", "run as shard I of N processes sharing one load: I/N, or auto/N to read I from $"+jobIndexEnv+
		" (a Kubernetes Indexed Job); --rate is the whole load's, each shard sends its share; judge all with verify --shard-dir")
	f.StringVar(&s.startAt, "start-at", "", "with --shard: the instant (RFC3339) every shard's schedule starts; the run ID is derived from it and the topic")
	f.StringVar(&s.startDir, "start-dir", "", "with --shard: a directory every shard sees; the first shard writes the run ID and start instant there (start.json), the others read them")
	f.DurationVar(&s.lead, "start-lead", 20*time.Second, "with --start-dir: how far ahead of the first shard's arrival the load starts, so that every shard is ready")
	f.BoolVar(&s.external, "external-faults", false, "with --shard and --start-dir: a separate 'ackcheck faults' process applies the load's faults; the merged verdict requires the timeline it writes in --start-dir")
}

// config returns the shard of the run, or nil without --shard.
func (s *shardFlags) config(topic string) (*runner.Shard, error) {
	if s.shard == "" {
		if s.startAt != "" || s.startDir != "" || s.external {
			return nil, fmt.Errorf("--start-at, --start-dir and --external-faults are for the shards of one load: give --shard I/N too")
		}
		return nil, nil
	}
	idx, count, err := parseShard(s.shard, os.Getenv(jobIndexEnv))
	if err != nil {
		return nil, err
	}
	sh := &runner.Shard{Index: idx, Count: count, Dir: s.startDir, ExternalFaults: s.external}
	switch {
	case (s.startAt == "") == (s.startDir == ""):
		return nil, fmt.Errorf("--shard needs exactly one of --start-at RFC3339 (the instant every shard starts) or --start-dir DIR (a directory every shard sees)")
	case s.startAt != "":
		t, err := time.Parse(time.RFC3339Nano, s.startAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: give an RFC3339 instant such as 2026-12-02T05:00:00Z: %w", s.startAt, err)
		}
		sh.Start, sh.RunID = t, runner.RunIDFor(topic, t, count)
	default:
		if s.lead <= 0 {
			return nil, fmt.Errorf("--start-lead %s: give how long the shards have to get ready, above 0", s.lead)
		}
		sh.RunID, sh.Start, err = runner.JoinStart(s.startDir, count, topic, s.lead, time.Second)
		if err != nil {
			return nil, err
		}
	}
	return sh, sh.Validate()
}

// parseShard reads --shard I/N; I may be "auto", read from env (the
// Indexed Job's completion index).
func parseShard(v, env string) (idx, count int, err error) {
	i, n, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, fmt.Errorf("--shard %q: give I/N (this shard's number and the number of shards), or auto/N", v)
	}
	count, err = strconv.Atoi(n)
	if err != nil || count < 1 {
		return 0, 0, fmt.Errorf("--shard %q: N must be a number of shards, at least 1", v)
	}
	if i == "auto" {
		if env == "" {
			return 0, 0, fmt.Errorf("--shard %s: $%s is not set (Kubernetes sets it in an Indexed Job's pods): give the shard's number instead of auto", v, jobIndexEnv)
		}
		i = env
	}
	idx, err = strconv.Atoi(i)
	if err != nil || idx < 0 || idx >= count {
		return 0, 0, fmt.Errorf("--shard %q: I must be 0 to %d", v, count-1)
	}
	return idx, count, nil
}

// shardDirs expands verify's --shard-dir values (each a directory or a
// glob) into the shards' run directories, sorted, each once. A glob that
// matches nothing is kept as it is: the merge reports it missing.
func shardDirs(given []string) []string {
	var out []string
	for _, g := range given {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			out = append(out, g)
			continue
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// firstSettings is the run.json of the first shard directory that has
// one: how to reach the brokers and which checks the run was judged by.
func firstSettings(dirs []string) (runner.Settings, error) {
	var errs []string
	for _, d := range dirs {
		s, err := runner.ReadSettings(d)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err.Error())
	}
	return runner.Settings{}, fmt.Errorf("no --shard-dir holds a run.json: %s", strings.Join(errs, "; "))
}

// verifyShards is verify --shard-dir: one read-back, one verdict over
// every shard's ledger (runner.VerifyShards), written to out.
func verifyShards(cmd *cobra.Command, out string, dirs []string, timeline string, kf *driverFlags, cf *checkFlags) (*verifier.Result, error) {
	s, err := firstSettings(dirs)
	if err != nil {
		return nil, err
	}
	d, _, err := newDriver(s.Driver, cmd.Flags(), kf, s.DriverSettings)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	opts := cf.rejudge(cmd, s, "verify")
	return runner.VerifyShardsTimeline(cmd.Context(), out, dirs, timeline, d, opts, cf.readIdle, cmd.OutOrStdout())
}
