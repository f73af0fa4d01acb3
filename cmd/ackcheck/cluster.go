package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/spf13/cobra"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, stop and inspect a local test cluster on 127.0.0.1",
	}
	cmd.AddCommand(newClusterKafkaCmd(), newClusterPulsarCmd(), newClusterNATSCmd())
	return cmd
}

func newClusterNATSCmd() *cobra.Command {
	var opts cluster.NATSOptions
	var asJSON bool
	var node int32
	var sync string
	cmd := &cobra.Command{
		Use:   "nats up|down|status|start|stop",
		Short: "A local NATS JetStream cluster (nats-server " + cluster.NATSVersion + ", 3 nodes by default)",
		Long: `up builds nats-server ` + cluster.NATSVersion + ` from the Go module proxy with go install (once,
into a cache outside any repository), writes each node's nats.conf, and
starts the nodes on 127.0.0.1 with their own ports, store dirs, logs and PID
files under --dir. It returns once every node's /healthz answers ok.
--sync always sets jetstream { sync_interval: always } (every write fsynced
before it counts); the default is the server's own (fsync every 2 minutes).
A running server does not change it on reload: up --sync on an existing
cluster switches it with a clean restart of every node.
With --lazyfs, each store dir is served by ackcheck lazyfs (FUSE), which the
power-loss fault uses to drop what the node had not fsynced.
down stops exactly the PIDs in --dir (SIGTERM, then SIGKILL after 30s).
start and stop act on one node (--node).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status", "start", "stop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch sync {
			case "default":
			case "always":
				opts.SyncAlways = true
			default:
				return fmt.Errorf("--sync %q: use default or always", sync)
			}
			n, err := cluster.OpenNATS(opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := needCluster(opts.Dir, "nats", args[0]); err != nil {
				return err
			}
			switch args[0] {
			case "up":
				fmt.Fprintf(out, "starting nats-server %s in %s ...\n", cluster.NATSVersion, n.Dir())
				if err := n.Up(cmd.Context()); err != nil {
					return err
				}
				if cmd.Flags().Changed("sync") && n.SyncAlways() != (sync == "always") {
					fmt.Fprintf(out, "switching sync_interval to %s (a clean restart of every node) ...\n", sync)
					if err := n.SetSyncAlways(cmd.Context(), sync == "always"); err != nil {
						return err
					}
				}
				fmt.Fprintf(out, "ready: --driver nats --servers %s --monitor-urls %s\n", strings.Join(n.Servers(), ","), strings.Join(n.MonitorURLs(), ","))
			case "down":
				if err := n.Down(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(out, "stopped")
				return nil
			case "start", "stop":
				if node < 1 {
					return fmt.Errorf("%s needs --node <id>", args[0])
				}
				if args[0] == "start" {
					return n.StartNode(cmd.Context(), node)
				}
				return n.StopNode(cmd.Context(), node, 30*time.Second)
			case "status":
			default:
				return fmt.Errorf("unknown action %q: use up, down, status, start or stop", args[0])
			}
			st := n.Status(cmd.Context())
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "node\tpid\tserver\tmonitor\thealthy\tlazyfs pid")
			for _, s := range st {
				pid, lp := "-", "-"
				if s.PID != 0 {
					pid = fmt.Sprint(s.PID)
				}
				if s.LazyFSPID != 0 {
					lp = fmt.Sprint(s.LazyFSPID)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v %s\t%s\n", s.ID, pid, s.Server, s.Monitor, s.Healthy, s.Health, lp)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "cluster directory (required)")
	cmd.Flags().IntVar(&opts.Nodes, "nodes", 0, "nodes (default 3; fixed at the first up)")
	cmd.Flags().IntVar(&opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its routes base+100+N-1, its monitoring base+200+N-1 (default 24222)")
	cmd.Flags().StringVar(&sync, "sync", "default", "jetstream sync_interval: default (the server's, 2m) or always; on an existing cluster, switched by a clean restart")
	cmd.Flags().BoolVar(&opts.LazyFS, "lazyfs", false, "put each node's store dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	cmd.Flags().StringVar(&opts.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (a directory change is durable only once its directory is fsynced; lazyfs's default) or journal (any fsync commits every change, as ext4 and XFS do)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "status as JSON")
	cmd.Flags().Int32Var(&node, "node", 0, "the node for start and stop")
	cmd.MarkFlagRequired("dir")
	return cmd
}

func newClusterPulsarCmd() *cobra.Command {
	var opts cluster.PulsarOptions
	var asJSON, journalSync bool
	cmd := &cobra.Command{
		Use:   "pulsar up|down|status|start|stop",
		Short: "A local Apache Pulsar " + cluster.PulsarVersion + " standalone (broker, bookie and metadata store in one JVM)",
		Long: `up fetches Apache Pulsar ` + cluster.PulsarVersion + ` (pulsar-broker, which holds standalone mode, and
its dependencies) from Maven Central with mvn, once, into a cache outside
any repository, writes standalone.conf, and starts the standalone on
127.0.0.1 with its PID file, log and data under --dir. It returns once the
broker passes its health check (a write and a read through the bookie).
down stops exactly the PID in --dir (SIGTERM, then SIGKILL after 60s).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status", "start", "stop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("journal-sync-data") {
				opts.JournalSyncData = &journalSync
			}
			if opts.LazyFSEntries != "" && opts.LazyFSEntries != "strict" && opts.LazyFSEntries != "journal" {
				return fmt.Errorf("--lazyfs-entries %q: use strict or journal", opts.LazyFSEntries)
			}
			p, err := cluster.OpenPulsar(opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := needCluster(opts.Dir, "pulsar", args[0]); err != nil {
				return err
			}
			switch args[0] {
			case "up":
				fmt.Fprintf(out, "starting Pulsar %s standalone in %s ...\n", cluster.PulsarVersion, p.Dir())
				if err := p.Up(cmd.Context()); err != nil {
					return err
				}
				if cmd.Flags().Changed("journal-sync-data") && p.JournalSyncData() != journalSync {
					fmt.Fprintf(out, "switching journalSyncData to %v (a clean restart) ...\n", journalSync)
					if err := p.SetJournalSyncData(cmd.Context(), journalSync); err != nil {
						return err
					}
				}
				fmt.Fprintf(out, "ready: --driver pulsar --service-url %s --admin-url %s --bookie-http-url %s\n", p.ServiceURL(), p.AdminURL(), p.BookieHTTPURL())
			case "down":
				if err := p.Down(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(out, "stopped")
				return nil
			case "start":
				return p.StartNode(cmd.Context(), 1)
			case "stop":
				return p.StopNode(cmd.Context(), 1, 60*time.Second)
			case "status":
			default:
				return fmt.Errorf("unknown action %q: use up, down, status, start or stop", args[0])
			}
			st := p.Status(cmd.Context())
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			pid := "-"
			if st.PID != 0 {
				pid = fmt.Sprint(st.PID)
			}
			lazy := ""
			if p.LazyFS() {
				lazy = "  lazyfs pid -"
				if st.LazyFSPID != 0 {
					lazy = fmt.Sprintf("  lazyfs pid %d", st.LazyFSPID)
				}
			}
			fmt.Fprintf(out, "pid %s  %s  %s  healthy %v %s%s\n", pid, st.ServiceURL, st.AdminURL, st.Healthy, st.Health, lazy)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "standalone directory (required)")
	cmd.Flags().IntVar(&opts.BrokerPort, "broker-port", 0, "binary protocol port (default 26650; fixed at the first up)")
	cmd.Flags().IntVar(&opts.WebPort, "web-port", 0, "admin and web port (default 28080)")
	cmd.Flags().IntVar(&opts.BookiePort, "bookie-port", 0, "bookie port (default 23181)")
	cmd.Flags().IntVar(&opts.HeapMB, "heap-mb", 0, "JVM heap in MiB (default 1024)")
	cmd.Flags().BoolVar(&journalSync, "journal-sync-data", true, "bookie journalSyncData: fsync the journal before acking; on an existing standalone, switched by a clean restart")
	cmd.Flags().BoolVar(&opts.LazyFS, "lazyfs", false, "put the data dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	cmd.Flags().StringVar(&opts.LazyFSEntries, "lazyfs-entries", "", "with --lazyfs: strict (lazyfs's default) or journal (any fsync commits every directory change, as ext4 and XFS do)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "status as JSON")
	cmd.MarkFlagRequired("dir")
	return cmd
}

func newClusterKafkaCmd() *cobra.Command {
	var opts cluster.KafkaOptions
	var asJSON bool
	var node int32
	cmd := &cobra.Command{
		Use:   "kafka up|down|status|start|stop",
		Short: "A local Apache Kafka " + cluster.KafkaVersion + " cluster in KRaft mode (3 combined nodes by default)",
		Long: `up fetches Apache Kafka ` + cluster.KafkaVersion + ` from Maven Central with mvn (once, into a cache
outside any repository), formats KRaft storage, and starts the nodes on
127.0.0.1 with their own ports, data dirs, logs and PID files under --dir.
Replication factor 3 and min.insync.replicas=2 by default. With --lazyfs,
each node's data dir is served by ackcheck lazyfs (FUSE), which the
power-loss fault uses to drop what the node had not fsynced.
down stops exactly the PIDs in --dir (SIGTERM, then SIGKILL after 30s).
status shows each node's PID, ports and whether it answers.
start and stop act on one node (--node), for scripts and cluster files.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status", "start", "stop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := cluster.OpenKafka(opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := needCluster(opts.Dir, "kafka", args[0]); err != nil {
				return err
			}
			switch args[0] {
			case "up":
				fmt.Fprintf(out, "starting Kafka %s in %s ...\n", cluster.KafkaVersion, opts.Dir)
				if err := k.Up(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintf(out, "ready: --brokers %s\n", strings.Join(k.Brokers(), ","))
			case "down":
				if err := k.Down(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(out, "stopped")
				return nil
			case "start", "stop":
				if node < 1 {
					return fmt.Errorf("%s needs --node <id>", args[0])
				}
				if args[0] == "start" {
					return k.StartNode(cmd.Context(), node)
				}
				return k.StopNode(cmd.Context(), node, 30*time.Second)
			case "status":
			default:
				return fmt.Errorf("unknown action %q: use up, down, status, start or stop", args[0])
			}
			st := k.Status()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			lazy := ""
			if k.LazyFS() {
				lazy = "\tlazyfs pid"
			}
			fmt.Fprintln(tw, "node\tpid\tclient\tcontroller\tanswers"+lazy)
			for _, s := range st {
				pid := "-"
				if s.PID != 0 {
					pid = fmt.Sprint(s.PID)
				}
				row := fmt.Sprintf("%d\t%s\t%s\t%s\t%v", s.ID, pid, s.ClientAddr, s.ControllerAddr, s.Answers)
				if k.LazyFS() {
					lp := "- (data dir not mounted)"
					if s.LazyFSPID != 0 {
						lp = fmt.Sprint(s.LazyFSPID)
					}
					row += "\t" + lp
				}
				fmt.Fprintln(tw, row)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "cluster directory (required)")
	cmd.Flags().IntVar(&opts.Nodes, "nodes", 0, "combined broker+controller nodes (default 3; fixed at the first up)")
	cmd.Flags().IntVar(&opts.BasePort, "base-port", 0, "client port of node 1; node N uses base+N-1, its controller base+100+N-1 (default 29091)")
	cmd.Flags().IntVar(&opts.HeapMB, "heap-mb", 0, "JVM heap per node in MiB (default 768)")
	cmd.Flags().StringToStringVar(&opts.Props, "prop", nil, "extra server.properties for every node, k=v (at the first up)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "status as JSON")
	cmd.Flags().BoolVar(&opts.LazyFS, "lazyfs", false, "put each node's data dir on ackcheck lazyfs, so that power-loss faults can drop unsynced writes (at the first up; needs FUSE)")
	cmd.Flags().Int32Var(&node, "node", 0, "the node for start and stop")
	cmd.MarkFlagRequired("dir")
	return cmd
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
