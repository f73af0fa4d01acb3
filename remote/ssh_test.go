package remote

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/remote/sshdtest"
	"golang.org/x/crypto/ssh"
)

func TestLocalRun(t *testing.T) {
	out, err := Local{}.Run(context.Background(), "echo hi; echo oops >&2")
	if err != nil || out != "hi\n" {
		t.Fatalf("%q %v", out, err)
	}
	_, err = Local{}.Run(context.Background(), "echo bad >&2; exit 3")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("exit error: %v", err)
	}
	if Quote("it's") != `'it'\''s'` {
		t.Fatal(Quote("it's"))
	}
}

func TestSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good := SSHConfig{Host: "127.0.0.1", Port: srv.Port, User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts}

	t.Run("runs commands, stdout and stderr apart", func(t *testing.T) {
		s, err := DialSSH(ctx, good)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i := 0; i < 16; i++ { // PLATFORM.md: a shared buffer lost output
			out, err := s.Run(ctx, "echo out; echo err >&2")
			if err != nil || out != "out\n" {
				t.Fatalf("run %d: %q %v", i, out, err)
			}
		}
		_, err = s.Run(ctx, "echo nope >&2; exit 7")
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 7 || !strings.Contains(ee.Stderr, "nope") {
			t.Fatalf("exit error: %v", err)
		}
		if s.AcceptedUnknownKey != "" {
			t.Fatal("a known key was reported as accepted")
		}
	})
	tests := []struct {
		name string
		mut  func(*SSHConfig)
		want string
	}{
		{"changed host key refused", func(c *SSHConfig) { c.KnownHosts = srv.WrongHosts }, "REFUSED"},
		{"changed host key refused even when accepting unknown", func(c *SSHConfig) {
			c.KnownHosts, c.AcceptUnknownHostKey = srv.WrongHosts, true
		}, "REFUSED"},
		{"unknown host", func(c *SSHConfig) {
			c.KnownHosts = filepath.Join(t.TempDir(), "empty")
			os.WriteFile(c.KnownHosts, nil, 0o600)
		}, "--accept-unknown-host-keys"},
		{"wrong user", func(c *SSHConfig) { c.User = "nosuchuser" }, "authentication with key"},
		{"wrong key", func(c *SSHConfig) { c.KeyFile = srv.OtherKey }, "authorized_keys"},
		{"no key", func(c *SSHConfig) { c.KeyFile = "" }, "no key_file and no agent"},
		{"missing key file", func(c *SSHConfig) { c.KeyFile = "/nonexistent" }, "read key file"},
		{"nothing listening", func(c *SSHConfig) { c.Port = 1 }, "is sshd running there?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mut(&cfg)
			s, err := DialSSH(ctx, cfg)
			if err == nil {
				s.Close()
				t.Fatalf("connected; want an error mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatal("key material in an error")
			}
		})
	}
	t.Run("missing known_hosts: unknown host accepted with the flag, file not created", func(t *testing.T) {
		cfg := good
		cfg.KnownHosts = filepath.Join(t.TempDir(), "absent")
		cfg.AcceptUnknownHostKey = true
		s, err := DialSSH(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := os.Stat(cfg.KnownHosts); !os.IsNotExist(err) {
			t.Fatal("ackcheck wrote a known_hosts file")
		}
		cfg.AcceptUnknownHostKey = false
		if _, err := DialSSH(ctx, cfg); err == nil || !strings.Contains(err.Error(), "known_hosts") {
			t.Fatalf("missing known_hosts without the flag: %v", err)
		}
	})
	t.Run("unknown host accepted with the flag, and reported", func(t *testing.T) {
		cfg := good
		cfg.KnownHosts = filepath.Join(t.TempDir(), "empty")
		os.WriteFile(cfg.KnownHosts, nil, 0o600)
		cfg.AcceptUnknownHostKey = true
		s, err := DialSSH(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !strings.HasPrefix(s.AcceptedUnknownKey, "ssh-ed25519 SHA256:") {
			t.Fatalf("accepted key %q", s.AcceptedUnknownKey)
		}
	})
}

// Issue 12's probe: a port that accepts connections and never answers is a
// timeout that says to check the port, not an authentication failure that
// sends the user to authorized_keys.
func TestSSHSilentPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	os.WriteFile(known, nil, 0o600)
	start := time.Now()
	_, err = DialSSH(context.Background(), SSHConfig{Host: "127.0.0.1", Port: port, User: "u", KeyFile: writeTestKey(t, dir),
		KnownHosts: known, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not speak SSH") || strings.Contains(err.Error(), "authorized_keys") {
		t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// writeTestKey writes a fresh ed25519 private key in OpenSSH form.
func writeTestKey(t *testing.T, dir string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
