package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/remote"
	"github.com/ackcheck/ackcheck/remote/sshdtest"
)

// A Shell runs command after command in one session: output (standard
// error with it), exit status, a heredoc, and commands that read stdin
// (they get /dev/null, never the commands after them); a command that
// outlives its context ends the shell.
func TestShell(t *testing.T) {
	shells := map[string]func(t *testing.T) remote.ShellOpener{
		"local": func(*testing.T) remote.ShellOpener { return remote.Local{} },
		"ssh": func(t *testing.T) remote.ShellOpener {
			srv := sshdtest.Start(t)
			r, err := remote.DialSSH(context.Background(), remote.SSHConfig{Host: "127.0.0.1", Port: srv.Port,
				User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		},
	}
	for name, mk := range shells {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sh, err := mk(t).OpenShell(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sh.Close()
			for _, c := range []struct{ cmd, out string }{
				{"echo hello; echo world", "hello\nworld\n"},
				{"printf 'no newline'", "no newline"},
				{"echo to-stderr >&2", "to-stderr\n"},
				{"cat; echo after-cat", "after-cat\n"}, // stdin is /dev/null
				{"cat <<'EOF'\nline 1\nline 2\nEOF", "line 1\nline 2\n"},
				{"x=1; echo $x", "1\n"},
				{"echo ${x:-unset}", "unset\n"}, // a subshell each: nothing stays
			} {
				out, err := sh.Run(ctx, c.cmd)
				if err != nil || out != c.out {
					t.Errorf("%q: %q %v, want %q", c.cmd, out, err, c.out)
				}
			}
			// exit ends the command's subshell, not the shell.
			out, err := sh.Run(ctx, "echo partial; exit 3; echo never")
			var ee *remote.ExitError
			if !errors.As(err, &ee) || ee.Code != 3 || out != "partial\n" {
				t.Errorf("a failing command: %q %v, want exit 3 with its output", out, err)
			}
			if !sh.Alive() {
				t.Fatal("a failing command ended the shell")
			}
			start := time.Now()
			for range 20 {
				if _, err := sh.Run(ctx, "kill -0 $$"); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: 20 commands in %s", name, time.Since(start))
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if _, err := sh.Run(short, "sleep 5"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a command past its context: %v", err)
			}
			if sh.Alive() {
				t.Error("the shell is alive after a command outlived its context")
			}
			if _, err := sh.Run(ctx, "true"); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Errorf("a dead shell ran a command: %v", err)
			}
		})
	}
}
