package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/lazyfs"
	"github.com/spf13/cobra"
)

func newLazyFSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lazyfs",
		Short: "A FUSE filesystem that loses every write not fsynced, on command (a power loss)",
		Long: `lazyfs mounts a directory through FUSE so that a broker's data dir can
suffer a power loss while the machine keeps running: "lose" puts every file
back to its content at its last fsync and every directory back to its
entries at its last fsync. See the lazyfs package doc for exactly what it
models and what it does not.`,
	}
	cmd.AddCommand(newLazyFSMountCmd(), newLazyFSControlCmd("lose", "Lose every unsynced write now; answers when the loss is complete"),
		newLazyFSControlCmd("sync", "Make everything durable now"), newLazyFSControlCmd("status", "Show what is unsynced"),
		newLazyFSControlCmd("disk-error", "Make <percent>% (default 100) of the calls fsync, write or read fail with EIO until disk-ok: disk-error <call> [<percent>]"),
		newLazyFSControlCmd("disk-ok", "End the disk errors (on every call, or on the one named) and show what they did"))
	return cmd
}

func newLazyFSMountCmd() *cobra.Command {
	var backing, mountpoint, control, entries string
	var debug bool
	cmd := &cobra.Command{
		Use:   "mount",
		Short: "Mount --backing on --mountpoint and serve the control socket until SIGINT/SIGTERM",
		Example: `  ackcheck lazyfs mount --backing /data/kafka.backing --mountpoint /data/kafka --control /run/lazyfs.sock &
  ackcheck lazyfs lose --control /run/lazyfs.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if backing == "" || mountpoint == "" {
				return fmt.Errorf("--backing and --mountpoint are required")
			}
			if control == "" {
				control = mountpoint + ".lazyfs.sock"
			}
			l, err := lazyfs.Mount(backing, mountpoint, lazyfs.Options{Debug: debug, Entries: entries})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- l.Serve(ctx, control) }()
			unmounted := make(chan struct{})
			go func() { l.Wait(); close(unmounted) }()
			fmt.Fprintf(cmd.OutOrStdout(), "lazyfs: %s mounted on %s; control socket %s\n", l.Backing(), l.Mountpoint(), control)
			var serveErr error
			select {
			case <-cmd.Context().Done():
			case serveErr = <-served:
			case <-unmounted:
				cancel()
				return fmt.Errorf("%s was unmounted from outside", mountpoint)
			}
			cancel()
			if err := l.Unmount(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lazyfs: unmounted %s\n", l.Mountpoint())
			return serveErr
		},
	}
	cmd.Flags().StringVar(&backing, "backing", "", "directory that holds the data (must exist)")
	cmd.Flags().StringVar(&mountpoint, "mountpoint", "", "where the filesystem appears (created if missing)")
	cmd.Flags().StringVar(&control, "control", "", "Unix socket for lose/sync/status (default <mountpoint>.lazyfs.sock)")
	cmd.Flags().BoolVar(&debug, "debug", false, "log every FUSE request")
	cmd.Flags().StringVar(&entries, "entries", lazyfs.EntriesStrict, "when directory changes become durable: strict (at the directory's fsync) or journal (at any fsync, like ext4's metadata journal)")
	return cmd
}

func newLazyFSControlCmd(name, short string) *cobra.Command {
	var control string
	var wait, timeout time.Duration
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if control == "" {
				return fmt.Errorf("--control is required: the socket `ackcheck lazyfs mount` serves")
			}
			line := name
			if name == "lose" {
				line = fmt.Sprintf("lose %s", wait)
			}
			if len(args) > 0 {
				line += " " + strings.Join(args, " ")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r, err := lazyfs.Control(ctx, control, line)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if r.Loss != nil {
				return enc.Encode(r.Loss)
			}
			if name == "disk-ok" {
				return enc.Encode(r.Ended)
			}
			return enc.Encode(r.Status)
		},
	}
	switch name {
	case "disk-error":
		cmd.Args = cobra.RangeArgs(1, 2)
	case "disk-ok":
		cmd.Args = cobra.MaximumNArgs(1)
	}
	cmd.Flags().StringVar(&control, "control", "", "the control socket of a running ackcheck lazyfs mount")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up waiting for the answer after this long")
	if name == "lose" {
		cmd.Flags().DurationVar(&wait, "wait-closed", lazyfs.DefaultCloseWait, "first wait up to this long for every file to be closed")
	}
	return cmd
}
