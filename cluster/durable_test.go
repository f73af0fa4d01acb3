package cluster_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/cluster/clustertest"
	"github.com/ackcheck/ackcheck/lazyfs"
)

// The helpers' writes survive a power loss; the same writes made the
// plain way (os.MkdirAll, os.WriteFile, the way the launchers wrote before
// issue 24) do not, which shows the loss is real and the test can fail.
func TestDurableWritesSurvivePowerLoss(t *testing.T) {
	tests := []struct {
		name    string
		durable bool
	}{
		{"durable helpers", true},
		{"plain writes", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, mnt := clustertest.LazyDir(t, lazyfs.EntriesStrict)
			// An existing, durable file that setup replaces (a setting
			// rewritten for an fsync toggle).
			conf := filepath.Join(mnt, "node1", "server.conf")
			nested := filepath.Join(mnt, "a", "b", "c")
			tree := filepath.Join(mnt, "tool")
			if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(conf, []byte("fsync=off\n"), 0o644)
			l.Sync()

			if tc.durable {
				if err := cluster.MkdirAllDurable(nested, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := cluster.WriteFileDurable(filepath.Join(nested, "cluster.json"), []byte(`{"kind":"x"}`), 0o644, nil); err != nil {
					t.Fatal(err)
				}
				if err := cluster.WriteFileDurable(conf, []byte("fsync=on\n"), 0o600, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				os.MkdirAll(nested, 0o755)
				os.WriteFile(filepath.Join(nested, "cluster.json"), []byte(`{"kind":"x"}`), 0o644)
				os.WriteFile(conf, []byte("fsync=on\n"), 0o600)
			}
			// What a tool wrote without fsync (a storage format, jars),
			// made durable afterwards by SyncTree.
			os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
			os.WriteFile(filepath.Join(tree, "sub", "meta.properties"), []byte("cluster.id=1\n"), 0o644)
			if tc.durable {
				if err := cluster.SyncTree(tree); err != nil {
					t.Fatal(err)
				}
			}

			r := clustertest.Lose(t, l)
			got := map[string]string{
				"nested":   clustertest.ReadOr(filepath.Join(nested, "cluster.json")),
				"replaced": clustertest.ReadOr(conf),
				"tree":     clustertest.ReadOr(filepath.Join(tree, "sub", "meta.properties")),
			}
			want := map[string]string{"nested": `{"kind":"x"}`, "replaced": "fsync=on\n", "tree": "cluster.id=1\n"}
			if !tc.durable {
				// Lost: the old setting is back, the new files are gone.
				want = map[string]string{"nested": "<missing>", "replaced": "fsync=off\n", "tree": "<missing>"}
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s after the power loss: %q, want %q (lazyfs: %+v)", k, got[k], want[k], r)
				}
			}
			if tc.durable {
				if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("replaced file's mode: %v %v, want 0600", fi.Mode().Perm(), err)
				}
				// No temporary file is left beside it.
				if m, _ := filepath.Glob(filepath.Join(filepath.Dir(conf), ".*tmp*")); len(m) != 0 {
					t.Errorf("temporary files left: %v", m)
				}
			}
		})
	}
}

// A failed write leaves the old file and no temporary file.
func TestWriteFileDurableFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.conf")
	os.WriteFile(path, []byte("old\n"), 0o644)
	err := cluster.WriteFileDurable(path, []byte("new\n"), 0o644, func(*os.File) error { return os.ErrPermission })
	if err == nil {
		t.Fatal("a failing owner change was not reported")
	}
	if got := clustertest.ReadOr(path); got != "old\n" {
		t.Errorf("after a failed write: %q, want the old content", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
