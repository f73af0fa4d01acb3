package main

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kfake"
)

// kfakeDriver opens the kafka driver on c as the command line does, from
// the broker list's profile (the command's tests import no broker's
// package), with the settings run.json records for it. The driver is
// closed when t ends.
func kfakeDriver(t *testing.T, c *kfake.Cluster) (drivers.Driver, any) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var kf driverFlags
	kf.register(fs)
	if err := fs.Parse([]string{"--brokers", strings.Join(c.ListenAddrs(), ",")}); err != nil {
		t.Fatal(err)
	}
	d, settings, err := newDriver("kafka", fs, &kf, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, settings
}
