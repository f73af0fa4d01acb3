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
	ctx, abort, stop := interrupts()
	code := execute(withAbort(ctx, abort), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interrupts turns the first SIGINT or SIGTERM into the cancellation of
// ctx (stop sending, drain, heal, keep what was recorded) and the second
// into closing abort (stop draining now, heal, exit). A third is the
// default action again: the process ends.
func interrupts() (ctx context.Context, abort <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ab := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sig:
				n++
				switch n {
				case 1:
					cancel()
				case 2:
					close(ab)
					signal.Reset(os.Interrupt, syscall.SIGTERM)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, ab, func() { signal.Stop(sig); close(done); cancel() }
}

type abortKey struct{}

// withAbort carries the second-interrupt channel to the commands.
func withAbort(ctx context.Context, abort <-chan struct{}) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

// abortOf returns the channel withAbort stored, or nil (never closed).
func abortOf(ctx context.Context) <-chan struct{} {
	ab, _ := ctx.Value(abortKey{}).(<-chan struct{})
	return ab
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
		// --version and "ackcheck version" print it (cobra's flag).
		Version: buildVersion(),
		// Every command's duration flags and --junit, before it does
		// anything (verify, report and the rest too); a run checks them
		// again after its scenario or workload file set more
		// (runFlags.refuse).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return refuseEveryCommand(cmd.Flags()) },
	}
	root.SetVersionTemplate("ackcheck {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newVerifyCmd(), newBenchCmd(), newClusterCmd(), newLeaderKillCmd(), newHealCmd(), newReportCmd(), newLazyFSCmd(), newFsyncAuditCmd(), newScenarioCmd(), newDemoCmd(), newMatrixCmd(), newCompareCmd(), newFaultsCmd())
	return root
}
