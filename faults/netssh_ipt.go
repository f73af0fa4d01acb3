package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/remote"
)

// iptables on SSH nodes without nft (or with `firewall: iptables`): the
// same rule as the nft script (netssh.go's script), in chains of
// ackcheck's own in the filter table, ackc_<name>_out jumped to from
// OUTPUT and ackc_<name>_in from INPUT. Each family is one
// iptables-restore --noflush transaction: the chain, its rules and the
// jump to it go in together or not at all.

// iptChainMax is the longest chain name iptables takes.
const iptChainMax = 28

// iptMultiportMax is the most ports one multiport match takes.
const iptMultiportMax = 15

// iptChain is the chain of rule name on hook suffix ("out" or "in").
func iptChain(name, suffix string) string { return "ackc_" + name + "_" + suffix }

// iptScripts are the iptables-restore scripts that install r on its
// node, by family ("iptables" for IPv4, "ip6tables" for IPv6); a family
// with no address to match has none.
func (n *sshNet) iptScripts(r netns.Rule, s sshSession) (map[string]string, error) {
	m, err := n.matchOf(r, s)
	if err != nil {
		return nil, err
	}
	if l := len(iptChain(r.Name, "out")); l > iptChainMax {
		return nil, fmt.Errorf("rule name %q: iptables chain names take at most %d characters, %s has %d", r.Name, iptChainMax, iptChain(r.Name, "out"), l)
	}
	ports := make([]string, len(n.ports))
	for i, p := range n.ports {
		ports[i] = strconv.Itoa(p)
	}
	portList := strings.Join(ports, ",")
	drop := "-j DROP"
	if m.percent < 100 {
		drop = fmt.Sprintf("-m statistic --mode random --probability %.2f -j DROP", float64(m.percent)/100)
	}
	chains := []struct{ suffix, hook, dir string }{{"out", "OUTPUT", "-d"}, {"in", "INPUT", "-s"}}
	if r.Kind == netns.OneWay {
		chains = chains[:1] // as the nft script: what the node sends only
	}
	scripts := map[string]string{}
	for _, fam := range []struct{ nft, tool string }{{"ip", "iptables"}, {"ip6", "ip6tables"}} {
		set := m.family(fam.nft)
		if len(set) == 0 {
			continue
		}
		if fam.tool == "ip6tables" && !s.ip6tables {
			return nil, fmt.Errorf("node %d: ip6tables-restore missing, and the rule matches IPv6 addresses %v: apt-get install iptables", r.Node, set)
		}
		var b strings.Builder
		b.WriteString("*filter\n")
		for _, c := range chains {
			fmt.Fprintf(&b, ":%s - [0:0]\n", iptChain(r.Name, c.suffix))
		}
		for _, c := range chains {
			// --dports: connections to the broker ports; --sports: their
			// answers. Neither matches the SSH session (preflight).
			for _, pdir := range []string{"--dports", "--sports"} {
				fmt.Fprintf(&b, "-A %s -p tcp %s %s -m multiport %s %s %s\n",
					iptChain(r.Name, c.suffix), c.dir, strings.Join(set, ","), pdir, portList, drop)
			}
			fmt.Fprintf(&b, "-I %s -j %s\n", c.hook, iptChain(r.Name, c.suffix))
		}
		b.WriteString("COMMIT\n")
		scripts[fam.tool] = b.String()
	}
	return scripts, nil
}

// iptApply installs r with iptables-restore, IPv4 then IPv6; when the
// second fails, the first is taken out again: nothing half-applied.
func (n *sshNet) iptApply(ctx context.Context, run remote.Runner, r netns.Rule, s sshSession) error {
	scripts, err := n.iptScripts(r, s)
	if err != nil {
		return err
	}
	for _, tool := range []string{"iptables", "ip6tables"} {
		script, ok := scripts[tool]
		if !ok {
			continue
		}
		// -w: wait for the xtables lock another firewall tool holds.
		_, err := run.Run(ctx, s.sudo+tool+"-restore -w --noflush <<'ACKCHECK_IPT'\n"+script+"ACKCHECK_IPT\n")
		if err != nil {
			err = fmt.Errorf("install %s on node %d with %s-restore: %w", r, r.Node, tool, err)
			if rerr := n.iptRemove(ctx, r, s); rerr != nil {
				err = fmt.Errorf("%w; and taking out what was installed: %v", err, rerr)
			}
			return err
		}
	}
	return nil
}

// iptRemove takes r's chains out of both families, with their jumps; a
// chain that is not there (removed before) is no error: a heal may run
// twice. One command on the node. A chain is known to be absent only from
// a listing of the filter table that succeeded: a listing that failed
// (sudo refused, the xtables lock, which -w waits for) fails the removal
// rather than pass for "nothing to remove". The tools are looked for in
// /usr/sbin too: a non-root user's PATH over SSH often lacks it, while
// sudo's own path has it.
func (n *sshNet) iptRemove(ctx context.Context, r netns.Rule, s sshSession) error {
	var b strings.Builder
	for _, tool := range []string{"iptables", "ip6tables"} {
		fmt.Fprintf(&b, "if command -v %[1]s >/dev/null 2>&1 || [ -x /usr/sbin/%[1]s ]; then "+
			"rules=$(%[2]s%[1]s -w -S 2>&1) || { echo \"%[1]s -S: $rules\" >&2; exit 1; }\n", tool, s.sudo)
		for _, c := range []struct{ suffix, hook string }{{"out", "OUTPUT"}, {"in", "INPUT"}} {
			ch := iptChain(r.Name, c.suffix)
			fmt.Fprintf(&b, "  if printf '%%s\\n' \"$rules\" | grep -qx -- '-N %[2]s'; then "+
				"while %[3]s%[1]s -w -D %[4]s -j %[2]s 2>/dev/null; do :; done; %[3]s%[1]s -w -F %[2]s && %[3]s%[1]s -w -X %[2]s || exit 1; fi\n",
				tool, ch, s.sudo, c.hook)
		}
		b.WriteString("fi\n")
	}
	if _, err := n.nodes[r.Node].run.Run(ctx, b.String()); err != nil {
		return fmt.Errorf("remove %s on node %d (iptables): %w", r, r.Node, err)
	}
	return nil
}
