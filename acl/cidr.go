package acl

// CIDR hosts (Kafka 4.4, metadata.version 4.4-IV1): an ACL's host may be
// a range such as 10.0.0.0/8 or 2001:db8::/32, matching every client
// address in it. Kafka reads a range with a ':' as IPv6 and any other as
// IPv4, with commons-net's SubnetUtils6 and SubnetUtils; parseCIDR takes
// what they take (octets of one to three decimal digits, leading zeros
// included: 010.0.0.0/8 is 10.0.0.0/8) and refuses the rest with their
// messages. The address may have host bits set (10.1.2.3/8 is
// 10.0.0.0/8), and the network and broadcast addresses are in the range.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// isCIDR reports whether an ACL host is a range rather than one address.
func isCIDR(host string) bool { return strings.Contains(host, "/") }

// parseCIDR reads an ACL host range, or says why it is not one, in
// Kafka's words ("Invalid CIDR notation '...': " and commons-net's reason).
func parseCIDR(host string) (netip.Prefix, error) {
	var p netip.Prefix
	var reason string
	if strings.Contains(host, ":") {
		p, reason = parseCIDR6(host)
	} else {
		p, reason = parseCIDR4(host)
	}
	if reason != "" {
		return netip.Prefix{}, fmt.Errorf("Invalid CIDR notation '%s': %s", host, reason)
	}
	return p.Masked(), nil
}

// parseCIDR4 reads a.b.c.d/n as SubnetUtils does: 1-3 decimal digits per
// octet, 1-2 for the prefix length, then each value checked in turn.
func parseCIDR4(host string) (netip.Prefix, string) {
	unparsable := fmt.Sprintf("Could not parse [%s]", host)
	addr, bits, ok := strings.Cut(host, "/")
	octets := strings.Split(addr, ".")
	if !ok || len(octets) != 4 || !decimal(bits, 2) {
		return netip.Prefix{}, unparsable
	}
	var ip [4]byte
	for i, o := range octets {
		if !decimal(o, 3) {
			return netip.Prefix{}, unparsable
		}
		v, _ := strconv.Atoi(o)
		if v > 255 {
			return netip.Prefix{}, fmt.Sprintf("Value [%d] not in range [0,255]", v)
		}
		ip[i] = byte(v)
	}
	n, _ := strconv.Atoi(bits)
	if n > 32 {
		return netip.Prefix{}, fmt.Sprintf("Value [%d] not in range [0,32]", n)
	}
	return netip.PrefixFrom(netip.AddrFrom4(ip), n), ""
}

// decimal reports whether s is 1 to max ASCII digits.
func decimal(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseCIDR6 reads addr/n as SubnetUtils6 does: the prefix length first
// (a Java int, 0 to 128), then the address, which must be IPv6 and not an
// IPv4-mapped one (Java reads that as IPv4).
func parseCIDR6(host string) (netip.Prefix, string) {
	addr, bits, ok := strings.Cut(host, "/")
	if !ok {
		return netip.Prefix{}, fmt.Sprintf("Could not parse [%s] - missing prefix length", host)
	}
	n, err := strconv.ParseInt(bits, 10, 32)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("Could not parse [%s] - invalid prefix length", host)
	}
	if n < 0 || n > 128 {
		return netip.Prefix{}, fmt.Sprintf("Could not parse [%s] - prefix length must be between 0 and 128", host)
	}
	literal := addr
	if len(addr) > 1 && addr[0] == '[' && addr[len(addr)-1] == ']' {
		literal = addr[1 : len(addr)-1] // Java's InetAddress takes a bracketed literal
	}
	ip, err := netip.ParseAddr(literal)
	if err != nil || ip.Zone() != "" {
		return netip.Prefix{}, fmt.Sprintf("Could not parse [%s]", addr)
	}
	if !ip.Is6() || ip.Is4In6() {
		return netip.Prefix{}, fmt.Sprintf("Could not parse [%s] - not an IPv6 address", addr)
	}
	return netip.PrefixFrom(ip, int(n)), ""
}

// hostMatches reports whether an ACL's host covers a client's address:
// "*", the same address, or a range holding it (one of a.ranges; a host
// that did not parse matches no address).
func (a *Authorizer) hostMatches(aclHost, host string) bool {
	if aclHost == wildcard || aclHost == host {
		return true
	}
	p, ok := a.ranges[aclHost]
	if !ok {
		return false
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && p.Contains(addr.Unmap())
}

// CIDRMetadataVersion names the metadata.version from which ACL hosts may
// be ranges, as Kafka's refusal names it.
const CIDRMetadataVersion = "4.4-IV1"
