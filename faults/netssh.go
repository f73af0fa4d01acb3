package faults

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/remote"
)

// Network faults on the SSH nodes of a cluster file (issue 26, point 3).
//
// A rule is an nft script run on its node through the node's runner
// (`nft -f -` fed by a heredoc), in ackcheck's own table (inet ackcheck),
// with chains named after the rule (<name>_in, <name>_out), so that one
// fault is removed alone. On a node without nft (or with `firewall:
// iptables` in the cluster file) it is an iptables-restore --noflush
// script instead: chains ackc_<name>_in and ackc_<name>_out, each jumped
// to from INPUT and OUTPUT, installed in one transaction per family. A rule matches only TCP on the broker ports (the
// union of every node's `ports:`) to and from the peers' addresses (and,
// for partition-client, the address ackcheck's SSH session comes from).
//
// Invariant: ackcheck's own SSH session is never cut. Each node's session
// tuple is read on the node ($SSH_CONNECTION: client IP, client port,
// server IP, server port), and a rule whose ports include either port of
// the tuple is refused before anything is installed: only then can no
// packet of the session match a rule.

// sshNetPrefix starts the journal name of an SSH network.
const sshNetPrefix = "ssh-"

func isSSHNet(name string) bool { return strings.HasPrefix(name, sshNetPrefix) }

// NeedsNodes reports whether undoing undos needs the run's nodes opened
// (a cluster file's SSH connections): a rule on SSH nodes is removed
// through them. A Driver is needed only when NeedsCluster says so.
func NeedsNodes(undos []Undo) bool {
	if NeedsCluster(undos) {
		return true
	}
	return slices.ContainsFunc(undos, func(u Undo) bool {
		return u.Kind == UndoFile || u.Kind == UndoDiskError || u.Kind == UndoNetRule && isSSHNet(u.Net)
	})
}

// SetNetDial sets how ackcheck's own probes of the nodes' broker ports
// connect (a test's client side in a namespace); nil is the machine's
// network. Call it before the run.
func (s *Scripted) SetNetDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	s.netDial = dial
	s.nw = nil
}

// network is the nodes as a Network, or why they cannot be one.
func (s *Scripted) network() (Network, error) {
	if s.nw != nil {
		return s.nw, nil
	}
	n := &sshNet{nodes: map[int32]*sshNode{}, dial: s.netDial, sessions: map[int32]sshSession{}, prep: &s.prep}
	var key []string
	for _, id := range s.ids {
		spec, run := s.specs[id], s.runners[id]
		if spec.local() {
			return nil, fmt.Errorf("node %d of the cluster file runs on this machine: a network fault would change this machine's own firewall; use a local cluster in namespaces (`ackcheck cluster <broker> up --netns`)", id)
		}
		if len(spec.Ports) == 0 {
			return nil, fmt.Errorf("node %d of the cluster file gives no broker ports: add e.g. `ports: [9092, 9093]` (its client and peer ports) for network faults", id)
		}
		for _, p := range spec.Ports {
			if p <= 0 || p > 65535 {
				return nil, fmt.Errorf("node %d of the cluster file: port %d is not a TCP port", id, p)
			}
		}
		addr := spec.Address
		if addr == "" {
			addr = spec.Host
		}
		ip, err := netip.ParseAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("node %d of the cluster file: %q is not an IP address: give `address:` (the IP its peers reach it at) for network faults", id, addr)
		}
		if run == nil {
			return nil, fmt.Errorf("node %d has no runner: connect the cluster file first", id)
		}
		n.nodes[id] = &sshNode{id: id, run: run, addr: ip.Unmap(), ports: spec.Ports, firewall: spec.Firewall}
		n.ids = append(n.ids, id)
		key = append(key, fmt.Sprintf("%d=%s", id, ip))
		for _, p := range spec.Ports {
			if !slices.Contains(n.ports, p) {
				n.ports = append(n.ports, p)
			}
		}
	}
	if len(n.ids) == 0 {
		return nil, errors.New("the cluster file has no nodes")
	}
	slices.Sort(n.ids)
	slices.Sort(n.ports)
	n.name = sshNetName(key)
	s.nw = n
	return n, nil
}

