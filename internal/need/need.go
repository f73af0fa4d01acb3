// Package need is the one place where a test that uses something real on
// this machine (root, a tool such as sshd, nft, iptables, ip, tc, java,
// chromium, fusermount3, PostgreSQL's initdb) says what it needs. Where
// something is missing the test skips, naming the missing thing and the
// Debian package that gives it, so that `make test` passes on any machine;
// where the ACKCHECK_REQUIRE_* variable that stands for it is set (.ci/run
// sets them all) the test fails instead, so that CI never passes by
// skipping.
//
// Each helper checks everything the test needs before the test makes
// anything: a test that needs nft and iptables and finds only nft skips
// before its first namespace, never failing halfway on "command not
// found".
package need

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Require is an ACKCHECK_REQUIRE_* variable: set (to anything), a missing
// requirement fails the test instead of skipping it.
type Require string

// The variables, and what each stands for.
const (
	// Netns: root and iproute2's ip and tc, nftables' nft, and for the
	// cases that ask for it iptables (network namespaces and their
	// rules, on this machine or on SSH nodes made of namespaces).
	Netns Require = "ACKCHECK_REQUIRE_NETNS"
	// SSHD: Debian's openssh-server (/usr/sbin/sshd) and ssh-keygen.
	SSHD Require = "ACKCHECK_REQUIRE_SSHD"
	// FUSE: /dev/fuse and fuse3's fusermount3.
	FUSE Require = "ACKCHECK_REQUIRE_FUSE"
	// Chromium: Debian's chromium, for rendering reports.
	Chromium Require = "ACKCHECK_REQUIRE_CHROMIUM"
	// Queen: a Queen MQ home and PostgreSQL.
	Queen Require = "ACKCHECK_REQUIRE_QUEEN"
)

// packages names the Debian package of each tool the tests look for.
var packages = map[string]string{
	"ip": "iproute2", "tc": "iproute2", "nft": "nftables",
	"iptables": "iptables", "iptables-restore": "iptables", "ip6tables": "iptables", "ip6tables-restore": "iptables",
	"/usr/sbin/sshd": "openssh-server", "sshd": "openssh-server", "ssh-keygen": "openssh-client",
	"chromium": "chromium", "fusermount3": "fuse3", "java": "openjdk-17-jre-headless", "mvn": "maven",
	"perl": "perl", "bash": "bash", "timeout": "coreutils", "initdb": "postgresql",
}

// sbin are the directories root's tools live in, which a plain user's
// PATH often lacks.
var sbin = []string{"/usr/sbin", "/sbin"}

// Found reports whether tool is installed: an absolute path that exists,
// or a name on PATH or in /usr/sbin or /sbin.
func Found(tool string) bool {
	if filepath.IsAbs(tool) {
		_, err := os.Stat(tool)
		return err == nil
	}
	if _, err := exec.LookPath(tool); err == nil {
		return true
	}
	for _, d := range sbin {
		if fi, err := os.Stat(filepath.Join(d, tool)); err == nil && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// Missing says which of tools are not installed, each with its package
// ("iptables is not installed (Debian package iptables)"); "" when all
// are.
func Missing(tools ...string) string {
	var missing []string
	for _, tool := range tools {
		if Found(tool) {
			continue
		}
		what := tool + " is not installed"
		if p := packages[tool]; p != "" {
			what += " (Debian package " + p + ")"
		}
		missing = append(missing, what)
	}
	return strings.Join(missing, "; ")
}

// Skip skips t saying why, or fails it when req is set. It does nothing
// when why is "".
func Skip(t testing.TB, req Require, why string) {
	t.Helper()
	if why == "" {
		return
	}
	if os.Getenv(string(req)) != "" {
		t.Fatalf("%s, and %s is set", why, req)
		return
	}
	t.Skipf("%s (set %s to make this a failure)", why, req)
}

// Tools skips t (or fails it, with req set) unless every tool is
// installed.
func Tools(t testing.TB, req Require, tools ...string) {
	t.Helper()
	Skip(t, req, Missing(tools...))
}

// Root is Tools for a test that also needs root.
func Root(t testing.TB, req Require, tools ...string) {
	t.Helper()
	why := Missing(tools...)
	if os.Geteuid() != 0 {
		why = strings.TrimPrefix(why+"; it needs root", "; ")
	}
	Skip(t, req, why)
}

// NetnsTools is what a test that makes network namespaces and installs
// rules in them needs: root, ip, tc and nft, and any more tools given
// (iptables for its iptables cases).
func NetnsTools(t testing.TB, more ...string) {
	t.Helper()
	Root(t, Netns, append([]string{"ip", "tc", "nft"}, more...)...)
}

// Iptables is what the iptables cases of a network test need beside
// NetnsTools: iptables and iptables-restore. Where nft alone is
// installed, those cases skip and the nft ones run.
func Iptables(t testing.TB) {
	t.Helper()
	Tools(t, Netns, "iptables", "iptables-restore")
}

// SSHDTools is what a test that starts a real sshd needs: Debian's
// openssh-server and ssh-keygen.
func SSHDTools(t testing.TB) {
	t.Helper()
	Tools(t, SSHD, "/usr/sbin/sshd", "ssh-keygen")
}
