package queen_test

import (
	"path/filepath"
	"testing"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/faults"
)

// A local Queen cluster names each node's data dir, so that file faults
// (bitflip db '[1-9]*') reach PostgreSQL's files and the server's buffer.
func TestLocalClusterNamesDataDirs(t *testing.T) {
	dir := t.TempDir()
	q, err := queen.OpenCluster(queen.ClusterOptions{Options: cluster.Options{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int32]string{queen.DBNode: "node2/data", queen.ServerNode: "node1/data"} {
		got, _, err := faults.Local{Cluster: q}.DataDirOn(id)
		if err != nil || got != filepath.Join(dir, want) {
			t.Errorf("node %d: data dir %q, %v; want %s", id, got, err, filepath.Join(dir, want))
		}
	}
}