// SSHNetworkName is the name a cluster file's nodes have as a network in
// the heal journal and in network_proof ("ssh-" and a hash of each node's
// id and address): the same nodes at the same addresses always give the
// same name, so a heal after a crash finds its rules' network again.
func SSHNetworkName(nodes []NodeSpec) string {
	var key []string
	for _, spec := range nodes {
		addr := spec.Address
		if addr == "" {
			addr = spec.Host
		}
		if ip, err := netip.ParseAddr(addr); err == nil {
			addr = ip.String()
		}
		key = append(key, fmt.Sprintf("%d=%s", spec.ID, addr))
	}
	return sshNetName(key)
}

func sshNetName(key []string) string {
	key = slices.Clone(key)
	slices.Sort(key)
	h := fnv.New32a()
	h.Write([]byte(strings.Join(key, ",")))
	return fmt.Sprintf("%s%08x", sshNetPrefix, h.Sum32())
}

// sshNet is a cluster file's SSH nodes as a Network.
type sshNet struct {
	name  string
	ids   []int32
	nodes map[int32]*sshNode
	ports []int // every node's broker ports: what rules match
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	// prep is the nodes' prepared shells (Scripted.Prepare): a rule goes
	// through a node's shell, whose session was checked when prepared.
	prep *preparedSet

	mu       sync.Mutex
	sessions map[int32]sshSession // the last read of each node's
}

type sshNode struct {
	id       int32
	run      remote.Runner
	addr     netip.Addr
	ports    []int
	firewall string // the cluster file's: "", "nft" or "iptables"
}

// sshSession is what preflight reads on a node: ackcheck's SSH session
// tuple, and how nft can run there.
type sshSession struct {
	clientIP               netip.Addr
	clientPort, serverPort int
	nft                    bool
	iptables               bool   // iptables-restore is there
	ip6tables              bool   // ip6tables-restore is there
	sudo                   string // "" as root, "sudo -n " otherwise
	root                   bool
}

var _ Network = (*sshNet)(nil)

func (n *sshNet) Name() string     { return n.name }
func (n *sshNet) Members() []int32 { return n.ids }
func (n *sshNet) Port() int        { return n.ports[0] }

// session reads node id's SSH session tuple, nft and privileges; fresh
// reads them again even when read before, as Apply does: a runner that
// redialled has a new client port, which must be checked again.
func (n *sshNet) session(ctx context.Context, id int32, fresh bool) (sshSession, error) {
	n.mu.Lock()
	s, ok := n.sessions[id]
	n.mu.Unlock()
	if ok && !fresh {
		return s, nil
	}
	node := n.nodes[id]
	out, err := node.run.Run(ctx, sessionCmd)
	if err != nil {
		return s, fmt.Errorf("read node %d's SSH session and tools: %w", id, err)
	}
	s, err = parseSession(out)
	if err != nil {
		return s, fmt.Errorf("node %d (%s): %w", id, node.run.Where(), err)
	}
	n.mu.Lock()
	n.sessions[id] = s
	n.mu.Unlock()
	return s, nil
}

// sessionCmd reads ackcheck's SSH session tuple on a node, its firewall
// tools and its privileges.
const sessionCmd = `echo "conn=$SSH_CONNECTION"; echo "uid=$(id -u)"; ` +
	`if command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ]; then echo nft=yes; fi; ` +
	`if command -v iptables-restore >/dev/null 2>&1 || [ -x /usr/sbin/iptables-restore ]; then echo iptables=yes; fi; ` +
	`if command -v ip6tables-restore >/dev/null 2>&1 || [ -x /usr/sbin/ip6tables-restore ]; then echo ip6tables=yes; fi; ` +
	`if sudo -n true >/dev/null 2>&1; then echo sudo=yes; fi`

