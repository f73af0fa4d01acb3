package drivers

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/ackcheck/ackcheck/netns"
	"github.com/spf13/pflag"
)

// RegisterNetns registers --netns on fs, once however many drivers call
// it: every driver whose local cluster can run in network namespaces
// reads it (fs.GetString("netns")), and all register on one flag set.
func RegisterNetns(fs *pflag.FlagSet) {
	if fs.Lookup("netns") != nil {
		return
	}
	fs.String("netns", "", "connect from the hub of the network namespaces of a local cluster started with cluster <broker> up --netns: the namespaces' prefix (set by --cluster-dir)")
}

// CheckNetns is what every driver's Config.Validate checks of its --netns
// prefix and its addresses (URLs, or host:port): with a prefix, that it
// is one ackcheck makes; without, that no address is inside ackcheck's
// network namespaces. Such an address exists only inside the namespaces
// ackcheck makes, which only their hub reaches: from the machine's own
// namespace a connect to it is refused by the guard route while a Net is
// up, and follows the default route off the machine when none is.
func CheckNetns(prefix string, addrs ...string) error {
	if prefix != "" {
		if !netns.ValidPrefix(prefix) {
			return fmt.Errorf("--netns %q is not a network namespace prefix ackcheck makes (lower-case letters, digits and '-'): pass the cluster with --cluster-dir instead", prefix)
		}
		return nil
	}
	for _, a := range addrs {
		if subnet, ok := inNetnsSubnet(a); ok {
			return fmt.Errorf("%s is an address inside ackcheck's network namespaces (%s), which only their hub reaches: pass the cluster with --cluster-dir, or --netns with its prefix; dialled from this machine's own namespace it is refused, or leaves the machine when no namespace is up", a, subnet)
		}
	}
	return nil
}

// inNetnsSubnet says which subnet of ackcheck's network namespaces the
// host of addr (a URL, or host:port) is in (netns.SubnetOf), if any.
func inNetnsSubnet(addr string) (netip.Prefix, bool) {
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return netip.Prefix{}, false
		}
		return netns.SubnetOf(u.Hostname())
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.Prefix{}, false
	}
	return netns.SubnetOf(host)
}
