package drivers

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"
)

// Profile is everything ackcheck knows about one kind of broker beyond the
// Driver seam: the flags its users know it by, how a saved run reopens
// it, what the built-in scenarios expect of it, which durability settings
// an fsync audit compares, and how its servers' configuration files switch
// fsync. Each broker package declares one; the command line keeps the one
// list of them, and no other package names a broker.
//
// A broker with a local test cluster also implements cluster.Provider
// (declared there, so that this seam does not depend on launchers).
type Profile interface {
	// Name is the value of --driver and of a cluster file's broker key.
	Name() string
	// NewFlags returns a fresh, unregistered set of the broker's own flags.
	// Every command that connects a driver registers one.
	NewFlags() Flags
	// AddressFlag is the flag that takes the cluster's client addresses
	// (a cluster file's brokers list fills it).
	AddressFlag() string
	// Expect is what the broker's documentation says a built-in scenario
	// does to it, under the settings of d: a variant that names those
	// settings in the scenario's name ("acks=all", or ""), and the
	// expectation quoted in reports.
	Expect(s Scenario, d Driver) (variant, expect string)
	// Durability is what the fsync audit compares on this broker; ok is
	// false when it has no audit.
	Durability() (d Durability, ok bool)
	// ConfigFsync is the edit of a server's configuration file that turns
	// fsync-before-ack on or off (fsync-on brokers); nil when the broker
	// has none.
	ConfigFsync() *ConfigEdit
	// MaxMessageSize is the largest --message-size (value bytes) the
	// driver sends under the broker's and its client's default limits;
	// the command line refuses a larger one before anything is created,
	// since every send would be rejected, or worse, held in memory.
	MaxMessageSize() int
}

// Flags are one broker's command-line flags, bound to one command.
type Flags interface {
	// Register adds the flags to fs.
	Register(fs *pflag.FlagSet)
	// Open validates the flags and connects a driver. saved is the driver
	// part of an earlier run.json (nil for a new run); every flag the user
	// changed on fs goes on top of it. It returns the driver and its
	// settings as run.json keeps them, secrets removed.
	Open(fs *pflag.FlagSet, saved json.RawMessage) (Driver, any, error)
}

// Scenario names a built-in scenario for Profile.Expect.
type Scenario string

const (
	// LeaderKill: SIGKILL of the node that leads the most partitions,
	// restarted later on its data.
	LeaderKill Scenario = "leader-kill"
)

// Durability is a broker's answers to "when does an ack wait for fsync?",
// as the fsync audit runs them.
type Durability struct {
	Settings []DurabilitySetting
	// Check refuses a driver whose settings would make the audit measure
	// something else (Kafka's acks=1 measures replication); nil accepts
	// every driver.
	Check func(Driver) error
}

// DurabilitySetting is one durability setting under audit.
type DurabilitySetting struct {
	Name  string `json:"name"`  // short, used in paths and topic names
	Label string `json:"label"` // for people
	// TopicConfigs are applied to the setting's topic at creation.
	TopicConfigs map[string]string `json:"topic_configs,omitempty"`
	// ServerFsync, when set, is the servers' own fsync switch this setting
	// needs (NATS sync_interval: always, Pulsar journalSyncData): the audit
	// switches a local cluster to it before the setting's run.
	ServerFsync *bool `json:"server_fsync,omitempty"`
	// ExpectLoss is the documented expectation: acks do not wait for
	// fsync, so a power loss of every replica can lose acked messages.
	ExpectLoss bool   `json:"expect_loss"`
	Why        string `json:"why"`
}

// ConfigEdit switches fsync-before-ack in a server's configuration file.
type ConfigEdit struct {
	// Setting names what the edit changes, for reports.
	Setting string
	// Edit returns content with the setting on or off; other lines stay
	// as they are.
	Edit func(content string, on bool) (string, error)
}

