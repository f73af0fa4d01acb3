package remote

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Shell is one shell kept open on a machine for commands that must run at
// a given moment (a fault due at 28.0 s). Its session is set up once,
// ahead of time (over SSH: a channel opened and a shell started by sshd,
// the part of a command's cost that grows with a loaded machine), so that
// each command then costs its own run and one round trip.
//
// Commands run one at a time, in the order Run is called, each in a
// subshell of its own (a fork of the shell, well under a millisecond: an
// `exit` in a command ends only the command, and nothing it sets stays
// for the next); each has /dev/null as its stdin, and its standard error
// goes with its standard output. A Shell whose connection or process ended is dead (Alive is
// false): Run then fails at once and the caller uses its Runner instead.
type Shell struct {
	where string
	in    io.WriteCloser
	out   *bufio.Reader
	stop  func() error

	mu   sync.Mutex // one command at a time
	seq  int
	tag  string
	dead atomic.Bool
}

// ShellOpener is implemented by Runners that can open a Shell.
type ShellOpener interface {
	OpenShell(ctx context.Context) (*Shell, error)
}

var (
	_ ShellOpener = (*SSH)(nil)
	_ ShellOpener = Local{}
)

// newShell wraps a started shell's stdin and stdout.
func newShell(where string, in io.WriteCloser, out io.Reader, stop func() error) *Shell {
	b := make([]byte, 8)
	rand.Read(b)
	return &Shell{where: where, in: in, out: bufio.NewReader(out), stop: stop, tag: "ackcheck-done-" + hex.EncodeToString(b)}
}

// OpenShell implements ShellOpener: a shell in a session of its own on the
// connection's client, which lives as long as the connection.
func (s *SSH) OpenShell(ctx context.Context) (*Shell, error) {
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	if client == nil {
		return nil, errors.New("ssh: closed")
	}
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh %s: open a session for a shell: %w", s.Where(), err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	// The login shell sshd starts execs sh in place, and so does not
	// count a shell level as it does for a command's child. Debian's bash
	// reads ~/.bashrc when it takes itself for the shell sshd started
	// ($SSH_CLIENT set, a low SHLVL): without the level counted, a
	// `bash -c true` run through the shell took 542 ms here (a root
	// ~/.bashrc that sets up pyenv), 11 ms with it, and 3 ms in a
	// Runner.Run; the network probe's `timeout 0.25 bash` timed out.
	if err := sess.Start(`SHLVL=$((${SHLVL:-0} + 1)); export SHLVL; exec /bin/sh`); err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh %s: start a shell: %w", s.Where(), err)
	}
	sh := newShell(s.Where(), in, out, sess.Close)
	if _, err := sh.Run(ctx, "true"); err != nil {
		sh.Close()
		return nil, err
	}
	return sh, nil
}

// OpenShell implements ShellOpener: an sh process of its own.
func (Local) OpenShell(ctx context.Context) (*Shell, error) {
	c := exec.Command("/bin/sh")
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start a shell: %w", err)
	}
	sh := newShell("localhost", in, out, func() error {
		in.Close()
		c.Process.Kill()
		c.Wait() //nolint:errcheck // killed on purpose
		return nil
	})
	if _, err := sh.Run(ctx, "true"); err != nil {
		sh.Close()
		return nil, err
	}
	return sh, nil
}

// Where names the machine, as its Runner does.
func (sh *Shell) Where() string { return sh.where }

// Alive reports whether the shell can still run commands.
func (sh *Shell) Alive() bool { return !sh.dead.Load() }

// Run runs cmd in the shell and returns its output (standard output and
// error together), as Runner.Run would. A command that exits non-zero returns an *ExitError
// carrying that output. An error of any other kind means the shell is
// dead. When ctx ends first, the shell is closed (the command may still
// finish on the machine) and Run returns ctx's error.
func (sh *Shell) Run(ctx context.Context, cmd string) (string, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.dead.Load() {
		return "", fmt.Errorf("shell on %s: closed", sh.where)
	}
	sh.seq++
	marker := sh.tag + "-" + strconv.Itoa(sh.seq)
	type result struct {
		out  string
		code int
		err  error
	}
	// The marker line follows the command's output on a line of its own,
	// with the subshell's exit status: a command's output can never end
	// the read early, since it cannot know the random tag. The script is
	// written here, before the reader starts (a command is a few KiB at
	// most, well inside the channel's window and a pipe's buffer): a
	// Close after a cancelled read then never runs beside the write.
	script := "( " + cmd + "\n) </dev/null 2>&1; printf '\\n%s %d\\n' '" + marker + "' \"$?\"\n"
	if _, err := io.WriteString(sh.in, script); err != nil {
		sh.closeLocked()
		return "", fmt.Errorf("shell on %s: `%s`: %w", sh.where, cmd, err)
	}
	done := make(chan result, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := sh.out.ReadString('\n')
			if err != nil {
				done <- result{err: fmt.Errorf("read the shell's output: %w", err)}
				return
			}
			if rest, ok := strings.CutPrefix(line, marker+" "); ok {
				code, err := strconv.Atoi(strings.TrimSpace(rest))
				if err != nil {
					done <- result{err: fmt.Errorf("the shell's status line %q", line)}
					return
				}
				done <- result{out: strings.TrimSuffix(b.String(), "\n"), code: code}
				return
			}
			b.WriteString(line)
		}
	}()
	select {
	case <-ctx.Done():
		sh.closeLocked()
		return "", fmt.Errorf("shell on %s: `%s`: %w", sh.where, cmd, ctx.Err())
	case r := <-done:
		if r.err != nil {
			sh.closeLocked()
			return "", fmt.Errorf("shell on %s: `%s`: %w", sh.where, cmd, r.err)
		}
		if r.code != 0 {
			return r.out, &ExitError{Where: sh.where, Cmd: cmd, Code: r.code, Stderr: r.out}
		}
		return r.out, nil
	}
}

// Close ends the shell.
func (sh *Shell) Close() error {
	if sh.dead.Swap(true) {
		return nil
	}
	sh.in.Close()
	return sh.stop()
}

// closeLocked marks the shell dead and ends it, without waiting for a
// command in progress (whose reader then fails).
func (sh *Shell) closeLocked() {
	if !sh.dead.Swap(true) {
		sh.in.Close()
		go sh.stop() //nolint:errcheck // it is dead either way
	}
}
