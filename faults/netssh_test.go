package faults

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/remote"
)

// scriptedRunner answers the network preflight's command with session and
// records every other command; nft commands succeed.
type scriptedRunner struct {
	where   string
	session string
	mu      sync.Mutex
	cmds    []string
}

func (r *scriptedRunner) Run(_ context.Context, cmd string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.Contains(cmd, "SSH_CONNECTION"):
		return r.session, nil
	case strings.Contains(cmd, "pgrep"):
		return "4242\n", nil // the broker runs
	}
	r.cmds = append(r.cmds, cmd)
	return "", nil
}
func (r *scriptedRunner) Where() string { return r.where }
func (r *scriptedRunner) Close() error  { return nil }

const okSession = "conn=10.0.0.9 51000 %s 22\nuid=0\nnft=yes\n"

// sshCluster is a 3-node cluster file's nodes at 10.0.0.1-3 with broker
// ports 9092 and 9093, whose runners answer with the sessions given.
func sshCluster(sessions map[int32]string, edit func(*NodeSpec)) (*Scripted, map[int32]*scriptedRunner) {
	var specs []NodeSpec
	runners := map[int32]remote.Runner{}
	fakes := map[int32]*scriptedRunner{}
	for id := int32(1); id <= 3; id++ {
		spec := NodeSpec{ID: id, Host: fmt.Sprintf("10.0.0.%d", id), PGrep: "kafka", Start: "start", Ports: []int{9092, 9093}}
		if edit != nil {
			edit(&spec)
		}
		specs = append(specs, spec)
		s, ok := sessions[id]
		if !ok {
			s = fmt.Sprintf(okSession, spec.Host)
		}
		fakes[id] = &scriptedRunner{where: "root@" + spec.Host + ":22", session: s}
		runners[id] = fakes[id]
	}
	return NewScripted(specs, runners, "ssh"), fakes
}

