package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// builtinScenario is a built-in as a scenario file can name it.
type builtinScenario struct {
	command string // leader-kill, fsync-audit
	driver  string
}

func (b builtinScenario) name() string { return b.driver + "/" + b.command }

// builtinScenarios lists every built-in for every driver that has it.
func builtinScenarios() []builtinScenario {
	var out []builtinScenario
	for _, p := range profiles() {
		out = append(out, builtinScenario{"leader-kill", p.Name()})
		if _, ok := p.Durability(); ok {
			out = append(out, builtinScenario{"fsync-audit", p.Name()})
		}
	}
	return out
}

// findScenario accepts kafka/leader-kill, leader-kill for the first
// driver's, and a name as a run prints it, with its variant:
// kafka/leader-kill/acks=all. A variant is settings of the built-in,
// key=value[,key=value], each key one of its flags; they are returned
// for the caller to set, so that the run prints the same name back.
func findScenario(name string) (builtinScenario, map[string]string, error) {
	base, variant := name, ""
	if parts := strings.SplitN(name, "/", 3); len(parts) == 3 {
		base, variant = parts[0]+"/"+parts[1], parts[2]
	}
	var names []string
	for _, b := range builtinScenarios() {
		if b.name() == base || (b.command == base && b.driver == profileNames()[0]) {
			settings, err := variantSettings(b, variant)
			if err != nil {
				return builtinScenario{}, nil, fmt.Errorf("scenario %q: %w", name, err)
			}
			return b, settings, nil
		}
		names = append(names, b.name())
	}
	return builtinScenario{}, nil, fmt.Errorf("no built-in scenario %q: the built-ins are %s (a run's name such as kafka/leader-kill/acks=all is taken too)", name, strings.Join(names, ", "))
}

// variantSettings reads a name's variant (acks=all) as settings of b's
// command.
func variantSettings(b builtinScenario, variant string) (map[string]string, error) {
	out := map[string]string{}
	if variant == "" {
		return out, nil
	}
	target, _ := builtinCommand(b.command)
	for _, kv := range strings.Split(variant, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q after %s is not a setting key=value (as in kafka/leader-kill/acks=all)", kv, b.name())
		}
		if k == "driver" || target.Flags().Lookup(k) == nil {
			return nil, fmt.Errorf("%q is not a setting of %s: see ackcheck %s --help", k, b.name(), b.command)
		}
		if o, owned := flagOwners()[k]; owned && o != b.driver {
			return nil, fmt.Errorf("%q is a setting of the %s driver, not of %s", k, o, b.driver)
		}
		out[k] = v
	}
	return out, nil
}

func newScenarioCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "List the built-in scenarios, or print one as a scenario file for run -f",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, b := range builtinScenarios() {
				target, _ := builtinCommand(b.command)
				fmt.Fprintf(cmd.OutOrStdout(), "%-22s %s\n", b.name(), target.Short)
			}
			return nil
		},
	}
	var showDuration time.Duration
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario (kafka/leader-kill, nats/fsync-audit, ...) as a scenario file",
		Long: `show prints a built-in scenario as a file that ackcheck run -f takes: the
same settings, one per line, keyed by flag name, each with its help as a
comment. Running the file reproduces the built-in; edit it to make your own
check, and keep it in your repository. The settings of your machine
(--cluster-dir, --out) stay comments: give them on the command line.

NAME is as scenario list prints it, or as a run prints it, with its
variant (kafka/leader-kill/acks=1 writes acks: 1). With --duration the
file is the built-in's at that duration: its times (kill-at, loss-at and
the schedule) are where the built-in puts them for it, a third in.`,
		Example: `  ackcheck scenario show kafka/leader-kill --duration 90s > lk.yaml
  ackcheck run -f lk.yaml --cluster-dir /tmp/kafka --out runs/lk`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, settings, err := findScenario(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("duration") {
				if showDuration <= 0 {
					return fmt.Errorf("--duration %s: give the load's length, above 0", showDuration)
				}
				settings["duration"] = drivers.HumanDuration(showDuration)
			}
			data, err := scenarioFileWith(b, settings)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	show.Flags().DurationVar(&showDuration, "duration", 0, "write the scenario for a load this long, its fault times scaled as the built-in scales them (default: the built-in's)")
	run := &cobra.Command{
		Use:   "run NAME [flags of the built-in]",
		Short: "Run a built-in scenario by name (kafka/leader-kill, or a run's name such as kafka/leader-kill/acks=all)",
		Long: `run runs a built-in scenario by the name scenario list or a run prints:
ackcheck scenario run kafka/leader-kill --cluster-dir D --out runs/x is
ackcheck leader-kill --driver kafka --cluster-dir D --out runs/x, and a
variant in the name is a setting (kafka/leader-kill/acks=1 adds --acks 1).
Every flag after the name is the built-in's (see ackcheck leader-kill
--help, ackcheck fsync-audit --help).`,
		Example: `  ackcheck scenario run kafka/leader-kill/acks=all --cluster-dir /tmp/kafka --duration 90s --out runs/lk`,
		// The built-in parses its own flags.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			argv, err := scenarioArgs(args[0], args[1:])
			if err != nil {
				return err
			}
			// A root of its own runs the built-in as if typed: its flags
			// checked as every command's are (refuseEveryCommand).
			sub := newRoot(cmd.OutOrStdout(), cmd.ErrOrStderr())
			sub.SetArgs(argv)
			return sub.ExecuteContext(cmd.Context())
		},
	}
	cmd.AddCommand(list, show, run)
	return cmd
}

