package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/lazyfs"
	"github.com/ackcheck/ackcheck/remote"
)

// The fsync-toggle edit of a node's configuration file, and its restore,
// survive a power loss of the node (here: its config dir on lazyfs, strict
// entries). The same rewrite without the fsyncs (the command WriteConfig
// sent before issue 24) comes back as the old file, which shows the loss
// is real.
func TestWriteConfigSurvivesPowerLoss(t *testing.T) {
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	os.Mkdir(backing, 0o755)
	l, err := lazyfs.Mount(backing, mnt, lazyfs.Options{})
	if err != nil {
		need.Skip(t, need.FUSE, "cannot mount FUSE here: "+err.Error())
	}
	defer l.Unmount()
	conf := filepath.Join(mnt, "etc", "server.properties")
	os.MkdirAll(filepath.Dir(conf), 0o755)
	os.WriteFile(conf, []byte("flush.messages=9223372036854775807\n"), 0o640)
	l.Sync() // the operator's file, on disk
	ctx := context.Background()
	r := remote.Local{}
	s := NewScripted([]NodeSpec{{ID: 1, ConfigFile: conf, PIDFile: filepath.Join(dir, "pid"), Start: "true"}},
		map[int32]remote.Runner{1: r}, "local")

	tests := []struct {
		name    string
		write   func(content string) error
		durable bool
	}{
		{"WriteConfig", func(c string) error { return s.WriteConfig(ctx, 1, c) }, true},
		{"rename without fsync", func(c string) error {
			tmp := conf + ".ackcheck.tmp"
			if err := os.WriteFile(tmp, []byte(c), 0o640); err != nil {
				return err
			}
			return os.Rename(tmp, conf)
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, _ := s.ReadConfig(ctx, 1)
			for _, content := range []string{"flush.messages=1\n", old} { // the toggle, then its restore
				if err := tc.write(content); err != nil {
					t.Fatal(err)
				}
				l.Lose(5 * time.Second)
				got, _ := os.ReadFile(conf)
				want := content
				if !tc.durable {
					want = old // the rename is undone; the last durable file is back
				}
				if string(got) != want {
					t.Errorf("after writing %q and a power loss: %q, want %q", content, got, want)
				}
				if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o640 {
					t.Errorf("mode after the power loss: %v %v, want 0640", fi.Mode().Perm(), err)
				}
				l.Sync()
				old = string(got)
			}
		})
	}
}
