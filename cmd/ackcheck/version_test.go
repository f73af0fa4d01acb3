package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/ackcheck/ackcheck", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "bd7f81b0"}, {Key: "vcs.time", Value: "2026-12-02T03:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	clean := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"tag and commit", stamped, true, "v0.3.0 (commit bd7f81b0 of 2026-12-02T03:00:00Z, with uncommitted changes), go1.26.8"},
		{"clean tree", clean, true, "(devel) (commit abc), go1.26.8"},
		{"no vcs stamp", &debug.BuildInfo{GoVersion: "go1.26.8"}, true, "(devel), go1.26.8"},
		{"no build info", nil, false, "unknown (no build information in this binary)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionOf(tt.info, tt.ok); got != tt.want {
				t.Errorf("versionOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionFlag runs --version in process, and in a binary built from
// this git clone, whose build info carries the commit.
func TestVersionFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := execute(context.Background(), []string{"--version"}, &out, &errb); code != exitPass {
		t.Fatalf("--version: exit %d, stderr %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "ackcheck ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("--version printed %q, want ackcheck VERSION ..., goX", out.String())
	}
	if testing.Short() {
		return
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the binary carries no commit")
	}
	// go stamps VCS information only where the module root holds a .git
	// directory: a git worktree's .git is a file, and go build there
	// stamps nothing (measured with go1.26.8).
	if st, err := os.Stat("../../.git"); err != nil || !st.IsDir() {
		t.Skip("not a plain git clone (a worktree, or no .git): go build stamps no commit here")
	}
	bin := filepath.Join(t.TempDir(), "ackcheck")
	// -buildvcs=true over a GOFLAGS that turns stamping off.
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	got, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ackcheck --version: %v\n%s", err, got)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git clone: %v", err)
	}
	if want := regexp.MustCompile(`^ackcheck \S+ \(commit ` + strings.TrimSpace(string(head)) + ` of \d{4}-`); !want.Match(got) {
		t.Errorf("ackcheck --version = %q, want it to match %s", got, want)
	}
}
