package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/cobra"
)

func newClusterCmd() *cobra.Command { return newClusterCmdOf(profiles()) }

// newClusterCmdOf is `ackcheck cluster`, with a command for the local
// cluster of each broker of brokers that has one.
func newClusterCmdOf(brokers brokerList) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, stop and inspect a local test cluster on 127.0.0.1",
	}
	for _, p := range brokers {
		if l, ok := launcherOf(p); ok {
			cmd.AddCommand(newClusterKindCmd(l))
		}
	}
	return cmd
}

// newClusterKindCmd is `ackcheck cluster <kind> up|down|status|start|stop`
// for one broker's local cluster.
func newClusterKindCmd(l cluster.Launcher) *cobra.Command {
	var (
		dir    string
		asJSON bool
		node   int32
	)
	lf := l.NewFlags()
	short, long := l.Doc()
	cmd := &cobra.Command{
		Use:   l.Kind() + " up|down|status|start|stop",
		Short: short,
		Long: long + `
down stops exactly the processes up started (SIGTERM, then SIGKILL after a
grace period), then the lazyfs mounts under them, if any, then the
cluster's network namespaces, if it was started with --netns.
status shows each node's PID, addresses and whether it answers.
start and stop act on one node (--node), for scripts and cluster files.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status", "start", "stop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			action := args[0]
			switch action {
			case "up", "down", "status", "start", "stop":
			default:
				return fmt.Errorf("unknown action %q: use up, down, status, start or stop", action)
			}
			if err := needCluster(dir, l.Kind(), action); err != nil {
				return err
			}
			c, err := lf.Open(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch action {
			case "up":
				fmt.Fprintf(out, "starting the local %s cluster in %s ...\n", l.Kind(), c.Dir())
				if err := c.Up(cmd.Context()); err != nil {
					return err
				}
				if err := lf.AfterUp(cmd.Context(), cmd.Flags(), c, out); err != nil {
					return err
				}
				line := "ready: --driver " + l.Kind()
				for _, f := range c.ClientFlags() {
					line += " --" + f.Name + " " + f.Value
				}
				fmt.Fprintln(out, line)
			case "down":
				if err := c.Down(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(out, "stopped")
				return nil
			case "start", "stop":
				if node == 0 && len(c.Nodes()) == 1 {
					node = c.Nodes()[0]
				}
				if node < 1 {
					return fmt.Errorf("%s needs --node <id> (one of %v)", action, c.Nodes())
				}
				if action == "start" {
					return c.StartNode(cmd.Context(), node)
				}
				return c.StopNode(cmd.Context(), node, c.Grace())
			}
			if err := printStatus(out, c.Health(cmd.Context()), asJSON); err != nil {
				return err
			}
			if !asJSON {
				printNetns(out, c)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster directory (required)")
	lf.Register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "status as JSON")
	cmd.Flags().Int32Var(&node, "node", 0, "the node for start and stop")
	cmd.MarkFlagRequired("dir")
	return cmd
}

// printNetns says, for a cluster in network namespaces, which ones, and
// that its addresses are reached only from the hub.
func printNetns(w io.Writer, c cluster.Local) {
	in, ok := c.(cluster.InNetns)
	if !ok || in.Net() == nil {
		return
	}
	n := in.Net()
	var names []string
	for _, id := range n.Nodes {
		names = append(names, n.NodeNS(id))
	}
	fmt.Fprintf(w, "runs in network namespaces: %s (nodes), reached from %s at %s; not from this machine's own namespace\n",
		strings.Join(names, ", "), n.Hub(), n.HubAddr())
}

// printStatus prints the nodes as a table, or as JSON.
func printStatus(w interface{ Write([]byte) (int, error) }, st []cluster.NodeStatus, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"node", "pid"}
	if len(st) > 0 {
		for _, e := range st[0].Endpoints {
			header = append(header, e.Name)
		}
	}
	header = append(header, "healthy")
	lazy := len(st) > 0 && st[0].LazyFS
	if lazy {
		header = append(header, "lazyfs pid")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, s := range st {
		row := []string{fmt.Sprint(s.ID), "-"}
		if s.PID != 0 {
			row[1] = fmt.Sprint(s.PID)
		}
		for _, e := range s.Endpoints {
			row = append(row, e.Addr)
		}
		h := fmt.Sprint(s.Healthy)
		if s.Health != "" {
			h += " (" + s.Health + ")"
		}
		row = append(row, h)
		if lazy {
			lp := "- (data dir not mounted)"
			if s.LazyFSPID != 0 {
				lp = fmt.Sprint(s.LazyFSPID)
			}
			row = append(row, lp)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// needCluster refuses every action but up on a directory that holds no
// cluster: status would otherwise print the default ports, and report as
// answering whatever else listens there.
func needCluster(dir, kind, action string) error {
	if action == "up" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil {
		return fmt.Errorf("--dir %s holds no local cluster (no cluster.json): start one with `ackcheck cluster %s up --dir %s`", dir, kind, dir)
	}
	return nil
}
