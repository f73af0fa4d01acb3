package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHConfig says how to reach one machine.
type SSHConfig struct {
	Host string
	Port int // default 22
	User string
	// KeyFile is a private key (unencrypted, or decrypted by the agent).
	KeyFile string
	// Agent uses the SSH agent at $SSH_AUTH_SOCK.
	Agent bool
	// KnownHosts is the known_hosts file the host key is checked against.
	// Default ~/.ssh/known_hosts.
	KnownHosts string
	// AcceptUnknownHostKey accepts a host that known_hosts does not list
	// (never a host whose key differs from the listed one). The acceptance
	// is recorded in AcceptedUnknownKey so that reports can state it.
	AcceptUnknownHostKey bool
	// Timeout bounds connecting. Default 10s.
	Timeout time.Duration
	// Dial opens the TCP connection (e.g. from a network namespace, in
	// tests); nil dials from this machine's network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (c SSHConfig) addr() string {
	port := c.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(port))
}

// SSH runs commands on one machine over one SSH connection, redialling
// once if the connection broke.
type SSH struct {
	cfg SSHConfig
	// AcceptedUnknownKey is the fingerprint of an unknown host key that was
	// accepted because AcceptUnknownHostKey was set ("" if none).
	AcceptedUnknownKey string

	mu     sync.Mutex
	client *ssh.Client
}

var _ Runner = (*SSH)(nil)

// DialSSH connects and authenticates, or says what to fix.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSH, error) {
	s := &SSH{cfg: cfg}
	if err := s.dial(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Where implements Runner.
func (s *SSH) Where() string { return s.cfg.User + "@" + s.cfg.addr() }

func (s *SSH) dial(ctx context.Context) error {
	cfg := s.cfg
	if cfg.User == "" {
		return fmt.Errorf("ssh %s: no user: set user in the cluster file", cfg.addr())
	}
	var auths []ssh.AuthMethod
	if cfg.KeyFile != "" {
		pem, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return fmt.Errorf("ssh %s: read key file: %w", s.Where(), err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		var pass *ssh.PassphraseMissingError
		if errors.As(err, &pass) {
			return fmt.Errorf("ssh %s: key file %s is encrypted: load it into ssh-agent and set agent: true", s.Where(), cfg.KeyFile)
		}
		if err != nil {
			return fmt.Errorf("ssh %s: key file %s is not a private key: %v", s.Where(), cfg.KeyFile, err)
		}
		auths = append(auths, ssh.PublicKeys(signer))
	}
	if cfg.Agent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			return fmt.Errorf("ssh %s: agent: true but SSH_AUTH_SOCK is not set: start ssh-agent or give key_file", s.Where())
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return fmt.Errorf("ssh %s: connect to the agent at %s: %w", s.Where(), sock, err)
		}
		auths = append(auths, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	if len(auths) == 0 {
		return fmt.Errorf("ssh %s: no key_file and no agent: give one in the cluster file", s.Where())
	}
	hostKeys, err := s.hostKeyCallback()
	if err != nil {
		return err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dial(dctx, "tcp", cfg.addr())
	if err != nil {
		return fmt.Errorf("ssh %s: %w (is sshd running there? check host and port)", s.Where(), err)
	}
	conn.SetDeadline(time.Now().Add(timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, cfg.addr(), &ssh.ClientConfig{
		User: cfg.User, Auth: auths, HostKeyCallback: hostKeys, Timeout: timeout,
	})
	if err != nil {
		conn.Close()
		var hk *hostKeyError
		if errors.As(err, &hk) {
			return hk
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("ssh %s: no SSH answer within %s: the port accepts connections but did not speak SSH (check that the port is sshd's)", s.Where(), timeout)
		}
		if !strings.Contains(err.Error(), "unable to authenticate") {
			return fmt.Errorf("ssh %s: the SSH handshake failed: %w (check that the port is sshd's)", s.Where(), err)
		}
		how := "key " + cfg.KeyFile
		if cfg.KeyFile == "" {
			how = "the agent's keys"
		}
		return fmt.Errorf("ssh %s: authentication with %s failed: %w (check the user name and that the public key is in that user's authorized_keys)", s.Where(), how, err)
	}
	conn.SetDeadline(time.Time{})
	s.client = ssh.NewClient(c, chans, reqs)
	return nil
}

// hostKeyError is a refused host key, with what to do about it.
type hostKeyError struct{ msg string }

func (e *hostKeyError) Error() string { return e.msg }

func (s *SSH) hostKeyCallback() (ssh.HostKeyCallback, error) {
	file := s.cfg.KnownHosts
	if file == "" {
		home, _ := os.UserHomeDir()
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	// A missing known_hosts with --accept-unknown-host-keys means every
	// host is unknown; ackcheck never writes the user's known_hosts.
	files := []string{file}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) && s.cfg.AcceptUnknownHostKey {
		files = nil
	}
	check, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: read known_hosts %s: %w (create it with ssh-keyscan -p %d %s >> %s)", s.Where(), file, err, s.cfg.Port, s.cfg.Host, file)
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		fp := ssh.FingerprintSHA256(key)
		if len(ke.Want) > 0 {
			return &hostKeyError{fmt.Sprintf("ssh %s: REFUSED: the host key (%s %s) does not match the one %s lists for this host (line %d): someone may be in between, or the key changed; if it changed on purpose, remove that line",
				s.Where(), key.Type(), fp, file, ke.Want[0].Line)}
		}
		if !s.cfg.AcceptUnknownHostKey {
			return &hostKeyError{fmt.Sprintf("ssh %s: host key %s %s is not in %s: add it (ssh-keyscan -p %d %s >> %s) or pass --accept-unknown-host-keys",
				s.Where(), key.Type(), fp, file, s.cfg.Port, s.cfg.Host, file)}
		}
		s.AcceptedUnknownKey = key.Type() + " " + fp
		return nil
	}, nil
}

// Run implements Runner. Stdout and stderr are kept apart, each in its own
// buffer (one shared buffer lost output in PLATFORM.md's measurements).
func (s *SSH) Run(ctx context.Context, cmd string) (string, error) {
	out, err := s.run(ctx, cmd)
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) && ctx.Err() == nil {
		// The connection may have broken (sshd restarted): redial once.
		s.mu.Lock()
		if s.client != nil {
			s.client.Close()
		}
		derr := s.dial(ctx)
		s.mu.Unlock()
		if derr != nil {
			return "", fmt.Errorf("%v; redial: %w", err, derr)
		}
		return s.run(ctx, cmd)
	}
	return out, err
}

func (s *SSH) run(ctx context.Context, cmd string) (string, error) {
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	if client == nil {
		return "", errors.New("ssh: closed")
	}
	sess, err := client.NewSession()
	if err != nil {
		return "", fmt.Errorf("ssh %s: open session: %w", s.Where(), err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case <-ctx.Done():
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		return stdout.String(), fmt.Errorf("ssh %s: `%s`: %w", s.Where(), cmd, ctx.Err())
	case err := <-done:
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), &ExitError{Where: s.Where(), Cmd: cmd, Code: ee.ExitStatus(), Stderr: stderr.String()}
		}
		if err != nil {
			return stdout.String(), fmt.Errorf("ssh %s: `%s`: %w", s.Where(), cmd, err)
		}
		return stdout.String(), nil
	}
}

// Close implements Runner.
func (s *SSH) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return nil
	}
	err := s.client.Close()
	s.client = nil
	return err
}