// prepareSessions reads, in each node's prepared shell, its session tuple
// and tools, once per shell: a rule installed through that shell later
// needs no fresh read, since the shell lives on the SSH connection they
// describe (a redialled connection closes it). Nodes without a prepared
// shell are left as they are.
func (n *sshNet) prepareSessions(ctx context.Context) error {
	errs := make([]error, len(n.ids))
	var wg sync.WaitGroup
	for i, id := range n.ids {
		p := n.prep.get(id)
		if p == nil || p.session != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := shellRunner{p.shell}.Run(ctx, sessionCmd)
			if err == nil {
				var s sshSession
				if s, err = parseSession(out); err == nil {
					n.prep.setSession(id, p.shell, s)
					n.mu.Lock()
					n.sessions[id] = s
					n.mu.Unlock()
					return
				}
			}
			errs[i] = fmt.Errorf("node %d: read the SSH session in its prepared shell: %w", id, err)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runner is how commands reach node id: its prepared shell while that
// lives (a command costs one round trip), else its Runner (a session each).
func (n *sshNet) runner(id int32) remote.Runner {
	if p := n.prep.get(id); p != nil {
		return shellRunner{p.shell}
	}
	return n.nodes[id].run
}

// parseSession reads the preflight command's output.
func parseSession(out string) (sshSession, error) {
	var s sshSession
	var conn string
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "conn":
			conn = v
		case "uid":
			s.root = v == "0"
		case "nft":
			s.nft = v == "yes"
		case "iptables":
			s.iptables = v == "yes"
		case "ip6tables":
			s.ip6tables = v == "yes"
		case "sudo":
			if v == "yes" && !s.root {
				s.sudo = "sudo -n "
			}
		}
	}
	f := strings.Fields(conn)
	if len(f) != 4 {
		return s, fmt.Errorf("$SSH_CONNECTION is %q, not \"client-ip client-port server-ip server-port\": ackcheck cannot tell its own SSH session from the broker's traffic, so it installs no rule (is the node reached over SSH?)", conn)
	}
	ip, err := netip.ParseAddr(f[0])
	if err != nil {
		return s, fmt.Errorf("$SSH_CONNECTION client address %q: %w", f[0], err)
	}
	s.clientIP = ip.Unmap()
	if s.clientPort, err = strconv.Atoi(f[1]); err != nil {
		return s, fmt.Errorf("$SSH_CONNECTION client port %q: %w", f[1], err)
	}
	if s.serverPort, err = strconv.Atoi(f[3]); err != nil {
		return s, fmt.Errorf("$SSH_CONNECTION server port %q: %w", f[3], err)
	}
	return s, nil
}

// preflight checks every node for what the rule kinds need, and refuses
// broker ports that include a port of ackcheck's SSH session. Each error
// says what to fix.
func (n *sshNet) preflight(ctx context.Context, kinds []netns.Kind) error {
	for _, k := range kinds {
		if k == netns.Bandwidth || k == netns.Delay {
			return fmt.Errorf("%s on SSH nodes: not supported (a qdisc on the node's link would slow ackcheck's own SSH session too); partition, partition-client, one-way and loss can run", kindWord(k))
		}
	}
	var errs []error
	for _, id := range n.ids {
		s, err := n.session(ctx, id, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, n.refuse(id, s))
	}
	return errors.Join(errs...)
}

// refuse says why no rule may be installed on node id with session s.
func (n *sshNet) refuse(id int32, s sshSession) error {
	where := n.nodes[id].run.Where()
	tool, err := n.firewall(id, s)
	switch {
	case err != nil:
		return err
	case !s.root && s.sudo == "":
		return fmt.Errorf("node %d (%s): %s needs root: log in as root or allow the user `sudo -n %s` (NOPASSWD in sudoers)", id, where, tool, tool)
	case tool == "iptables" && len(n.ports) > iptMultiportMax:
		return fmt.Errorf("node %d (%s): the cluster file's broker ports %v are %d, and iptables' multiport match takes at most %d: give fewer `ports:`, or install nftables on the node", id, where, n.ports, len(n.ports), iptMultiportMax)
	case slices.Contains(n.ports, s.serverPort):
		return fmt.Errorf("node %d (%s): the broker ports %v include the SSH server port %d: a rule on them would cut ackcheck's own SSH session; fix `ports:` in the cluster file (or run sshd on another port)", id, where, n.ports, s.serverPort)
	case slices.Contains(n.ports, s.clientPort):
		return fmt.Errorf("node %d (%s): the broker ports %v include port %d, the client side of ackcheck's own SSH session: a rule would cut it; reconnect (a new source port) and run again", id, where, n.ports, s.clientPort)
	}
	return nil
}

