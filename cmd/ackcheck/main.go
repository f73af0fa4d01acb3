// Command ackcheck proves whether a message broker keeps every message it
// acknowledged. See README.md.
//
// Exit status: 0 when the verdict passes, 1 when it fails, 2 for errors
// (bad flags, unreachable brokers, unreadable ledger).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitPass  = 0
	exitFail  = 1
	exitError = 2
)

// errVerdictFailed marks a run that worked and whose verdict is "fail".
var errVerdictFailed = errors.New("verdict: fail")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the command line and returns the exit status.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitPass
	case errors.Is(err, errVerdictFailed):
		return exitFail
	default:
		fmt.Fprintf(stderr, "ackcheck: %v\n", err)
		return exitError
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ackcheck",
		Short: "Prove whether a message broker keeps every message it acknowledged",
		Long: `ackcheck sends a paced, open-loop load to a broker, records every
acknowledged message ID in a ledger on disk, reads every partition back and
reports what was lost, corrupted, duplicated, reordered or never sent.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newVerifyCmd(), newBenchCmd(), newClusterCmd(), newLeaderKillCmd(), newHealCmd(), newReportCmd(), newLazyFSCmd(), newFsyncAuditCmd())
	return root
}
