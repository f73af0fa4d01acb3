package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/spf13/pflag"
)

// The bounds of a run's inputs, each refused before any broker is
// touched or file written (issue 24, point 7). refuse applies them; what
// depends on the driver (checkMessageSize) is applied as soon as the
// driver is known, still before it connects.

// placementFlag is --placement's value (load.ParsePlacement).
type placementFlag struct{ p *load.Placement }

func (v placementFlag) Set(s string) error {
	p, err := load.ParsePlacement(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func (v placementFlag) String() string {
	if v.p == nil {
		return load.RoundRobin
	}
	return v.p.String()
}

func (placementFlag) Type() string { return "placement" }

// partitionLimits lists each driver's partition limit for --partitions'
// help: "kafka 1000000, nats 10000, ...".
func partitionLimits() string {
	var parts []string
	for _, p := range profiles() {
		n, _ := drivers.MaxPartitions(p)
		parts = append(parts, fmt.Sprintf("%s %d", p.Name(), n))
	}
	return strings.Join(parts, ", ")
}

// checkPartitions refuses a --partitions the driver's profile does not
// ask its broker for (drivers.MaxPartitions: each profile says its own
// limit and why). With p nil, the driver is not known yet: it refuses
// what no driver asks for. --partitions 1000000000 was once sent to a
// broker, which grew to 7.6 GB; the limits keep that from happening again
// while letting each broker go as far as it goes. A topic that already
// exists is used as it is, whatever its count: the limit is on what
// ackcheck asks to be created.
func checkPartitions(p drivers.Profile, n int) error {
	if p == nil {
		var most drivers.Profile
		mostN := 0
		for _, q := range profiles() {
			if m, _ := drivers.MaxPartitions(q); most == nil || m > mostN {
				most, mostN = q, m
			}
		}
		if n < 1 || n > mostN {
			return fmt.Errorf("--partitions %d: use 1 to %d (no driver asks for more; %s's limit)", n, mostN, most.Name())
		}
		return nil
	}
	if max, why := drivers.MaxPartitions(p); n < 1 || n > max {
		return fmt.Errorf("--partitions %d: the %s driver asks for 1 to %d partitions: %s", n, p.Name(), max, why)
	}
	return nil
}

// minProgressInterval is the shortest --progress-interval: at 1ns the
// progress goroutine printed 200,000 lines in 2 s.
const minProgressInterval = 100 * time.Millisecond

// deadline is the value of a deadline flag (--max-no-ack, --max-ready,
// --max-in-sync): a positive duration, or "none" for no deadline. 0 and
// negative durations are refused rather than read as "none": a user who
// typed 0 asked for something stricter than any deadline, not for none.
// "none" is how verify and report drop a deadline the run was judged by.
type deadline struct{ d *time.Duration }

func (v deadline) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		*v.d = 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, or none: %w", err)
	}
	if d <= 0 {
		return fmt.Errorf("%s: a deadline must be above 0 (0 is no deadline, not a strict one): give the longest you accept, such as 1s, or none for no deadline", s)
	}
	*v.d = d
	return nil
}

func (v deadline) String() string {
	if v.d == nil || *v.d == 0 {
		return "none"
	}
	return v.d.String()
}

func (v deadline) Type() string { return "deadline" }

// zeroMeans are the duration flags whose 0 is a value of its own, never
// replaced: lazyfs lose --wait-closed 0 loses at once, without waiting
// for files to be closed.
var zeroMeans = map[string]bool{"wait-closed": true}

