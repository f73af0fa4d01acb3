package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Setup that a power loss cannot take.
//
// A power loss must take only what the broker itself did not fsync. So
// everything a launcher writes for a broker (its configuration files,
// cluster.json, the directories they live in, files it adds to a data dir)
// is durable before the cluster counts as up, and so is each rewrite of a
// setting. On a real disk, and on lazyfs, a file written without fsync
// can come back empty or not at all, and a new directory entry vanishes
// unless its directory is fsynced: PostgreSQL then came back on port 5432
// with its default socket dir, and the Queen server never started
// (issue 24).
//
// Invariant: every file and directory the cluster package creates or
// replaces for a broker goes through WriteFileDurable, MkdirAllDurable or
// SyncTree before the call that created it returns. Left out on purpose:
// pid files (a power loss kills the process they name, and a stale one is
// never trusted: see process.go), logs, and the pom.xml a fetch hands to
// mvn (a fetch cut short is redone).

// WriteFileDurable replaces path with data so that a power loss at any
// moment leaves either the old file or the new one, whole: the data goes
// to a temporary file in the same directory, which is fsynced and renamed
// over path, and then the directory is fsynced (the rename is durable only
// then). own, when not nil, is applied to the temporary file before its
// fsync (to give it to the user a broker runs as).
func WriteFileDurable(path string, data []byte, perm os.FileMode, own func(*os.File) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Chmod(perm); err != nil {
			return err
		}
		if own != nil {
			if err := own(f); err != nil {
				return err
			}
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w (check that the directory is writable and the disk not full)", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// MkdirAllDurable is os.MkdirAll whose new directories survive a power
// loss: the parent of each directory it created is fsynced after it.
func MkdirAllDurable(dir string, perm os.FileMode) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// Deepest first: a parent's entry is synced after its child's.
	for _, d := range created {
		if err := SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// SyncDir fsyncs a directory: its entries (files created, renamed into or
// removed from it) become durable.
func SyncDir(dir string) error {
	return SyncPath(dir)
}

// SyncPath fsyncs one file or directory, its data and its own metadata
// (size, mode, owner).
func SyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s to fsync it: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// SyncTree fsyncs every regular file and directory under root, root
// included, and root's parent (whose entry names root): for what a tool
// ackcheck runs wrote without fsync (Kafka's storage format, the jars mvn
// fetched), so that it is durable before ackcheck relies on it.
func SyncTree(root string) error {
	var errs []error
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() || d.IsDir() {
			errs = append(errs, SyncPath(p))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fsync everything under %s: %w", root, err)
	}
	errs = append(errs, SyncDir(filepath.Dir(root)))
	return errors.Join(errs...)
}
