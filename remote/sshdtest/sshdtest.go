// Package sshdtest starts a real OpenSSH sshd (Debian's openssh-server) on
// 127.0.0.1 for tests: its own config, host key, user key and
// authorized_keys, all made in a temporary directory, and a known_hosts
// that lists its host key. Tests skip when /usr/sbin/sshd is missing,
// unless ACKCHECK_REQUIRE_SSHD is set (as .ci/run does): then they fail.
package sshdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/need"
)

// Server is a running sshd.
type Server struct {
	Port       int
	User       string
	KeyFile    string // the user's private key, accepted by the server
	OtherKey   string // a private key the server does not accept
	KnownHosts string // lists the server's host key
	WrongHosts string // lists another key for the same host
	Dir        string
}

// Options place the server elsewhere than 127.0.0.1 on this machine's
// network.
type Options struct {
	// Netns runs sshd inside this network namespace (`ip netns exec`).
	Netns string
	// Addr is the address sshd listens on (default 127.0.0.1); with
	// Netns, an address of that namespace.
	Addr string
	// Port is the port (default: a free one on this machine).
	Port int
	// Dial reaches Addr to wait until sshd listens (needed with Netns).
	Dial func(network, addr string) (net.Conn, error)
}

// Start runs sshd on 127.0.0.1 until the test ends.
func Start(t *testing.T) *Server { t.Helper(); return StartWith(t, Options{}) }

// StartWith runs sshd as opts say until the test ends.
func StartWith(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1"
	}
	if opts.Dial == nil {
		opts.Dial = net.Dial
	}
	const sshd = "/usr/sbin/sshd"
	need.SSHDTools(t)
	if opts.Netns != "" {
		need.NetnsTools(t)
	}
	dir := t.TempDir()
	keygen := func(name string) string {
		path := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		return path
	}
	host, other, user, stranger := keygen("host"), keygen("otherhost"), keygen("user"), keygen("stranger")
	pub := func(p string) string {
		b, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(pub(user)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := opts.Port
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	fields := func(k string) string { f := strings.Fields(k); return f[0] + " " + f[1] }
	known := fmt.Sprintf("[%s]:%d %s\n", opts.Addr, port, fields(pub(host)))
	wrong := fmt.Sprintf("[%s]:%d %s\n", opts.Addr, port, fields(pub(other)))
	s := &Server{Port: port, User: currentUser(), KeyFile: user, OtherKey: stranger, Dir: dir,
		KnownHosts: filepath.Join(dir, "known_hosts"), WrongHosts: filepath.Join(dir, "wrong_known_hosts")}
	os.WriteFile(s.KnownHosts, []byte(known), 0o600)
	os.WriteFile(s.WrongHosts, []byte(wrong), 0o600)
	cfg := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PidFile %s
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
LogLevel ERROR
`, port, opts.Addr, host, filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	cfgPath := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	os.MkdirAll("/run/sshd", 0o755) // privilege separation dir, required by sshd
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfgPath)
	if opts.Netns != "" {
		// ip netns exec execs sshd in place: the PID killed at cleanup is sshd's.
		cmd = exec.Command("ip", "netns", "exec", opts.Netns, sshd, "-D", "-e", "-f", cfgPath)
	}
	logf, _ := os.Create(filepath.Join(dir, "sshd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // only the sshd this test started, by PID
		cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := opts.Dial("tcp", net.JoinHostPort(opts.Addr, fmt.Sprint(port)))
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Fatalf("sshd did not listen on %d:\n%s", port, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		return "root"
	}
	return strings.TrimSpace(string(out))
}