// DecodeSaved decodes the driver part of an earlier run.json into c; nil
// or empty saved (a new run) leaves c as it is.
func DecodeSaved(saved json.RawMessage, c any) error {
	if len(saved) == 0 {
		return nil
	}
	if err := json.Unmarshal(saved, c); err != nil {
		return fmt.Errorf("run.json driver settings: %w", err)
	}
	return nil
}

// Embedder is implemented by a profile whose broker can run inside this
// process, for `ackcheck demo --embedded`: a demonstration of the tool,
// never a test of a broker.
type Embedder interface {
	// Embed starts a cluster of n brokers in this process. What it returns
	// also implements faults.Nodes (a kill and a start of one broker):
	// declared there, since faults depends on this package.
	Embed(n int) (Embedded, error)
}

// Embedded is a broker cluster running inside this process.
type Embedded interface {
	// Addrs are its client addresses: the value of the profile's
	// AddressFlag.
	Addrs() []string
	// Where says what it is, for reports.
	Where() string
	Close()
}

// TargetWords is implemented by a profile whose broker has its own words
// for fault targets: word -> ackcheck's target kind ("owner" -> "leader").
// A schedule accepts them for every driver.
type TargetWords interface {
	TargetWords() map[string]string
}

// NodeFault is what a fault does to one of a broker's nodes, in the words
// a profile describes its broker's answer with (FaultExpecter). Package
// faults gives each of its actions that acts on a node's process one of
// these (its action table), so that a profile says what its broker does
// without importing the fault machinery, which sits above drivers.
type NodeFault string

const (
	NodeKilled    NodeFault = "killed"     // SIGKILL
	NodeStopped   NodeFault = "stopped"    // SIGTERM, a clean shutdown
	NodeRestarted NodeFault = "restarted"  // started again on its own data
	NodePaused    NodeFault = "paused"     // SIGSTOP
	NodeResumed   NodeFault = "resumed"    // SIGCONT
	NodePowerLost NodeFault = "power-lost" // unsynced writes lost, killed, started again
)

// DataFiler is implemented by profiles that name the broker's data files:
// the file faults (bitflip, truncate, stale) written without a glob pick
// from these, matched against file names anywhere under a node's data
// dir.
type DataFiler interface {
	DataFiles() []string
}

// DataFilesOf is p's data-file globs, nil when it names none.
func DataFilesOf(p Profile) []string {
	if df, ok := p.(DataFiler); ok {
		return df.DataFiles()
	}
	return nil
}

// FaultExpecter is implemented by a profile that says, in its broker's own
// terms and under the settings of d, what a fault does to a node. "" keeps
// the fault's generic expectation.
type FaultExpecter interface {
	ExpectFault(f NodeFault, d Driver) string
}

// PartitionLimiter is implemented by a profile that says how many
// partitions the broker can be asked for, and why that many. The command
// line refuses a larger --partitions before anything is created, naming
// the limit and its reason; a topic that exists is used with its own
// count, whatever the limit. A profile without it gets DefaultMaxPartitions.
type PartitionLimiter interface {
	// MaxPartitions is the most partitions ackcheck asks the broker to
	// make; why says where the number comes from, as a clause that
	// follows "the <broker> driver asks for at most N partitions: ".
	MaxPartitions() (n int, why string)
}

// DefaultMaxPartitions is the partition limit of a profile that states
// none (PartitionLimiter): a bound found by trying, not a broker's own.
const DefaultMaxPartitions = 10_000

// MaxPartitions is p's partition limit and its reason: the profile's own
// (PartitionLimiter), else DefaultMaxPartitions.
func MaxPartitions(p Profile) (int, string) {
	if l, ok := p.(PartitionLimiter); ok {
		return l.MaxPartitions()
	}
	return defaultMaxPartitions()
}

// defaultMaxPartitions is the limit of a profile that states none.
func defaultMaxPartitions() (int, string) {
	return DefaultMaxPartitions, "its profile states no limit of its own, and 10,000 is the most ackcheck has run with it"
}
