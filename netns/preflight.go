package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Capability is what Preflight found for one kind of network fault.
type Capability struct {
	Kind Kind
	// OK: it can run here; Why says what is missing when it cannot.
	OK  bool
	Why string
}

// Delay is the kind netem would give (delay, jitter, reordering). It is
// not one this package installs: Preflight reports whether the kernel
// has netem, so that a schedule asking for a delay is refused saying so,
// never run as something else.
const Delay Kind = "delay"

// Preflight says, per kind of network fault, whether this machine can
// install it: root, ip, nft and tc, and the kernel's tbf and netem qdiscs
// (tried in a scratch namespace of its own, deleted again).
func Preflight(ctx context.Context) []Capability {
	missing := func(tool string) string {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed"
		}
		return ""
	}
	base := ""
	switch {
	case os.Geteuid() != 0:
		base = "network namespaces need root"
	case missing("ip") != "":
		base = missing("ip") + " (iproute2)"
	}
	nft, tc := base, base
	if nft == "" {
		nft = missing("nft")
	}
	if tc == "" {
		tc = missing("tc")
	}
	tbf, netem := tc, tc
	if tc == "" {
		tbf, netem = qdiscMissing(ctx, "tbf", "rate", "1mbit", "burst", "32k", "latency", "400ms"), qdiscMissing(ctx, "netem", "delay", "1ms")
	}
	caps := []Capability{{Kind: Cut, Why: nft}, {Kind: OneWay, Why: nft}, {Kind: Loss, Why: nft}, {Kind: Bandwidth, Why: tbf}, {Kind: Delay, Why: netem}}
	for i := range caps {
		caps[i].OK = caps[i].Why == ""
	}
	return caps
}

// qdiscMissing adds the qdisc to lo in a scratch namespace and says why
// it could not, "" when it could.
func qdiscMissing(ctx context.Context, kind string, args ...string) string {
	ns := fmt.Sprintf("ackcheck-preflight-%d", os.Getpid())
	if _, err := run(ctx, "ip", "netns", "add", ns); err != nil {
		return "cannot make a scratch network namespace: " + err.Error()
	}
	defer run(context.WithoutCancel(ctx), "ip", "netns", "delete", ns)
	_, err := run(ctx, "ip", append([]string{"netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", kind}, args...)...)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrToolMissing):
		return err.Error()
	case strings.Contains(err.Error(), "Specified qdisc kind is unknown") || strings.Contains(err.Error(), "qdisc kind is unknown"):
		return fmt.Sprintf("%s is not available in this kernel (tc: \"Specified qdisc kind is unknown\")", kind)
	}
	return fmt.Sprintf("adding a %s qdisc failed: %v", kind, err)
}
