package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/brokers"
	"github.com/spf13/pflag"
)

// brokerList is a list of brokers ackcheck knows, with the lookups the
// command line makes in it. The command line's is profiles(); a test can
// build one with a broker of its own.
type brokerList []drivers.Profile

// profiles are the brokers the command line knows: brokers.All, the one
// list of them.
func profiles() brokerList { return brokers.All() }

// profileNames lists the --driver values.
func profileNames() []string { return profiles().names() }

// profileNamed is the profile whose name is --driver's value.
func profileNamed(name string) (drivers.Profile, error) { return profiles().named(name) }

func (l brokerList) names() []string {
	var names []string
	for _, p := range l {
		names = append(names, p.Name())
	}
	return names
}

func (l brokerList) named(name string) (drivers.Profile, error) {
	for _, p := range l {
		if p.Name() == strings.ToLower(name) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("--driver %q: the drivers are: %s", name, strings.Join(l.names(), ", "))
}

// launcherOf is the local cluster of a profile's broker, if it has one.
func launcherOf(p drivers.Profile) (cluster.Launcher, bool) {
	cp, ok := p.(cluster.Provider)
	if !ok {
		return nil, false
	}
	return cp.Launcher(), true
}

// driverFlags are every driver's flags, each named as that broker's users
// know them, registered on one command.
type driverFlags struct {
	byDriver map[string]drivers.Flags
}

func (k *driverFlags) register(fs *pflag.FlagSet) {
	k.byDriver = map[string]drivers.Flags{}
	for _, p := range profiles() {
		f := p.NewFlags()
		f.Register(fs)
		k.byDriver[p.Name()] = f
	}
}

// flagOwners maps each driver's own flag to that driver.
func flagOwners() map[string]string { return profiles().flagOwners() }

func (l brokerList) flagOwners() map[string]string {
	owners := map[string]string{}
	shared := map[string]bool{}
	for _, p := range l {
		fs := pflag.NewFlagSet(p.Name(), pflag.ContinueOnError)
		p.NewFlags().Register(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if o, ok := owners[f.Name]; ok && o != p.Name() {
				shared[f.Name] = true // --netns: every driver with a local cluster in namespaces has it
			}
			owners[f.Name] = p.Name()
		})
	}
	for name := range shared {
		delete(owners, name)
	}
	return owners
}

// flagsBelongTo refuses a flag of another driver given on the command
// line: it would be accepted and silently ignored (--driver kafka
// --servers nats://...).
func flagsBelongTo(driver string, fs *pflag.FlagSet) error {
	owners := flagOwners()
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if o, ok := owners[f.Name]; ok && o != driver && err == nil {
			err = fmt.Errorf("--%s is a flag of the %s driver, and this run uses --driver %s: drop it, or give --driver %s", f.Name, o, driver, o)
		}
	})
	return err
}

// newDriver connects the named driver. saved is the driver part of an
// earlier run.json (nil for a new run). It returns the driver and its
// settings with secrets removed, for run.json.
func newDriver(name string, fs *pflag.FlagSet, kf *driverFlags, saved json.RawMessage) (drivers.Driver, any, error) {
	p, err := profileNamed(name)
	if err != nil {
		return nil, nil, err
	}
	if err := flagsBelongTo(p.Name(), fs); err != nil {
		return nil, nil, err
	}
	return kf.byDriver[p.Name()].Open(fs, saved)
}