// firewall is the tool rules are installed with on node id, whose
// session read s: the cluster file's `firewall:`, or nft where the node
// has it and iptables otherwise. An error says what to install.
func (n *sshNet) firewall(id int32, s sshSession) (string, error) {
	where := n.nodes[id].run.Where()
	switch n.nodes[id].firewall {
	case "nft":
		if !s.nft {
			return "", fmt.Errorf("nft missing on node %d (%s), which the cluster file asks for (firewall: nft): apt-get install nftables, or leave firewall: out", id, where)
		}
		return "nft", nil
	case "iptables":
		if !s.iptables {
			return "", fmt.Errorf("iptables-restore missing on node %d (%s), which the cluster file asks for (firewall: iptables): apt-get install iptables, or leave firewall: out", id, where)
		}
		return "iptables", nil
	}
	switch {
	case s.nft:
		return "nft", nil
	case s.iptables:
		return "iptables", nil
	}
	return "", fmt.Errorf("nft missing on node %d (%s), and iptables too: apt-get install nftables", id, where)
}

// chainName checks a rule's name as nft chain names need it.
func chainName(r netns.Rule) error {
	if r.Name == "" || len(r.Name) > 24 || strings.Trim(r.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("rule name %q: want 1-24 of a-z, 0-9 and _", r.Name)
	}
	return nil
}

// match is what a rule on node r.Node matches, whatever installs it:
// the peers' addresses (and the SSH client's for Client), and the share
// of packets it drops (100 for a cut).
type match struct {
	addrs   []netip.Addr
	percent int
}

// matchOf checks r for node r.Node, whose SSH session is s, and says what
// it matches.
func (n *sshNet) matchOf(r netns.Rule, s sshSession) (match, error) {
	if err := chainName(r); err != nil {
		return match{}, err
	}
	if _, ok := n.nodes[r.Node]; !ok {
		return match{}, fmt.Errorf("node %d is not a node of the cluster file (nodes %v)", r.Node, n.ids)
	}
	peers := r.Peers
	if len(peers) == 0 {
		for _, id := range n.ids {
			if id != r.Node {
				peers = append(peers, id)
			}
		}
	}
	m := match{percent: 100}
	for _, p := range peers {
		pn, ok := n.nodes[p]
		if !ok || p == r.Node {
			return match{}, fmt.Errorf("peer %d of node %d: not another node of the cluster file (nodes %v)", p, r.Node, n.ids)
		}
		m.addrs = append(m.addrs, pn.addr)
	}
	if r.Client {
		m.addrs = append(m.addrs, s.clientIP)
	}
	switch r.Kind {
	case netns.Cut, netns.OneWay:
	case netns.Loss:
		if r.Percent < 1 || r.Percent > 100 {
			return match{}, fmt.Errorf("loss of %d%%: give 1 to 100", r.Percent)
		}
		m.percent = r.Percent
	default:
		return match{}, fmt.Errorf("%s on SSH nodes: not supported; partition, partition-client, one-way and loss can run", kindWord(r.Kind))
	}
	return m, nil
}

// family is m's addresses of one IP family ("ip" or "ip6"), each once.
func (m match) family(fam string) []string {
	var set []string
	for _, a := range m.addrs {
		if (fam == "ip") == a.Is4() && !slices.Contains(set, a.String()) {
			set = append(set, a.String())
		}
	}
	return set
}

