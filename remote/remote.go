// Package remote runs shell commands where brokers live: on this machine
// (Local) or on another one over SSH (SSH). Faults reach broker processes
// through it, so a fault that works locally works the same over SSH.
//
// Secrets: a Runner never logs or returns key material or passwords; errors
// name the key file, never its content.
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Runner runs one shell command at a time or several concurrently.
type Runner interface {
	// Run runs cmd with `sh -c` and returns its standard output. A command
	// that exits non-zero returns an *ExitError carrying its stderr.
	Run(ctx context.Context, cmd string) (string, error)
	// Where names the machine for messages and reports (user@host:port).
	Where() string
	// Close releases connections.
	Close() error
}

// ExitError is a command that ran and failed.
type ExitError struct {
	Where  string
	Cmd    string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 500 {
		msg = msg[len(msg)-500:]
	}
	return fmt.Sprintf("on %s, `%s` exited %d: %s", e.Where, e.Cmd, e.Code, msg)
}

// Local runs commands on this machine.
type Local struct{}

var _ Runner = Local{}

// Run implements Runner.
func (Local) Run(ctx context.Context, cmd string) (string, error) {
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.String(), &ExitError{Where: "localhost", Cmd: cmd, Code: ee.ExitCode(), Stderr: stderr.String()}
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("run `%s`: %w", cmd, err)
	}
	return stdout.String(), nil
}

// Where implements Runner.
func (Local) Where() string { return "localhost" }

// Close implements Runner.
func (Local) Close() error { return nil }

// Quote quotes s for sh.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
