package pulsar_test

import (
	"path/filepath"
	"testing"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers/pulsar"
	"github.com/ackcheck/ackcheck/faults"
)

// A local Pulsar standalone names its one node's data dir, so that file
// faults reach its bookie's entry logs.
func TestLocalStandaloneNamesItsDataDir(t *testing.T) {
	dir := t.TempDir()
	p, err := pulsar.OpenCluster(pulsar.ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := faults.Local{Cluster: p}.DataDirOn(1)
	if err != nil || got != filepath.Join(dir, "data") {
		t.Errorf("data dir %q, %v; want %s", got, err, filepath.Join(dir, "data"))
	}
	if _, _, err := (faults.Local{Cluster: p}).DataDirOn(2); err == nil {
		t.Error("a standalone has no node 2, but its data dir was named")
	}
}
