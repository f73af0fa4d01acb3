package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/scenarios"
	"github.com/spf13/cobra"
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

// findScenario accepts kafka/leader-kill, or leader-kill for the first
// driver's.
func findScenario(name string) (builtinScenario, error) {
	var names []string
	for _, b := range builtinScenarios() {
		if b.name() == name || (b.command == name && b.driver == profileNames()[0]) {
			return b, nil
		}
		names = append(names, b.name())
	}
	return builtinScenario{}, fmt.Errorf("no built-in scenario %q: the built-ins are %s", name, strings.Join(names, ", "))
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
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario (kafka/leader-kill, nats/fsync-audit, ...) as a scenario file",
		Long: `show prints a built-in scenario as a file that ackcheck run -f takes: the
same settings, one per line, keyed by flag name, each with its help as a
comment. Running the file reproduces the built-in; edit it to make your own
check, and keep it in your repository. The settings of your machine
(--cluster-dir, --out) stay comments: give them on the command line.`,
		Example: `  ackcheck scenario show kafka/leader-kill > lk.yaml
  ackcheck run -f lk.yaml --cluster-dir /tmp/kafka --out runs/lk`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := findScenario(args[0])
			if err != nil {
				return err
			}
			data, err := scenarioFileOf(b)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.AddCommand(list, show)
	return cmd
}

// scenarioFileOf renders a built-in as a scenario file.
func scenarioFileOf(b builtinScenario) ([]byte, error) {
	target, _ := builtinCommand(b.command)
	fs := target.Flags()
	dur, err := time.ParseDuration(fs.Lookup("duration").DefValue)
	if err != nil {
		return nil, err
	}
	effective := map[string]string{"driver": b.driver}
	var extra, own string
	switch b.command {
	case "leader-kill":
		// The built-in's default kill time, written out: a file that
		// changes --duration keeps the kill where it says.
		killAt := dur / 3
		effective["kill-at"] = drivers.HumanDuration(killAt)
		own = "kill-at 30s"
		restart, _ := time.ParseDuration(fs.Lookup("restart-after").DefValue)
		sc := scenarios.LeaderKill{Topic: fs.Lookup("topic").DefValue, KillAt: killAt, RestartAfter: restart}
		var steps []string
		for _, s := range sc.Steps() {
			steps = append(steps, s.String())
		}
		extra = fmt.Sprintf("# As a schedule of ackcheck run, the same faults are:\n#   fault: %q\n", strings.Join(steps, "; "))
	case "fsync-audit":
		effective["loss-at"] = drivers.HumanDuration(dur / 3)
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
	return showScenario(target, b.driver, effective, header), nil
}