// script is the nft script that installs r on its node, whose SSH session
// is s. It matches only TCP on the broker ports, to and from the peers'
// addresses (and the SSH client's for Client).
func (n *sshNet) script(r netns.Rule, s sshSession) (string, error) {
	m, err := n.matchOf(r, s)
	if err != nil {
		return "", err
	}
	drop := "drop"
	if m.percent < 100 {
		drop = fmt.Sprintf("numgen random mod 100 < %d drop", m.percent)
	}
	ports := make([]string, len(n.ports))
	for i, p := range n.ports {
		ports[i] = strconv.Itoa(p)
	}
	portSet := "{ " + strings.Join(ports, ", ") + " }"
	var b strings.Builder
	fmt.Fprintf(&b, "add table inet ackcheck\n")
	chains := []struct{ suffix, hook, dir string }{{"out", "output", "daddr"}, {"in", "input", "saddr"}}
	if r.Kind == netns.OneWay {
		chains = chains[:1] // what the node sends; replies to peers' connects are its sends too
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "add chain inet ackcheck %s_%s { type filter hook %s priority 0; policy accept; }\n", r.Name, c.suffix, c.hook)
		for _, fam := range []string{"ip", "ip6"} {
			set := m.family(fam)
			if len(set) == 0 {
				continue
			}
			// dport: connections to the broker ports; sport: the broker
			// ports' answers. Neither matches the SSH session, whose ports
			// preflight found outside the broker ports.
			for _, pdir := range []string{"dport", "sport"} {
				fmt.Fprintf(&b, "add rule inet ackcheck %s_%s %s %s { %s } tcp %s %s %s\n",
					r.Name, c.suffix, fam, c.dir, strings.Join(set, ", "), pdir, portSet, drop)
			}
		}
	}
	return b.String(), nil
}

// nftRun runs an nft script on a node, through run, as one transaction.
func (n *sshNet) nftRun(ctx context.Context, run remote.Runner, s sshSession, script string) error {
	_, err := run.Run(ctx, s.sudo+"nft -f - <<'ACKCHECK_NFT'\n"+script+"ACKCHECK_NFT\n")
	return err
}

// Apply installs r on its node, after the session check preflight makes:
// a rule is never installed on a node whose session it could cut. On a
// prepared node it is one command through the node's shell, with the
// session its preparation read in that shell (the same SSH connection);
// where the shell is gone, the session is read afresh first, as before.
func (n *sshNet) Apply(ctx context.Context, r netns.Rule) error {
	if _, ok := n.nodes[r.Node]; !ok {
		return fmt.Errorf("node %d is not a node of the cluster file (nodes %v)", r.Node, n.ids)
	}
	if p := n.prep.get(r.Node); p != nil && p.session != nil {
		err := n.install(ctx, shellRunner{p.shell}, r, *p.session)
		var ee *remote.ExitError
		if err == nil || errors.As(err, &ee) || p.shell.Alive() {
			return err
		}
		// The shell died (its connection broke): check the session afresh.
	}
	s, err := n.session(ctx, r.Node, true)
	if err != nil {
		return err
	}
	return n.install(ctx, n.nodes[r.Node].run, r, s)
}

// install installs r through run on a node whose session is s, unless
// the session check refuses it.
func (n *sshNet) install(ctx context.Context, run remote.Runner, r netns.Rule, s sshSession) error {
	if err := n.refuse(r.Node, s); err != nil {
		return err
	}
	if tool, _ := n.firewall(r.Node, s); tool == "iptables" {
		return n.iptApply(ctx, run, r, s)
	}
	script, err := n.script(r, s)
	if err != nil {
		return err
	}
	if err := n.nftRun(ctx, run, s, script); err != nil {
		return fmt.Errorf("install %s on node %d: %w", r, r.Node, err)
	}
	return nil
}

// Remove deletes r's chains on its node; chains that are not there
// (removed before) are no error: a heal may run twice.
func (n *sshNet) Remove(ctx context.Context, r netns.Rule) error {
	if _, ok := n.nodes[r.Node]; !ok {
		return fmt.Errorf("node %d is not a node of the cluster file (nodes %v)", r.Node, n.ids)
	}
	if err := chainName(r); err != nil {
		return err
	}
	s, err := n.session(ctx, r.Node, false)
	if err != nil {
		return err
	}
	if _, err := n.firewall(r.Node, s); err != nil {
		return err
	}
	// The rule is removed with every tool the node has, whichever
	// installed it: the node may have gained nft since, or the heal's
	// cluster file may say another firewall: than the run's. Both
	// removals are no-ops for what is not there.
	if s.iptables {
		if err := n.iptRemove(ctx, r, s); err != nil {
			return err
		}
	}
	if !s.nft {
		return nil
	}
	for _, c := range []string{r.Name + "_out", r.Name + "_in"} {
		err := n.nftRun(ctx, n.nodes[r.Node].run, s, fmt.Sprintf("flush chain inet ackcheck %s\ndelete chain inet ackcheck %s\n", c, c))
		if err != nil && !strings.Contains(err.Error(), "No such file or directory") {
			return fmt.Errorf("remove %s on node %d: %w", r, r.Node, err)
		}
	}
	// The last chain gone, the table goes too: the node's ruleset is left
	// as it was before the first fault. One command on the node, so that
	// nothing is listed and then deleted by two round trips.
	// A listing that fails deletes nothing: the table may hold another
	// fault's chains.
	_, err = n.nodes[r.Node].run.Run(ctx, "if t=$("+s.sudo+"nft list table inet ackcheck 2>/dev/null); then "+
		"printf '%s\n' \"$t\" | grep -q '^[[:space:]]*chain ' || "+s.sudo+"nft delete table inet ackcheck; fi; true")
	if err != nil {
		return fmt.Errorf("remove the empty table inet ackcheck on node %d: %w", r.Node, err)
	}
	return nil
}

