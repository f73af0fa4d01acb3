package main

import (
	"fmt"
	"testing"

	"github.com/ackcheck/ackcheck/load"
	"github.com/spf13/cobra"
)

// Every command that offers a load setting offers load.Defaults' value,
// so that the defaults have one home and help cannot drift from it.
func TestLoadFlagsDefaultToLoadDefaults(t *testing.T) {
	d := load.Defaults()
	want := map[string]string{
		"rate":          fmt.Sprint(d.Rate),
		"duration":      d.Duration.String(),
		"message-size":  fmt.Sprint(d.MessageSize),
		"producers":     fmt.Sprint(d.Producers),
		"max-in-flight": fmt.Sprint(d.MaxInFlight),
	}
	for _, tc := range []struct {
		cmd   *cobra.Command
		flags []string // bench --peer's rate is its paced workloads', not a run's
	}{
		{newRunCmd(), []string{"rate", "duration", "message-size", "producers", "max-in-flight"}},
		{newLeaderKillCmd(), []string{"rate", "duration", "message-size", "producers", "max-in-flight"}},
		{newDemoCmd(), []string{"rate", "duration"}},
		{newBenchCmd(), []string{"message-size", "producers", "max-in-flight"}},
	} {
		for _, name := range tc.flags {
			f := tc.cmd.Flags().Lookup(name)
			if f == nil {
				t.Errorf("%s has no --%s", tc.cmd.Name(), name)
				continue
			}
			if f.DefValue != want[name] {
				t.Errorf("%s --%s defaults to %s, load.Defaults to %s", tc.cmd.Name(), name, f.DefValue, want[name])
			}
		}
	}
}