// scenarioArgs is the command line that runs the built-in name with the
// flags rest: its command, its driver, its variant's settings, then rest.
// A flag of rest that the name already sets is refused, not overridden:
// the run would print another name than the one asked for.
func scenarioArgs(name string, rest []string) ([]string, error) {
	b, settings, err := findScenario(name)
	if err != nil {
		return nil, err
	}
	settings["driver"] = b.driver
	for _, a := range rest {
		k, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, set := settings[k]; set && strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("--%s: the scenario name %s sets it to %s; drop the flag or name another variant", k, name, settings[k])
		}
	}
	argv := []string{b.command}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--"+k+"="+settings[k])
	}
	return append(argv, rest...), nil
}

// scenarioFileOf renders a built-in as a scenario file.
func scenarioFileOf(b builtinScenario) ([]byte, error) { return scenarioFileWith(b, nil) }

// scenarioFileWith is scenarioFileOf with settings (a variant, a
// duration) in place of the built-in's defaults; the times the built-in
// derives from --duration follow settings' duration, as the built-in
// command computes them.
func scenarioFileWith(b builtinScenario, settings map[string]string) ([]byte, error) {
	target, _ := builtinCommand(b.command)
	fs := target.Flags()
	dur, err := durationSetting(fs, settings, "duration")
	if err != nil {
		return nil, err
	}
	effective := map[string]string{"driver": b.driver}
	for k, v := range settings {
		effective[k] = v
	}
	var extra, own string
	switch b.command {
	case "leader-kill":
		// The built-in's default kill time, written out: a file that
		// changes --duration keeps the kill where it says.
		killAt := dur / 3
		if v, ok := settings["kill-at"]; ok {
			if killAt, err = time.ParseDuration(v); err != nil {
				return nil, fmt.Errorf("kill-at %q: %w", v, err)
			}
		}
		effective["kill-at"] = drivers.HumanDuration(killAt)
		own = "kill-at 30s"
		restart, err := durationSetting(fs, settings, "restart-after")
		if err != nil {
			return nil, err
		}
		sc := scenarios.LeaderKill{Topic: fs.Lookup("topic").DefValue, KillAt: killAt, RestartAfter: restart}
		var steps []string
		for _, s := range sc.Steps() {
			steps = append(steps, s.String())
		}
		extra = fmt.Sprintf("# As a schedule of ackcheck run, the same faults are:\n#   fault: %q\n", strings.Join(steps, "; "))
	case "fsync-audit":
		if _, ok := settings["loss-at"]; !ok {
			effective["loss-at"] = drivers.HumanDuration(dur / 3)
		}
		own = "loss-at 30s"
		// Each audit writes a topic of its own, named after the time;
		// a fixed name would read an earlier audit's messages back.
		effective["topic"] = ""
	}
	header := fmt.Sprintf(`# %s: ackcheck's built-in scenario as a scenario file (ackcheck scenario show %s).
# Run it:   ackcheck run -f FILE --cluster-dir DIR --out runs/NAME
# The same: ackcheck %s --driver %s --cluster-dir DIR --out runs/NAME
# (ackcheck %s -f FILE also takes the scenario's own flags, --%s.)
# Keys are the flags of ackcheck %s; a flag given on the command line
# overrides its key. An unknown key or a wrong value is an error naming it.
%s`, b.name(), b.name(), b.command, b.driver, b.command, own, b.command, extra)
	return showScenario(target, b.driver, effective, header, settings), nil
}

// durationSetting is the duration flag name as settings give it, or else
// its default in fs.
func durationSetting(fs *pflag.FlagSet, settings map[string]string, name string) (time.Duration, error) {
	text := fs.Lookup(name).DefValue
	if v, ok := settings[name]; ok {
		text = v
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", name, text, err)
	}
	return d, nil
}
