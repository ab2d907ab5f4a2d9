package acl

// CIDR hosts (Kafka 4.4, metadata.version 4.4-IV1): an ACL's host may be
// a range such as 10.0.0.0/8 or 2001:db8::/32, matching every client
// address in it. As in Kafka, which parses them with commons-net's
// SubnetUtils, the address may have host bits set (10.1.2.3/8 is
// 10.0.0.0/8), and the network and broadcast addresses are in the range.

import (
	"fmt"
	"net/netip"
	"strings"
)

// isCIDR reports whether an ACL host is a range rather than one address.
func isCIDR(host string) bool { return strings.Contains(host, "/") }

// parseCIDR reads an ACL host range, or says why it is not one, in
// Kafka's words.
func parseCIDR(host string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(host)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("Invalid CIDR notation '%s': Could not parse [%s]", host, host)
	}
	return p.Masked(), nil
}

// hostMatches reports whether an ACL's host covers a client's address:
// "*", the same address, or a range holding it.
func hostMatches(aclHost, host string) bool {
	if aclHost == wildcard || aclHost == host {
		return true
	}
	if !isCIDR(aclHost) {
		return false
	}
	p, err := parseCIDR(aclHost)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && p.Contains(addr.Unmap())
}

// CIDRMetadataVersion names the metadata.version from which ACL hosts may
// be ranges, as Kafka's refusal names it.
const CIDRMetadataVersion = "4.4-IV1"