// Probe connects from each node to each peer's first broker port (on the
// node, with bash's /dev/tcp under timeout), and from ackcheck to each
// node's first broker port. Refused is an answer (the path works); a
// timeout is a cut.
func (n *sshNet) Probe(ctx context.Context, timeout time.Duration) (netns.Reach, error) {
	ch := make(chan netns.PathAnswer, len(n.ids)*len(n.ids))
	total := 0
	for _, to := range n.ids {
		total++
		go func() {
			ok, err := n.reachesFromClient(ctx, to, timeout)
			ch <- netns.PathAnswer{Path: netns.Path{From: 0, To: to}, OK: ok, Err: err}
		}()
	}
	for _, from := range n.ids {
		var to []int32
		for _, id := range n.ids {
			if id != from {
				to = append(to, id)
			}
		}
		if len(to) == 0 {
			continue
		}
		total += len(to)
		go func() {
			reach, err := n.probeFrom(ctx, from, to, timeout)
			for _, t := range to {
				ok, found := reach[t]
				e := err
				if e == nil && !found {
					e = fmt.Errorf("node %d printed no result for node %d", from, t)
				}
				ch <- netns.PathAnswer{Path: netns.Path{From: from, To: t}, OK: ok, Err: e}
			}
		}()
	}
	return netns.GatherReach(ch, total)
}

func (n *sshNet) reachesFromClient(ctx context.Context, to int32, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	node := n.nodes[to]
	addr := netip.AddrPortFrom(node.addr, uint16(node.ports[0])).String()
	dial := n.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return netns.Answered(dial(ctx, "tcp", addr))
}

// probeFrom connects from node from to each of to, all at once, in one
// command on the node. Each line of its output is "ID STATUS MESSAGE":
// status 0 connected, 124 timed out (cut), else refused (an answer) or an
// error.
func (n *sshNet) probeFrom(ctx context.Context, from int32, to []int32, timeout time.Duration) (map[int32]bool, error) {
	secs := fmt.Sprintf("%.3f", timeout.Seconds())
	var b strings.Builder
	for _, t := range to {
		node := n.nodes[t]
		host := node.addr.String()
		fmt.Fprintf(&b, "( r=$(timeout %s bash -c '</dev/tcp/%s/%d' 2>&1); echo \"%d $? $r\" ) &\n", secs, host, node.ports[0], t)
	}
	b.WriteString("wait\n")
	ctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
	defer cancel()
	out, err := n.runner(from).Run(ctx, b.String())
	if err != nil {
		return nil, fmt.Errorf("on node %d: %w", from, err)
	}
	return parseProbe(out)
}

// parseProbe reads probeFrom's output.
func parseProbe(out string) (map[int32]bool, error) {
	reach := map[int32]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) < 2 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("probe output %q: %w", line, err)
		}
		msg := ""
		if len(f) == 3 {
			msg = f[2]
		}
		switch {
		case f[1] == "0":
			reach[int32(id)] = true
		case f[1] == "124":
			reach[int32(id)] = false
		case strings.Contains(msg, "Connection refused"):
			reach[int32(id)] = true
		default:
			return nil, fmt.Errorf("probe of node %d exited %s: %s (is bash with /dev/tcp and coreutils' timeout on the node?)", id, f[1], msg)
		}
	}
	return reach, nil
}
