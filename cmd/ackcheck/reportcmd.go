package main

import (
	"fmt"

	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var (
		cf  checkFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Regenerate result.json, report.html, report.md and the .hlog files of a run",
		Long: `report judges a run directory again from its ledger alone, using its last
read-back (no broker is needed), and rewrites result.json, report.html (self-
contained, with SVG charts), report.md, publish.hlog and e2e.hlog. --junit
writes the checks as JUnit XML.

The verdict is judged by the run's own checks (saved in run.json). A check
flag given here (--ordered, --no-duplicates, --max-no-ack, --max-ready,
--max-in-sync) replaces the run's; the change is printed and recorded in
result.json (check_changes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := runDirSettings(out, "report on")
			if err != nil {
				return err
			}
			return judgeWithJUnit(cmd, out, cf.junit, "report", func() (*verifier.Result, error) {
				return runner.Report(cmd.Context(), out, cf.rejudge(cmd, s, "report"))
			})
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "run directory of an earlier run")
	return cmd
}

// runDirSettings is the run.json of --out, the directory of the run the
// command is to act on (what: "heal", "report on"), which is required.
func runDirSettings(out, what string) (runner.Settings, error) {
	if out == "" {
		return runner.Settings{}, fmt.Errorf("--out is required: the directory of the run to %s", what)
	}
	return runner.ReadSettings(out)
}
