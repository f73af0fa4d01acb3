package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/lazyfs"
)

// lazyDir mounts a lazyfs for one test and returns it with its
// mountpoint. entries is its directory-entry mode: lazyfs.EntriesStrict (a
// new name is durable only once its directory is fsynced, the harshest
// legal filesystem: what ackcheck's own writes must survive) or
// lazyfs.EntriesJournal (as ext4 and XFS: for a broker, such as
// PostgreSQL, that relies on it). It skips the test when FUSE cannot be
// mounted here, and fails it instead when ACKCHECK_REQUIRE_FUSE is set
// (.ci/run sets it).
func lazyDir(t *testing.T, entries string) (*lazyfs.FS, string) {
	t.Helper()
	// Not t.TempDir: the user postgres must be able to enter it (see
	// TestCreateSurvivesPowerLoss), and t.TempDir's parent is mode 0700.
	dir, err := os.MkdirTemp("", "setup-lazy-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o711)
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := lazyfs.Mount(backing, mnt, lazyfs.Options{Entries: entries})
	if err != nil {
		os.RemoveAll(dir)
		if os.Getenv("ACKCHECK_REQUIRE_FUSE") != "" {
			t.Fatalf("FUSE is required here (ACKCHECK_REQUIRE_FUSE): %v", err)
		}
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
		os.RemoveAll(dir)
	})
	return l, mnt
}

// lose is a power loss of the lazyfs: everything not fsynced goes.
func lose(t *testing.T, l *lazyfs.FS) lazyfs.LossReport {
	t.Helper()
	r := l.Lose(5 * time.Second)
	if len(r.UndoFailures) > 0 {
		t.Fatalf("lazyfs could not undo: %v", r.UndoFailures)
	}
	return r
}

// readOr is path's content, or "<missing>".
func readOr(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "<missing>"
	}
	return string(data)
}

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
			l, mnt := lazyDir(t, lazyfs.EntriesStrict)
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
				if err := mkdirAllDurable(nested, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := writeFileDurable(filepath.Join(nested, "cluster.json"), []byte(`{"kind":"x"}`), 0o644, nil); err != nil {
					t.Fatal(err)
				}
				if err := writeFileDurable(conf, []byte("fsync=on\n"), 0o600, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				os.MkdirAll(nested, 0o755)
				os.WriteFile(filepath.Join(nested, "cluster.json"), []byte(`{"kind":"x"}`), 0o644)
				os.WriteFile(conf, []byte("fsync=on\n"), 0o600)
			}
			// What a tool wrote without fsync (a storage format, jars),
			// made durable afterwards by syncTree.
			os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
			os.WriteFile(filepath.Join(tree, "sub", "meta.properties"), []byte("cluster.id=1\n"), 0o644)
			if tc.durable {
				if err := syncTree(tree); err != nil {
					t.Fatal(err)
				}
			}

			r := lose(t, l)
			got := map[string]string{
				"nested":   readOr(filepath.Join(nested, "cluster.json")),
				"replaced": readOr(conf),
				"tree":     readOr(filepath.Join(tree, "sub", "meta.properties")),
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
	err := writeFileDurable(path, []byte("new\n"), 0o644, func(*os.File) error { return os.ErrPermission })
	if err == nil {
		t.Fatal("a failing owner change was not reported")
	}
	if got := readOr(path); got != "old\n" {
		t.Errorf("after a failed write: %q, want the old content", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
