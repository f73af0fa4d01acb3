package netns

import "net/netip"

// ValidPrefix reports whether p has the form of a prefix Create accepts;
// the drivers check a --netns flag with it before dialling anything.
func ValidPrefix(p string) bool { return validPrefix.MatchString(p) }

// InSubnet reports whether host is an IP address in Subnet. Such an
// address exists only inside the namespaces ackcheck makes: from the
// machine's own namespace a connect to it would follow the default route
// out of the machine, so the drivers refuse it without --netns.
func InSubnet(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && Subnet.Contains(a.Unmap())
}
