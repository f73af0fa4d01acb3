package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/netns"
	"github.com/spf13/pflag"
)

// InNetns is implemented by a local cluster whose nodes can run in
// network namespaces of their own (`cluster <kind> up --netns`): each node
// in its namespace at its own address, ackcheck's client calls through the
// Net's hub. The network faults reach the Net through it.
type InNetns interface {
	// Net is the cluster's network namespaces; nil when it was started
	// without --netns.
	Net() *netns.Net
	// ProbePort is the port every node listens on for its peers inside
	// the Net: the partition proof connects to it.
	ProbePort() int
}

// NetnsPrefix is the prefix of the network namespaces of the local
// cluster in dir: "ackc-" and the first 10 hex digits of the SHA-256 of
// its absolute path. Two cluster directories never share one (short of a
// hash collision), the same directory always finds its own again after a
// crash, and no test's prefix ("akf...") is ever taken for a cluster's.
func NetnsPrefix(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(filepath.Clean(abs)))
	return "ackc-" + hex.EncodeToString(sum[:])[:10]
}

// NetnsPreflight says what this machine lacks to run a cluster in network
// namespaces (root, iproute2's ip, nftables' nft for the faults), nil
// when nothing. It makes nothing.
func NetnsPreflight() error {
	return netnsMissing(os.Geteuid(), exec.LookPath)
}

// netnsMissing is NetnsPreflight with the user and the tool lookup given,
// so that a test can make each one fail.
func netnsMissing(euid int, lookPath func(string) (string, error)) error {
	var missing []string
	if euid != 0 {
		missing = append(missing, "root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN: run as root)")
	}
	for _, t := range []struct{ bin, pkg string }{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := lookPath(t.bin); err != nil {
			missing = append(missing, t.bin+" (Debian/Ubuntu package "+t.pkg+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("--netns needs %s: install what is missing, or start the cluster without --netns", strings.Join(missing, ", "))
}

// NetnsUpPreflight is what `cluster <broker> up --netns` checks before it
// makes anything: NetnsPreflight, then, unless the cluster's namespaces
// exist already (brought up again: their guard route is the subnet's only
// route, and it is ackcheck's), that nothing on this machine routes or
// holds the subnet (netns.SubnetFree): a refusal names --netns-subnet.
func NetnsUpPreflight(ctx context.Context, prefix string, subnet netip.Prefix) error {
	if err := NetnsPreflight(); err != nil {
		return err
	}
	if !subnet.IsValid() {
		subnet = netns.DefaultSubnet
	}
	if _, ok, err := netns.Open(ctx, prefix); err != nil || ok {
		return err
	}
	if err := netns.SubnetFree(ctx, subnet); err != nil {
		if errors.Is(err, netns.ErrSubnetInUse) {
			return fmt.Errorf("--netns: %w: pass --netns-subnet with a subnet this machine does not use (e.g. 10.214.0.0/24); nothing was made", err)
		}
		return err
	}
	return nil
}

// subnetFlag is --netns-subnet's value: a subnet netns.ParseSubnet takes.
type subnetFlag struct{ p *netip.Prefix }

func (f subnetFlag) String() string {
	if f.p == nil || !f.p.IsValid() {
		return ""
	}
	return f.p.String()
}

func (f subnetFlag) Set(s string) error {
	p, err := netns.ParseSubnet(s)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

func (subnetFlag) Type() string { return "subnet" }

// RegisterNetnsSubnet registers --netns-subnet on fs, into p: every
// launcher whose cluster runs in network namespaces has it.
func RegisterNetnsSubnet(fs *pflag.FlagSet, p *netip.Prefix) {
	fs.Var(subnetFlag{p}, "netns-subnet", "with --netns, the IPv4 subnet of the nodes' namespaces (default "+netns.DefaultSubnet.String()+"; at the first up): another where this machine routes or uses that one")
}

// NetnsSubnetText is subnet as cluster.json records it: "" for the
// default.
func NetnsSubnetText(subnet netip.Prefix) string {
	if !subnet.IsValid() || subnet == netns.DefaultSubnet {
		return ""
	}
	return subnet.String()
}

// ReadNetnsSubnet reads a cluster.json's netns_subnet ("" is the
// default, the zero Prefix).
func ReadNetnsSubnet(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	p, err := netns.ParseSubnet(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("cluster.json's netns_subnet: %w", err)
	}
	return p, nil
}

// CheckNetnsSubnet refuses --netns-subnet without --netns.
func CheckNetnsSubnet(netNS bool, subnet netip.Prefix) error {
	if subnet.IsValid() && !netNS {
		return errors.New("--netns-subnet goes with --netns: give both, or neither")
	}
	return nil
}

// EnsureNet returns the Net of prefix for nodes: the one that exists
// (a cluster brought up again while its namespaces stayed), or a new one
// in subnet (zero: netns.DefaultSubnet). One that exists with other nodes
// or in another subnet is refused: it is not this cluster's as recorded,
// and it is never changed behind the back of whoever made it.
func EnsureNet(ctx context.Context, prefix string, subnet netip.Prefix, nodes []int32) (*netns.Net, error) {
	if !subnet.IsValid() {
		subnet = netns.DefaultSubnet
	}
	n, ok, err := netns.Open(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("look for the cluster's network namespaces %s-*: %w", prefix, err)
	}
	if ok {
		want := slices.Clone(nodes)
		slices.Sort(want)
		if !slices.Equal(n.Nodes, want) {
			return nil, fmt.Errorf("network namespaces %s-* exist for nodes %v, the cluster has nodes %v: take the cluster down (its `down` deletes them) or remove them with `ip netns delete`", prefix, n.Nodes, want)
		}
		if n.Subnet != subnet {
			return nil, fmt.Errorf("network namespaces %s-* exist in subnet %s, the cluster's is %s: take the cluster down (its `down` deletes them) or remove them with `ip netns delete`", prefix, n.Subnet, subnet)
		}
		return n, nil
	}
	n, err = netns.CreateIn(ctx, subnet, prefix, nodes)
	if err != nil {
		return nil, fmt.Errorf("create the cluster's network namespaces: %w", err)
	}
	return n, nil
}

// NeedNet fails when the hub of the Net of prefix does not exist: a node
// started with `ip netns exec` into a missing namespace would fail with
// ip's own less helpful message. up names the command that makes it.
func NeedNet(ctx context.Context, prefix, up string) error {
	_, ok, err := netns.Open(ctx, prefix)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the cluster's network namespaces %s-* do not exist (removed, or the machine restarted): run `%s` to make them and start the nodes", prefix, up)
	}
	return nil
}

// StartDetachedIn is StartDetached for a command that execs program in
// place once it is set up (`ip netns exec NS program ...`): it returns
// once the process runs program, or has exited. In between, the process
// is ip, and its command line reads empty for a moment while it execs:
// a readiness check that read it then took a node just started for one
// that had exited (seen on the first `cluster kafka up --netns`).
func StartDetachedIn(cmd *exec.Cmd, logFile, pidFile, what, program string) error {
	if err := StartDetached(cmd, logFile, pidFile, what); err != nil {
		return err
	}
	waitProgram(cmd.Process.Pid, program, 5*time.Second)
	return nil
}

// waitProgram waits up to limit until pid's argv[0] is program (by base
// name), or the process is gone.
func waitProgram(pid int, program string, limit time.Duration) {
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		if argv0, _, _ := strings.Cut(string(b), "\x00"); filepath.Base(argv0) == program {
			return
		}
	}
}