// Preflight on SSH nodes says per node what is missing, and refuses broker
// ports that would catch ackcheck's own SSH session.
func TestSSHNetworkPreflight(t *testing.T) {
	tests := []struct {
		name     string
		sessions map[int32]string
		edit     func(*NodeSpec)
		schedule string
		want     string // "" accepted
	}{
		{"all ready", nil, nil, "at=1s partition node:1; at=2s partition-client node:2; at=3s loss 30% node:3; at=4s heal-network", ""},
		{"sudo instead of root", map[int32]string{2: "conn=10.0.0.9 51000 10.0.0.2 22\nuid=1000\nnft=yes\nsudo=yes\n"}, nil, "at=1s partition node:1", ""},
		{"nft and iptables missing", map[int32]string{2: "conn=10.0.0.9 51000 10.0.0.2 22\nuid=0\n"}, nil, "at=1s partition node:1", "nft missing on node 2 (root@10.0.0.2:22), and iptables too: apt-get install nftables"},
		{"nft missing, iptables there", map[int32]string{2: "conn=10.0.0.9 51000 10.0.0.2 22\nuid=0\niptables=yes\n"}, nil, "at=1s partition node:1", ""},
		{"firewall: nft, nft missing", map[int32]string{2: "conn=10.0.0.9 51000 10.0.0.2 22\nuid=0\niptables=yes\n"},
			func(n *NodeSpec) { n.Firewall = "nft" }, "at=1s partition node:1", "nft missing on node 2 (root@10.0.0.2:22), which the cluster file asks for"},
		{"firewall: iptables, iptables missing", nil, func(n *NodeSpec) { n.Firewall = "iptables" }, "at=1s partition node:1", "iptables-restore missing on node 1"},
		{"iptables with more than 15 ports", map[int32]string{2: "conn=10.0.0.9 51000 10.0.0.2 22\nuid=0\niptables=yes\n"},
			func(n *NodeSpec) {
				n.Ports = []int{9092, 9093, 9094, 9095, 9096, 9097, 9098, 9099, 9100, 9101, 9102, 9103, 9104, 9105, 9106, 9107}
			},
			"at=1s partition node:1", "node 2 (root@10.0.0.2:22): the cluster file's broker ports"},
		{"nft with more than 15 ports", nil,
			func(n *NodeSpec) {
				n.Ports = []int{9092, 9093, 9094, 9095, 9096, 9097, 9098, 9099, 9100, 9101, 9102, 9103, 9104, 9105, 9106, 9107}
			},
			"at=1s partition node:1", ""},
		{"iptables not root, no sudo", map[int32]string{3: "conn=10.0.0.9 51000 10.0.0.3 22\nuid=1000\niptables=yes\n"}, nil, "at=1s partition node:1", "node 3 (root@10.0.0.3:22): iptables needs root"},
		{"not root, no sudo", map[int32]string{3: "conn=10.0.0.9 51000 10.0.0.3 22\nuid=1000\nnft=yes\n"}, nil, "at=1s partition node:1", "node 3 (root@10.0.0.3:22): nft needs root"},
		{"ports include the SSH server port", map[int32]string{1: "conn=10.0.0.9 51000 10.0.0.1 9093\nuid=0\nnft=yes\n"}, nil, "at=1s partition node:2", "include the SSH server port 9093"},
		{"ports include the SSH client port", map[int32]string{1: "conn=10.0.0.9 9092 10.0.0.1 22\nuid=0\nnft=yes\n"}, nil, "at=1s partition node:2", "client side of ackcheck's own SSH session"},
		{"no SSH session", map[int32]string{1: "conn=\nuid=0\nnft=yes\n"}, nil, "at=1s partition node:2", "$SSH_CONNECTION"},
		{"no ports", nil, func(n *NodeSpec) { n.Ports = nil }, "at=1s partition node:2", "add e.g. `ports: [9092, 9093]`"},
		{"host name without address", nil, func(n *NodeSpec) { n.Host = "kafka-" + fmt.Sprint(n.ID) }, "at=1s partition node:2", "give `address:`"},
		{"host name with address", nil, func(n *NodeSpec) { n.Address, n.Host = n.Host, "kafka-"+fmt.Sprint(n.ID) }, "at=1s partition node:2", ""},
		{"a local node", nil, func(n *NodeSpec) { n.Host = "local" }, "at=1s partition node:2", "this machine's own firewall"},
		{"bandwidth", nil, nil, "at=1s bandwidth 1mbit node:2", "bandwidth on SSH nodes: not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := sshCluster(tc.sessions, tc.edit)
			steps, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			err = Preflight(context.Background(), Env{Nodes: s}, steps)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// A rule's nft script matches only the broker ports and the addresses it
// cuts, in chains of its own; a refused node gets no script at all.
func TestSSHNetworkRules(t *testing.T) {
	tests := []struct {
		name     string
		rule     netns.Rule
		sessions map[int32]string
		want     []string // lines the script must hold
		not      []string // what it must not hold
		err      string
	}{
		{"partition", netns.Rule{Name: "a1_1", Kind: netns.Cut, Node: 1}, nil,
			[]string{"add rule inet ackcheck a1_1_out ip daddr { 10.0.0.2, 10.0.0.3 } tcp dport { 9092, 9093 } drop",
				"add rule inet ackcheck a1_1_in ip saddr { 10.0.0.2, 10.0.0.3 } tcp sport { 9092, 9093 } drop"},
			[]string{"10.0.0.9", " 22"}, ""},
		{"partition-client", netns.Rule{Name: "a1_2", Kind: netns.Cut, Node: 2, Client: true}, nil,
			[]string{"add rule inet ackcheck a1_2_in ip saddr { 10.0.0.1, 10.0.0.3, 10.0.0.9 } tcp dport { 9092, 9093 } drop"},
			[]string{" 22"}, ""},
		{"one-way", netns.Rule{Name: "a1_3", Kind: netns.OneWay, Node: 1, Peers: []int32{3}}, nil,
			[]string{"add rule inet ackcheck a1_3_out ip daddr { 10.0.0.3 } tcp sport { 9092, 9093 } drop"},
			[]string{"a1_3_in", "10.0.0.2"}, ""},
		{"loss", netns.Rule{Name: "a1_4", Kind: netns.Loss, Node: 3, Percent: 30, Client: true}, nil,
			[]string{"tcp dport { 9092, 9093 } numgen random mod 100 < 30 drop"}, nil, ""},
		{"an IPv6 client", netns.Rule{Name: "a1_5", Kind: netns.Cut, Node: 1, Client: true},
			map[int32]string{1: "conn=fd00::9 51000 10.0.0.1 22\nuid=0\nnft=yes\n"},
			[]string{"ip6 saddr { fd00::9 } tcp dport { 9092, 9093 } drop", "ip saddr { 10.0.0.2, 10.0.0.3 } tcp dport { 9092, 9093 } drop"}, nil, ""},
		{"session on a broker port", netns.Rule{Name: "a1_6", Kind: netns.Cut, Node: 1},
			map[int32]string{1: "conn=10.0.0.9 51000 10.0.0.1 9092\nuid=0\nnft=yes\n"}, nil, nil, "SSH server port 9092"},
		{"bandwidth", netns.Rule{Name: "a1_7", Kind: netns.Bandwidth, Node: 1, RateBits: 1e6}, nil, nil, nil, "not supported"},
		{"bad name", netns.Rule{Name: "A;x", Kind: netns.Cut, Node: 1}, nil, nil, nil, "rule name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, fakes := sshCluster(tc.sessions, nil)
			nw, err := s.network()
			if err != nil {
				t.Fatal(err)
			}
			err = nw.Apply(context.Background(), tc.rule)
			cmds := fakes[tc.rule.Node].cmds
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				if len(cmds) != 0 {
					t.Fatalf("a refused rule ran %q", cmds)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != 1 || !strings.HasPrefix(cmds[0], "nft -f - <<'ACKCHECK_NFT'\n") {
				t.Fatalf("commands %q, want one nft script", cmds)
			}
			for _, w := range tc.want {
				if !strings.Contains(cmds[0], w+"\n") {
					t.Errorf("script lacks %q:\n%s", w, cmds[0])
				}
			}
			for _, n := range tc.not {
				if strings.Contains(cmds[0], n) {
					t.Errorf("script holds %q:\n%s", n, cmds[0])
				}
			}
			if err := nw.Remove(context.Background(), tc.rule); err != nil {
				t.Fatal(err)
			}
			if got := fakes[tc.rule.Node].cmds[1:]; len(got) != 3 || !strings.Contains(got[0], "delete chain inet ackcheck "+tc.rule.Name+"_out") ||
				!strings.Contains(got[1], "delete chain inet ackcheck "+tc.rule.Name+"_in") ||
				!strings.Contains(got[2], "grep -q '^[[:space:]]*chain ' || nft delete table inet ackcheck") {
				t.Errorf("remove ran %q", got)
			}
		})
	}
}

// Without nft (or with firewall: iptables), a rule is an iptables-restore
// script per family matching the same ports and addresses as the nft one,
// its chain jumped to from the hook; removing it takes out the jump, the
// rules and the chain, of both families.
func TestSSHNetworkIptablesRules(t *testing.T) {
	const ipt = "conn=10.0.0.9 51000 %s 22\nuid=0\nnft=yes\niptables=yes\nip6tables=yes\n"
	tests := []struct {
		name    string
		rule    netns.Rule
		session string
		want    map[string][]string // by tool, lines its script must hold
		not     []string
		err     string
	}{
		{"partition", netns.Rule{Name: "a1_1", Kind: netns.Cut, Node: 1}, "",
			map[string][]string{"iptables": {":ackc_a1_1_out - [0:0]", ":ackc_a1_1_in - [0:0]",
				"-A ackc_a1_1_out -p tcp -d 10.0.0.2,10.0.0.3 -m multiport --dports 9092,9093 -j DROP",
				"-A ackc_a1_1_out -p tcp -d 10.0.0.2,10.0.0.3 -m multiport --sports 9092,9093 -j DROP",
				"-A ackc_a1_1_in -p tcp -s 10.0.0.2,10.0.0.3 -m multiport --dports 9092,9093 -j DROP",
				"-I OUTPUT -j ackc_a1_1_out", "-I INPUT -j ackc_a1_1_in", "COMMIT"}},
			[]string{"10.0.0.9", " 22"}, ""},
		{"partition-client", netns.Rule{Name: "a1_2", Kind: netns.Cut, Node: 2, Client: true}, "",
			map[string][]string{"iptables": {"-A ackc_a1_2_in -p tcp -s 10.0.0.1,10.0.0.3,10.0.0.9 -m multiport --dports 9092,9093 -j DROP"}}, nil, ""},
		{"one-way", netns.Rule{Name: "a1_3", Kind: netns.OneWay, Node: 1, Peers: []int32{3}}, "",
			map[string][]string{"iptables": {"-A ackc_a1_3_out -p tcp -d 10.0.0.3 -m multiport --sports 9092,9093 -j DROP"}},
			[]string{"ackc_a1_3_in", "10.0.0.2"}, ""},
		{"loss", netns.Rule{Name: "a1_4", Kind: netns.Loss, Node: 3, Percent: 30}, "",
			map[string][]string{"iptables": {"-m multiport --dports 9092,9093 -m statistic --mode random --probability 0.30 -j DROP"}}, nil, ""},
		{"an IPv6 client", netns.Rule{Name: "a1_5", Kind: netns.Cut, Node: 1, Client: true},
			"conn=fd00::9 51000 10.0.0.1 22\nuid=0\niptables=yes\nip6tables=yes\n",
			map[string][]string{"iptables": {"-A ackc_a1_5_in -p tcp -s 10.0.0.2,10.0.0.3 -m multiport --dports 9092,9093 -j DROP"},
				"ip6tables": {"-A ackc_a1_5_in -p tcp -s fd00::9 -m multiport --dports 9092,9093 -j DROP"}}, nil, ""},
		{"a user with sudo, and no nft", netns.Rule{Name: "a1_7", Kind: netns.Cut, Node: 2},
			"conn=10.0.0.9 51000 10.0.0.2 22\nuid=1000\niptables=yes\nip6tables=yes\nsudo=yes\n",
			map[string][]string{"iptables": {"-A ackc_a1_7_out -p tcp -d 10.0.0.1,10.0.0.3 -m multiport --dports 9092,9093 -j DROP"}}, nil, ""},
		{"an IPv6 client without ip6tables", netns.Rule{Name: "a1_6", Kind: netns.Cut, Node: 1, Client: true},
			"conn=fd00::9 51000 10.0.0.1 22\nuid=0\niptables=yes\n", nil, nil, "ip6tables-restore missing"},
		{"a name too long for iptables", netns.Rule{Name: "abcdefghijklmnopqrstuvwx", Kind: netns.Cut, Node: 1}, "", nil, nil, "at most 28 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sessions := map[int32]string{}
			for id := int32(1); id <= 3; id++ {
				sessions[id] = fmt.Sprintf(ipt, fmt.Sprintf("10.0.0.%d", id))
			}
			if tc.session != "" {
				sessions[tc.rule.Node] = tc.session
			}
			s, fakes := sshCluster(sessions, func(n *NodeSpec) { n.Firewall = "iptables" })
			nw, err := s.network()
			if err != nil {
				t.Fatal(err)
			}
			err = nw.Apply(context.Background(), tc.rule)
			cmds := fakes[tc.rule.Node].cmds
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				for _, c := range cmds {
					if strings.Contains(c, "-restore") {
						t.Fatalf("a refused rule ran %q", c)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != len(tc.want) {
				t.Fatalf("commands %q, want one iptables-restore script per family %v", cmds, tc.want)
			}
			for i, tool := range []string{"iptables", "ip6tables"} {
				lines, ok := tc.want[tool]
				if !ok {
					continue
				}
				sudo := ""
				if strings.Contains(tc.session, "sudo=yes") {
					sudo = "sudo -n "
				}
				if !strings.HasPrefix(cmds[i], sudo+tool+"-restore -w --noflush <<'ACKCHECK_IPT'\n*filter\n") {
					t.Fatalf("command %d is %q, want %s%s-restore -w", i, cmds[i], sudo, tool)
				}
				for _, w := range lines {
					if !strings.Contains(cmds[i], w+"\n") {
						t.Errorf("%s script lacks %q:\n%s", tool, w, cmds[i])
					}
				}
				for _, n := range tc.not {
					if strings.Contains(cmds[i], n) {
						t.Errorf("%s script holds %q:\n%s", tool, n, cmds[i])
					}
				}
			}
			if err := nw.Remove(context.Background(), tc.rule); err != nil {
				t.Fatal(err)
			}
			// Removed with iptables first, then with nft where the node has
			// it too (a no-op for what iptables installed).
			got := fakes[tc.rule.Node].cmds[len(cmds):]
			wantCmds := 1
			if strings.Contains(sessions[tc.rule.Node], "nft=yes") {
				wantCmds = 4
			}
			if len(got) != wantCmds {
				t.Fatalf("remove ran %d commands %q, want %d", len(got), got, wantCmds)
			}
			sudo := ""
			if strings.Contains(tc.session, "sudo=yes") {
				sudo = "sudo -n "
			}
			for _, w := range []string{"command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ]", "rules=$(" + sudo + "iptables -w -S 2>&1) || {",
				"grep -qx -- '-N ackc_" + tc.rule.Name + "_out'",
				sudo + "iptables -w -D OUTPUT -j ackc_" + tc.rule.Name + "_out", sudo + "iptables -w -X ackc_" + tc.rule.Name + "_in",
				sudo + "ip6tables -w -D INPUT -j ackc_" + tc.rule.Name + "_in", sudo + "ip6tables -w -X ackc_" + tc.rule.Name + "_out"} {
				if !strings.Contains(got[0], w) {
					t.Errorf("remove lacks %q:\n%s", w, got[0])
				}
			}
		})
	}
}

// The probe output: connected and refused answer, a timeout is a cut,
// anything else is an error, never a verdict.
func TestParseProbe(t *testing.T) {
	tests := []struct {
		out  string
		want map[int32]bool
		err  string
	}{
		{"2 0 \n3 1 bash: connect: Connection refused\n", map[int32]bool{2: true, 3: true}, ""},
		{"2 124 \n3 0 \n", map[int32]bool{2: false, 3: true}, ""},
		{"2 127 bash: timeout: command not found\n", nil, "exited 127"},
		{"2 1 bash: connect: Network is unreachable\n", nil, "Network is unreachable"},
	}
	for _, tc := range tests {
		got, err := parseProbe(tc.out)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.out, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.out, got, err, tc.want)
		}
	}
}

// A runner that redialled between preflight and the rule has a new
// session: Apply reads it again and refuses a rule that would now cut it.
func TestSSHNetworkRereadsTheSession(t *testing.T) {
	s, fakes := sshCluster(nil, nil)
	nw, err := s.network()
	if err != nil {
		t.Fatal(err)
	}
	sn := nw.(*sshNet)
	if err := sn.preflight(context.Background(), []netns.Kind{netns.Cut}); err != nil {
		t.Fatal(err)
	}
	r := netns.Rule{Name: "a1_1", Kind: netns.Cut, Node: 1}
	for _, tc := range []struct {
		session string
		want    string
	}{
		{"conn=10.0.0.9 9093 10.0.0.1 22\nuid=0\nnft=yes\n", "client side of ackcheck's own SSH session"},
		{"conn=10.0.0.9 51001 10.0.0.1 22\nuid=0\nnft=yes\n", ""},
	} {
		fakes[1].mu.Lock()
		fakes[1].session = tc.session
		fakes[1].mu.Unlock()
		err := nw.Apply(context.Background(), r)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("session %q: refused: %v", tc.session, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("session %q: error %v, want %q", tc.session, err, tc.want)
		}
	}
}

// A cluster file gives the broker ports per node or in defaults, and the
// address peers use; a node's own ports win over the defaults.
func TestClusterFilePortsAndAddress(t *testing.T) {
	path := t.TempDir() + "/cluster.yaml"
	yml := `defaults: {user: kafka, ports: [9092, 9093], firewall: iptables}
nodes:
  - {id: 1, host: kafka-1, address: 10.0.0.1, pgrep: kafka, start: "systemctl start kafka"}
  - {id: 2, host: 10.0.0.2, pgrep: kafka, start: "systemctl start kafka", ports: [19092], firewall: nft}
`
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := LoadClusterFile(path, []string{"kafka"})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%v %s %s %v %s %s", cf.Nodes[0].Ports, cf.Nodes[0].Address, cf.Nodes[0].Firewall, cf.Nodes[1].Ports, cf.Nodes[1].Address, cf.Nodes[1].Firewall)
	if want := "[9092 9093] 10.0.0.1 iptables [19092]  nft"; got != want {
		t.Errorf("ports, addresses and firewalls %q, want %q", got, want)
	}
	bad := strings.Replace(yml, "firewall: nft", "firewall: ufw", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClusterFile(path, []string{"kafka"}); err == nil || !strings.Contains(err.Error(), `node 2: firewall "ufw": give nft or iptables`) {
		t.Errorf("firewall: ufw gave %v", err)
	}
}

// SSHNetworkName, what a journal written by hand names the nodes, is the
// name the nodes' network has in a run: a heal finds its rules again.
func TestSSHNetworkName(t *testing.T) {
	s, _ := sshCluster(nil, func(n *NodeSpec) {
		if n.ID == 2 {
			n.Address, n.Host = n.Host, "kafka-2"
		}
	})
	nw, err := s.network()
	if err != nil {
		t.Fatal(err)
	}
	if got := SSHNetworkName(specsOf(s)); got != nw.Name() || !strings.HasPrefix(got, "ssh-") {
		t.Errorf("SSHNetworkName %q, the run's network %q", got, nw.Name())
	}
	other, _ := sshCluster(nil, func(n *NodeSpec) { n.Host = fmt.Sprintf("10.0.1.%d", n.ID) })
	if SSHNetworkName(specsOf(other)) == nw.Name() {
		t.Error("nodes at other addresses have the same network name")
	}
}

func specsOf(s *Scripted) []NodeSpec {
	var out []NodeSpec
	for _, id := range s.ids {
		out = append(out, s.specs[id])
	}
	return out
}
