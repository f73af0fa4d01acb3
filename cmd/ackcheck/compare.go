package main

import (
	"fmt"
	"os"

	"github.com/ackcheck/ackcheck/matrix"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "compare RUN...",
		Short: "Put existing run directories or matrix cells side by side in a scorecard",
		Long: `compare lays out existing runs in the scorecard of ackcheck matrix: one row
per measure, one column per argument. An argument is a run directory (the
--out of a run: a column of one run) or a matrix cell,
DIR/<system>/<setting>/<scenario> (a column of its repeats). Every figure
is read from the run's result.json and links to its run.

Without --out the scorecard is printed as Markdown, its links relative to
the current directory; with --out it is written there as scorecard.md,
scorecard.html and scorecard.json.`,
		Example: `  ackcheck compare runs/matrix/kafka/acks-all/kafka-leader-kill runs/matrix/kafka/acks-1/kafka-leader-kill
  ackcheck compare runs/monday runs/tuesday --out runs/compare`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cols, err := matrix.CompareColumns(args)
			if err != nil {
				return err
			}
			dir := out
			if dir == "" {
				dir = "."
			}
			card := matrix.Build(dir, "ackcheck compare", []matrix.TableSpec{{Title: "compared runs", Columns: cols}})
			if out == "" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), card.Markdown())
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			if err := card.Write(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "scorecard: %s/%s (and %s, %s)\n", out, matrix.CardMarkdown, matrix.CardHTML, matrix.CardJSON)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write scorecard.md, scorecard.html and scorecard.json into (default: print Markdown)")
	return cmd
}
