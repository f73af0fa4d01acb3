package queen

import (
	"encoding/json"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// Profile is Queen MQ's: its Spec, and what a fault does to a node, from
// Queen's documentation.
type Profile struct{ drivers.Declared[Profile] }

var (
	_ drivers.Profile  = Profile{}
	_ cluster.Provider = Profile{}
)

// Spec implements drivers.SpecOf: what Declared answers from.
func (Profile) Spec() drivers.Spec { return spec }

var spec = drivers.Spec{
	Name: driverName, AddressFlag: "queen-url",
	NewFlags: func() drivers.Flags { return &flags{} },
	// From Queen's documentation: pushes are acknowledged after
	// PostgreSQL committed them, with a file buffer for when it cannot.
	LeaderKill: "the Queen server (every queue's only server) dies; pushes go unanswered until it restarts; what it committed to PostgreSQL stays, so no acknowledged message is lost",
	// The fsync audit: PostgreSQL's own default (synchronous_commit=on:
	// the commit's WAL is fsynced before Queen answers) against
	// synchronous_commit=off, switched by a clean restart of PostgreSQL.
	Durability: &drivers.Durability{Settings: []drivers.DurabilitySetting{
		{Name: "default", Label: "PostgreSQL default (synchronous_commit=on)", ExpectLoss: false, ServerFsync: drivers.ServerFsync(true),
			Why: "Queen's documentation states synchronous_commit=on and an fsync of the WAL before it answers 201: a queued ack is fsynced, and a power loss of the database loses nothing acked"},
		{Name: "synchronous-commit-off", Label: "synchronous_commit=off", ExpectLoss: true, ServerFsync: drivers.ServerFsync(false),
			Why: "PostgreSQL documents that with synchronous_commit=off a commit returns before its WAL is flushed (up to 3 x wal_writer_delay later), so a power loss of the database can lose acknowledged commits"},
	}},
	// synchronous_commit in each node's postgresql.conf (a cluster file's
	// config_file).
	ConfigFsync: drivers.PropertyFsync("synchronous_commit", "on", "off"),
	// 1 MiB. Queen 0.15 documents no limit: a value travels base64 in a
	// JSON push body, is stored as a jsonb string in PostgreSQL (up to 255
	// MB) and comes back the same way, each whole in memory on every side.
	// Larger values are untested, so they are refused rather than guessed
	// at.
	MaxMessageSize: 1 << 20,
	// Queen makes a partition at the first push that names it, in the
	// same log entry as the message; ackcheck creates none. 10,000,000 is
	// the name space the load writes into (partition names "p0" to
	// "p9999999"), not a creation: the partitions a run touches are the
	// ones that exist after it.
	MaxPartitions:    10_000_000,
	MaxPartitionsWhy: "Queen makes a partition at its first push, so this is the name space the load writes into, not a count created up front",
	// PostgreSQL's relation files (named by their OIDs, from 1; WAL
	// segments and pg_xact files begin with 0 and are left alone).
	DataFiles: []string{"[1-9]*"},
}

// Launcher implements cluster.Provider: a Queen server on PostgreSQL.
func (Profile) Launcher() cluster.Launcher { return launcher }

// ExpectFault implements drivers.FaultExpecter (a test asserts it), from
// Queen's documentation.
func (Profile) ExpectFault(f drivers.NodeFault, _ drivers.Driver) string {
	switch f {
	case drivers.NodeKilled, drivers.NodeStopped:
		return "the node goes away: pushes fail or wait while it is gone (the Queen server answers from its file buffer while PostgreSQL is unreachable); Queen's documentation promises zero message loss"
	case drivers.NodePowerLost:
		return "the node loses what it had not fsynced: with synchronous_commit=on an acknowledged commit was fsynced and survives; buffered acks survive only what the file buffer fsynced"
	}
	return ""
}

// flags are the Queen driver's flags.
type flags struct {
	url, postgresURL string
	bufferDir        string
	pushTimeout      time.Duration
	attemptTimeout   time.Duration
	batch            int
	linger           time.Duration
	concurrency      int
	maxPending       int
}

func (f *flags) Register(fs *pflag.FlagSet) {
	def := Config{}.WithDefaults()
	fs.StringVar(&f.url, "queen-url", "", "Queen: the server's HTTP address, http://host:6632")
	fs.StringVar(&f.postgresURL, "postgres-url", "", "Queen: the database its queues live in, postgres://user@host:5432/queen (read-back and PostgreSQL's durability settings)")
	fs.DurationVar(&f.pushTimeout, "push-timeout", def.PushTimeout, "Queen: longest a message may take from its first push to its outcome, pushes sent again with the same transactionId included; then its outcome is unknown")
	fs.DurationVar(&f.attemptTimeout, "push-attempt-timeout", def.AttemptTimeout, "Queen: longest one HTTP push waits for its answer before it is sent again")
	fs.IntVar(&f.batch, "push-batch", def.MaxBatch, "Queen: most items one HTTP push carries")
	fs.DurationVar(&f.linger, "push-linger", def.Linger, "Queen: longest a push waits for more items")
	fs.IntVar(&f.concurrency, "push-concurrency", def.MaxConcurrent, "Queen: HTTP pushes in flight per producer")
	fs.IntVar(&f.maxPending, "push-max-pending", def.MaxPending, "Queen: unanswered messages per producer; one past it is rejected")
	fs.StringVar(&f.bufferDir, "queen-buffer-dir", "", "Queen: the server's file buffer dir (FILE_BUFFER_DIR), when this machine can read it; the read-back then waits until no file there holds events (the server's own count misses files an earlier server process left)")
	drivers.RegisterNetns(fs)
}

// Open implements drivers.Flags.
func (f *flags) Open(fs *pflag.FlagSet, saved json.RawMessage) (drivers.Driver, any, error) {
	c, err := drivers.OpenSaved(fs, saved, func(c *Config, o drivers.Overlay) {
		o.SetOr("queen-url", c.URL == "", func() { c.URL = f.url })
		o.SetOr("postgres-url", c.PostgresURL == "", func() { c.PostgresURL = f.postgresURL })
		o.Set("queen-buffer-dir", func() { c.BufferDir = f.bufferDir })
		o.Set("push-timeout", func() { c.PushTimeout = f.pushTimeout })
		o.Set("push-attempt-timeout", func() { c.AttemptTimeout = f.attemptTimeout })
		o.Set("push-batch", func() { c.MaxBatch = f.batch })
		o.Set("push-linger", func() { c.Linger = f.linger })
		o.Set("push-concurrency", func() { c.MaxConcurrent = f.concurrency })
		o.Set("push-max-pending", func() { c.MaxPending = f.maxPending })
		o.Netns(&c.NetNS)
	})
	if err != nil {
		return nil, nil, err
	}
	return drivers.Opened(New(c))
}
