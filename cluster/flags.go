package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/pflag"
)

// FlagHelp says, for a launcher's --lazyfs and --netns help, what goes on
// lazyfs ("each node's data dir") and what runs where ("each node in a
// network namespace of its own at 10.213.0.N"); Entries registers
// --lazyfs-entries too.
type FlagHelp struct {
	LazyFS, Netns string
	Entries       bool
}

// Register registers the flags every launcher has (--lazyfs,
// --lazyfs-entries with h.Entries, --netns, --netns-subnet) into o.
func (o *Options) Register(fs *pflag.FlagSet, h FlagHelp) {
	fs.BoolVar(&o.LazyFS, "lazyfs", false, "put "+h.LazyFS+" on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	if h.Entries {
		fs.StringVar(&o.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (a directory change is durable only once its directory is fsynced; lazyfs's default) or journal (any fsync commits every change, as ext4 and XFS do)")
	}
	fs.BoolVar(&o.NetNS, "netns", false, "run "+h.Netns+", for network faults (at the first up; needs root, ip and nft)")
	RegisterNetnsSubnet(fs, &o.NetnsSubnet)
}

// SwitchFsync is a LaunchFlags.AfterUp for a cluster whose fsync setting
// is switched by a restart (FsyncSwitch): when its knob's flag was given
// and asks for on while c runs with the other value, it says so on
// progress (with the knob's How) and switches it.
func SwitchFsync(ctx context.Context, fs *pflag.FlagSet, c Local, on bool, progress io.Writer) error {
	s, ok := c.(FsyncSwitch)
	if !ok {
		return nil
	}
	k := s.FsyncKnob()
	if !fs.Changed(k.Flag) || s.FsyncOn() == on {
		return nil
	}
	fmt.Fprintf(progress, "switching %s to %s (%s) ...\n", k.Setting, k.Value(on), k.How)
	return s.SetFsync(ctx, on)
}

// Log4j2 is the console layout of the Java launchers' log4j2.properties,
// which their log oracles read; a launcher appends its own loggers.
const Log4j2 = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
`

// JavaArgs is a JVM's command line: the jars of libs, the log4j2
// configuration file log4j, and with heapMB > 0 a fixed heap of that many
// MiB, G1 and no display; then args.
func JavaArgs(libs, log4j string, heapMB int, args ...string) []string {
	out := []string{"-cp", filepath.Join(libs, "*"), "-Dlog4j2.configurationFile=" + log4j}
	if heapMB > 0 {
		heap := fmt.Sprintf("%dm", heapMB)
		out = append(out, "-Xms"+heap, "-Xmx"+heap, "-XX:+UseG1GC", "-Djava.awt.headless=true")
	}
	return append(out, args...)
}

// NeedJava fails, saying to install Java 17, when java is not on $PATH.
// what names what it runs.
func NeedJava(what string) error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found: install Java 17 to run " + what)
	}
	return nil
}

// FetchMaven fetches the runtime dependencies of pom (a Maven project
// file) from Maven Central with mvn into home/libs, and makes them durable
// (mvn does not fsync them: a power loss could leave a cut jar that a
// check of the cache takes for complete). what names it in errors.
func FetchMaven(ctx context.Context, home, pom, what string) error {
	if _, err := exec.LookPath("mvn"); err != nil {
		return fmt.Errorf("mvn not found: install Maven (and Java 17) to fetch %s from Maven Central", what)
	}
	if err := MkdirAllDurable(home, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, "pom.xml"), []byte(pom), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "dependency:copy-dependencies",
		"-DoutputDirectory=libs", "-DincludeScope=runtime")
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fetch %s with mvn: %w\n%s", what, err, Tail(out, 2000))
	}
	return SyncTree(filepath.Join(home, "libs"))
}

// Kit is a Launcher made of its parts: a broker's launcher is one Kit
// value (a type that embeds one, for more interfaces).
type Kit struct {
	// Name is the Kind.
	Name string
	// Short and Long are the Doc.
	Short, Long string
	// Flags returns a fresh set of the cluster command's own flags.
	Flags func() LaunchFlags
}

// Kind implements Launcher.
func (k Kit) Kind() string { return k.Name }

// Doc implements Launcher.
func (k Kit) Doc() (string, string) { return k.Short, k.Long }

// NewFlags implements Launcher.
func (k Kit) NewFlags() LaunchFlags { return k.Flags() }

// Choice is a flag with two values, Off and On (default and always), into
// *To: true for On. Any other value is refused when the flag is parsed.
type Choice struct {
	To      *bool
	Off, On string
}

func (c Choice) String() string {
	if c.To != nil && *c.To {
		return c.On
	}
	return c.Off
}

func (c Choice) Set(s string) error {
	if s != c.Off && s != c.On {
		return fmt.Errorf("use %s or %s", c.Off, c.On)
	}
	*c.To = s == c.On
	return nil
}

func (Choice) Type() string { return "string" }