// refuseDurations refuses every duration flag given on the command line
// (or by a scenario or workload file) as zero or negative. Left as they
// are, ackcheck and its drivers replace such a value with the default
// (--read-idle-timeout 0 read for 60s), or a deadline of 0 turns the
// check off: the user asked for something else. A flag not given keeps
// its default.
func refuseDurations(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "duration" {
			return
		}
		d, perr := time.ParseDuration(f.Value.String())
		if perr != nil || d > 0 || (d == 0 && zeroMeans[f.Name]) {
			return
		}
		switch {
		case f.DefValue != "" && f.DefValue != "0s":
			err = fmt.Errorf("--%s %s: must be above 0: give a positive duration such as 1s, or leave the flag out for its default, %s", f.Name, f.Value, f.DefValue)
		default:
			err = fmt.Errorf("--%s %s: must be above 0: give a positive duration such as 1s, or leave the flag out for its default", f.Name, f.Value)
		}
	})
	return err
}

// refuseEveryCommand is what every command checks before it does
// anything: its duration flags, and a --junit it would write only at its
// end (verify's after the whole read-back).
func refuseEveryCommand(fs *pflag.FlagSet) error {
	if err := refuseDurations(fs); err != nil {
		return err
	}
	if j := fs.Lookup("junit"); j != nil && j.Changed {
		out := ""
		if o := fs.Lookup("out"); o != nil {
			out = o.Value.String()
		}
		return checkJunit(j.Value.String(), out)
	}
	return nil
}

// checkOut refuses an --out that cannot become a new run directory: a
// file, a directory already holding a run, or a place ackcheck cannot
// write. The runner claims the directory for real (runner.claimOut); this
// only says so before the topic is made.
func checkOut(out string) error {
	st, err := os.Stat(out)
	if errors.Is(err, syscall.ENOTDIR) {
		err = os.ErrNotExist // a file on the way: the walk below names it
	}
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("--out %s is a file, not a directory: give a new directory for the run", out)
	case err == nil:
		if _, err := os.Stat(runner.LedgerDir(out)); err == nil {
			return fmt.Errorf("%s already holds a run: choose a new --out, or use `ackcheck verify --out %s` to check that run again", out, out)
		}
		return writable("--out "+out, out)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--out %s: %w", out, err)
	}
	// The run makes the directory and its missing parents: the nearest
	// existing one must be a directory it can write in.
	parent := filepath.Dir(filepath.Clean(out))
	for {
		st, err := os.Stat(parent)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("--out %s: %s is a file, not a directory: give --out in a directory", out, parent)
			}
			return writable("--out "+out, parent)
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("--out %s: %w", out, err)
		}
		next := filepath.Dir(parent)
		if next == parent {
			return fmt.Errorf("--out %s: no part of the path exists", out)
		}
		parent = next
	}
}

// checkJunit refuses a --junit the run could not write at its end: a
// directory, a file in a directory that does not exist, a place ackcheck
// cannot write. The JUnit file may go into the run directory itself,
// which the run creates.
func checkJunit(junit, out string) error {
	if junit == "" {
		return nil
	}
	if st, err := os.Stat(junit); err == nil {
		if st.IsDir() {
			return fmt.Errorf("--junit %s is a directory: name the file to write, such as %s", junit, filepath.Join(junit, "ackcheck.xml"))
		}
		return writable("--junit "+junit, junit)
	}
	dir := filepath.Dir(filepath.Clean(junit))
	if out != "" && dir == filepath.Clean(out) {
		return nil // the run directory: checkOut checks where it goes
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("--junit %s: its directory %s does not exist; create it first", junit, dir)
	case !st.IsDir():
		return fmt.Errorf("--junit %s: %s is a file, not a directory: give --junit in a directory", junit, dir)
	}
	return writable("--junit "+junit, dir)
}

// writable says whether this process may write path (a read-only mount,
// or permissions), by access(2): nothing is created to find out.
func writable(what, path string) error {
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%s: cannot write %s (%v): give a path this user can write", what, path, err)
	}
	return nil
}

