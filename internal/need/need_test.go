package need

import (
	"fmt"
	"strings"
	"testing"
)

// fakeTB records what a helper did to its test instead of doing it.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                          {}
func (f *fakeTB) Skipf(format string, args ...any) { f.skipped = fmt.Sprintf(format, args...) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestToolsSkipsNamingWhatIsMissing(t *testing.T) {
	const absent = "ackcheck-no-such-tool"
	cases := []struct {
		name    string
		require string // ACKCHECK_REQUIRE_NETNS
		tools   []string
		skipped []string // each in the skip message
		failed  []string // each in the failure
	}{
		{name: "all there", tools: []string{"sh"}},
		{name: "one missing", tools: []string{"sh", absent}, skipped: []string{absent + " is not installed", "set ACKCHECK_REQUIRE_NETNS"}},
		{name: "a known tool's package", tools: []string{"/nonexistent/sshd", "iptables-ackcheck"}, skipped: []string{"/nonexistent/sshd is not installed", "iptables-ackcheck is not installed"}},
		{name: "missing and required", require: "1", tools: []string{absent}, failed: []string{absent + " is not installed", "ACKCHECK_REQUIRE_NETNS is set"}},
		{name: "required, all there", require: "1", tools: []string{"sh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(string(Netns), c.require)
			f := &fakeTB{TB: t}
			Tools(f, Netns, c.tools...)
			check := func(what, got string, want []string) {
				if len(want) == 0 && got != "" {
					t.Errorf("%s: %q, want nothing", what, got)
				}
				for _, w := range want {
					if !strings.Contains(got, w) {
						t.Errorf("%s: %q, want it to say %q", what, got, w)
					}
				}
			}
			check("skipped", f.skipped, c.skipped)
			check("failed", f.failed, c.failed)
		})
	}
}

func TestMissingNamesThePackage(t *testing.T) {
	packages["ackcheck-fake-tool"] = "ackcheck-fake-package"
	defer delete(packages, "ackcheck-fake-tool")
	if got := Missing("ackcheck-fake-tool"); got != "ackcheck-fake-tool is not installed (Debian package ackcheck-fake-package)" {
		t.Errorf("Missing: %q", got)
	}
	if got := Missing("sh"); got != "" {
		t.Errorf("Missing(sh) = %q, want \"\"", got)
	}
}
