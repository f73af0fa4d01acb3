package main

import (
	"slices"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
)

// The one list of brokers holds together: names unique, no flag shared
// by two drivers (it would belong to neither) but the ones they register
// through drivers on purpose (--netns), every address flag
// registered by its own driver, every local cluster's kind the name of
// its driver (a run on --cluster-dir picks the driver by it), and every
// fsync audit with settings that expect loss and settings that do not.
func TestProfilesHoldTogether(t *testing.T) {
	seen := map[string]bool{}
	owners := map[string]string{}
	for _, p := range profiles() {
		name := p.Name()
		if seen[name] || name == "" {
			t.Fatalf("driver name %q empty or twice", name)
		}
		seen[name] = true
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		p.NewFlags().Register(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if sharedOnPurpose(f.Name) {
				return
			}
			if o, ok := owners[f.Name]; ok {
				t.Errorf("--%s is registered by %s and %s", f.Name, o, name)
			}
			owners[f.Name] = name
		})
		if fs.Lookup(p.AddressFlag()) == nil {
			t.Errorf("%s: address flag --%s is not one of its flags", name, p.AddressFlag())
		}
		if l, ok := launcherOf(p); ok && l.Kind() != name {
			t.Errorf("%s: its local cluster's kind is %q", name, l.Kind())
		}
		if d, ok := p.Durability(); ok {
			var expect []bool
			for _, s := range d.Settings {
				expect = append(expect, s.ExpectLoss)
			}
			if !slices.Contains(expect, true) || !slices.Contains(expect, false) {
				t.Errorf("%s: the audit compares nothing: expect loss %v", name, expect)
			}
		}
		if _, expect := p.Expect("leader-kill", nil); expect == "" {
			t.Errorf("%s: no expectation for the leader kill", name)
		}
	}
}

// sharedOnPurpose reports whether a flag is one every driver registers
// through package drivers (drivers.RegisterNetns), not a clash.
func sharedOnPurpose(name string) bool {
	fs := pflag.NewFlagSet("shared", pflag.ContinueOnError)
	drivers.RegisterNetns(fs)
	return fs.Lookup(name) != nil
}
