package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag takes a `backquoted` word in a usage string as the flag's
// argument name, so "--cluster-dir `ackcheck cluster kafka up`" printed
// as if that command were the value to give. No usage may hold one.
func TestFlagUsagesHaveNoBackquotes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage has a backquote, which help would print as the argument name: %q", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
}
