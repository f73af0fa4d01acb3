package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/spf13/cobra"
)

func newHealCmd() *cobra.Command {
	var (
		kf            driverFlags
		out           string
		acceptUnknown bool
		clusterFile   string
	)
	cmd := &cobra.Command{
		Use:   "heal",
		Short: "Undo what an earlier run's faults left applied",
		Long: `heal replays the run directory's heal journal (heal.jsonl): everything a
fault changed and no one put back (a paused broker, a broker left down, a
topic setting, a broker config file, a network rule of a cluster started
with --netns or on a cluster file's SSH nodes) is put back, newest first; after removing network rules it
probes every path between the nodes and from the client, and fails if one
is still cut. A run undoes
its faults itself when it ends or is interrupted; heal is for a run whose
ackcheck was killed. Every undo is idempotent: healing twice is harmless.
Last, it removes the guard route (prohibit <subnet>) of a namespaces'
subnet none of whose namespaces is left (deleted by hand, or by a crash
of cluster down).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := runDirSettings(out, "heal")
			if err != nil {
				return err
			}
			j, err := faults.OpenJournal(runner.JournalPath(out))
			if err != nil {
				return err
			}
			defer j.Close()
			_, pending := j.Pending()
			if len(pending) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to heal")
				return releaseGuards(cmd.Context(), cmd.OutOrStdout())
			}
			inj := &faults.Injector{Topic: s.Topic.Name, Journal: j, Logf: func(f string, a ...any) { fmt.Fprintf(cmd.OutOrStdout(), f+"\n", a...) }}
			// Network rules in namespaces are found again by their
			// prefix, and rules on SSH nodes through the nodes' runners:
			// removing them needs no broker that answers (a partitioned
			// one may not), so the driver is made only for other undos.
			if faults.NeedsNodes(pending) {
				var src runner.FaultSource
				if s.Faults != nil {
					src = *s.Faults
				}
				if clusterFile != "" {
					src.ClusterDir, src.ClusterFile = "", clusterFile
				}
				opened, err := openNodes(cmd.Context(), src, acceptUnknown)
				if err != nil {
					return err
				}
				if opened != nil {
					defer opened.close()
					inj.Nodes = opened.nodes
				}
			}
			if faults.NeedsCluster(pending) {
				d, _, err := newDriver(s.Driver, cmd.Flags(), &kf, s.DriverSettings)
				if err != nil {
					return err
				}
				defer d.Close()
				inj.Driver = d
				if p, err := profileNamed(s.Driver); err == nil {
					inj.ConfigFsync = p.ConfigFsync()
				}
			}
			healed, err := inj.Heal(cmd.Context())
			for _, h := range healed {
				fmt.Fprintf(cmd.OutOrStdout(), "healed: %s\n", h)
			}
			if err != nil {
				return fmt.Errorf("heal incomplete (run it again once the cause is fixed): %w", err)
			}
			return releaseGuards(cmd.Context(), cmd.OutOrStdout())
		},
	}
	kf.register(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "run directory of the run to heal")
	cmd.Flags().StringVar(&clusterFile, "cluster-file", "", "the cluster file of the run's SSH nodes, when it is no longer where the run's settings say")
	cmd.Flags().BoolVar(&acceptUnknown, "accept-unknown-host-keys", false, "accept SSH host keys that known_hosts lacks (never changed ones)")
	return cmd
}

// releaseGuards removes the guard routes no network namespace needs any
// more (netns.ReleaseUnused) and says which. A machine without ip has
// made no namespace, and so has no guard.
func releaseGuards(ctx context.Context, w io.Writer) error {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil
	}
	released, err := netns.ReleaseUnused(ctx)
	for _, sn := range released {
		fmt.Fprintf(w, "healed: removed the guard route prohibit %s (no network namespace of ackcheck's is left in it)\n", sn)
	}
	if err != nil {
		return fmt.Errorf("remove the guard routes of subnets no namespace uses: %w", err)
	}
	return nil
}