// checkMessageSize refuses a --message-size the driver's protocol does not
// carry under the broker's and client's default limits
// (drivers.Profile.MaxMessageSize). With p nil, the driver is not known
// yet: it refuses what no driver carries.
func checkMessageSize(p drivers.Profile, size int) error {
	if p == nil {
		var most drivers.Profile
		for _, q := range profiles() {
			if most == nil || q.MaxMessageSize() > most.MaxMessageSize() {
				most = q
			}
		}
		if max := most.MaxMessageSize(); size > max {
			return fmt.Errorf("--message-size %d: no driver sends more than %d bytes a message (%s, %s's default limit): use less",
				size, max, drivers.ApproxBytes(uint64(max)), most.Name())
		}
		return nil
	}
	if max := p.MaxMessageSize(); size > max {
		return fmt.Errorf("--message-size %d: the %s driver sends at most %d bytes a message (%s, its protocol's default limit): use at most %d",
			size, p.Name(), max, drivers.ApproxBytes(uint64(max)), max)
	}
	return nil
}

// checkMemory refuses a load whose values could take more memory than
// the machine has available (load.Config.MemoryEstimate). available is in
// bytes; from says where it was read, for the message.
func checkMemory(lc load.Config, available uint64, from string) error {
	est := lc.MemoryEstimate()
	if est <= available {
		return nil
	}
	lc = lc.WithDefaults()
	fix := "lower --message-size: not even one value fits"
	if fits := available / load.ValueCopies / uint64(max(lc.MessageSize, 1)); fits > 0 {
		fix = fmt.Sprintf("lower --max-in-flight to at most %d, or --message-size", fits)
	}
	return fmt.Errorf("--max-in-flight %d x --message-size %d: the values in flight could take about %s (%d copies of each), more than the %s of memory available (%s): %s",
		lc.MaxInFlight, lc.MessageSize, drivers.ApproxBytes(est), load.ValueCopies, drivers.ApproxBytes(available), from, fix)
}

// availableMemory is what the machine can give a new process without
// swapping: MemAvailable of /proc/meminfo (MemTotal on kernels without
// it). ok is false where there is no /proc/meminfo: the check is then
// skipped, and the caller says so.
func availableMemory() (bytes uint64, from string, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	var total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemAvailable:":
			return kb << 10, "MemAvailable in /proc/meminfo", true
		case "MemTotal:":
			total = kb << 10
		}
	}
	if total > 0 {
		return total, "MemTotal in /proc/meminfo", true
	}
	return 0, "", false
}

// validate bounds bench --peer's workloads as refuse bounds a run's:
// Kafka's message size, the partitions, and the memory of the values in
// flight, plus, with the in-process kfake (no --brokers), every record,
// which kfake keeps in memory.
func (s peerShape) validate(available uint64, from string) error {
	switch {
	case s.Messages < 1:
		return fmt.Errorf("--messages %d: use at least 1", s.Messages)
	}
	// bench --peer measures the brokers list's first (see below).
	if err := checkPartitions(profiles()[0], s.Partitions); err != nil {
		return err
	}
	// Its load settings are bounded where every load's are; each is a
	// flag of bench --peer, so a 0 is the user's, not a default.
	lc := load.Config{Rate: float64(s.Messages), Duration: time.Second, MessageSize: s.Size, Producers: s.Producers, MaxInFlight: s.MaxInFlight}
	if err := lc.CheckSettings(func(string) bool { return true }); err != nil {
		return err
	}
	// The peer bench's broker is the brokers list's first (--driver's
	// default): its driver is what bench --peer measures.
	if err := checkMessageSize(profiles()[0], s.Size); err != nil {
		return err
	}
	if len(s.Brokers) == 0 {
		held := uint64(s.Messages) * uint64(s.Size)
		if held > available {
			return fmt.Errorf("--messages %d x --message-size %d: the in-process kfake would hold about %s, more than the %s of memory available (%s): lower --messages or --message-size, or give --brokers",
				s.Messages, s.Size, drivers.ApproxBytes(held), drivers.ApproxBytes(available), from)
		}
		available -= held
	}
	return checkMemory(lc, available, from)
}
