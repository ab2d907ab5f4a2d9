package acl

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An ACL host may be a CIDR range: ALLOW and DENY match every address in
// it (network and broadcast addresses, IPv6, IPv4-mapped client
// addresses), host bits set in the ACL are ignored as commons-net's
// SubnetUtils ignores them, and nothing outside the range matches.
func TestCIDRHosts(t *testing.T) {
	acls := set(
		bind(topic, "orders", literal, "User:alice", "10.1.0.0/16", kmsg.ACLOperationRead, allow),
		bind(topic, "orders", literal, "User:alice", "10.1.9.0/24", kmsg.ACLOperationRead, deny),
		bind(topic, "v6", literal, "User:alice", "2001:db8::/32", kmsg.ACLOperationRead, allow),
		bind(topic, "bits", literal, "User:alice", "192.168.7.9/16", kmsg.ACLOperationRead, allow),
		bind(topic, "zeros", literal, "User:alice", "010.001.0.0/16", kmsg.ACLOperationRead, allow),
		bind(topic, "brackets", literal, "User:alice", "[2001:db8::]/32", kmsg.ACLOperationRead, allow),
	)
	a := NewAuthorizer(acls, nil, false)
	cases := []struct {
		host, name string
		want       bool
	}{
		{"10.1.0.0", "orders", true},
		{"10.1.255.255", "orders", true},
		{"10.1.2.3", "orders", true},
		{"10.2.0.1", "orders", false},
		{"10.1.9.77", "orders", false}, // the DENY range inside
		{"::ffff:10.1.2.3", "orders", true},
		{"2001:db8:1::5", "v6", true},
		{"2001:db9::5", "v6", false},
		{"10.1.2.3", "v6", false},
		{"192.168.200.1", "bits", true},
		{"192.169.0.1", "bits", false},
		{"not-an-address", "orders", false},
		{"10.1.2.3", "zeros", true}, // octets read as decimal, as commons-net reads them
		{"8.1.2.3", "zeros", false},
		{"10.2.0.1", "zeros", false},
		{"2001:db8::7", "brackets", true},
	}
	for _, c := range cases {
		if got := a.Allowed("User:alice", c.host, kmsg.ACLOperationRead, topic, c.name); got != c.want {
			t.Errorf("%s reading %s: %v, want %v", c.host, c.name, got, c.want)
		}
	}
	if !a.AllowedAnyOf("User:alice", "10.1.2.3", kmsg.ACLOperationRead, topic) || a.AllowedAnyOf("User:alice", "172.16.0.1", kmsg.ACLOperationRead, topic) {
		t.Error("AllowedAnyOf does not follow the CIDR hosts")
	}
}

// CreateAcls takes a CIDR host only from metadata.version 4.4-IV1 (before,
// UNSUPPORTED_VERSION with Kafka's message) and refuses a range that does
// not parse with INVALID_REQUEST; plain addresses and "*" are unaffected.
func TestCreateCIDRHosts(t *testing.T) {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, host := range []string{"10.0.0.0/8", "10.0.0.0/33", "10.0.0/8", "10.0.0.1", "*"} {
		req.Creations = append(req.Creations, kmsg.CreateACLsRequestCreation{ResourceType: topic, ResourceName: "t", ResourcePatternType: literal,
			Principal: "User:alice", Host: host, Operation: kmsg.ACLOperationRead, PermissionType: allow})
	}
	codes := func(resp *kmsg.CreateACLsResponse) []int16 {
		var out []int16
		for _, r := range resp.Results {
			out = append(out, r.ErrorCode)
		}
		return out
	}
	before, changes := Create(req, map[string]Binding{}, false)
	unsupported := kerr.UnsupportedVersion.Code
	if got := codes(before); got[0] != unsupported || got[1] != unsupported || got[2] != unsupported || got[3] != 0 || got[4] != 0 || len(changes) != 2 {
		t.Fatalf("before 4.4-IV1: codes %v, %d changes", got, len(changes))
	}
	if msg := before.Results[0].ErrorMessage; msg == nil || *msg != "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher." {
		t.Errorf("refusal before 4.4-IV1: %v", msg)
	}
	after, changes := Create(req, map[string]Binding{}, true)
	invalid := kerr.InvalidRequest.Code
	if got := codes(after); got[0] != 0 || got[1] != invalid || got[2] != invalid || got[3] != 0 || got[4] != 0 || len(changes) != 3 {
		t.Fatalf("at 4.4-IV1: codes %v, %d changes", got, len(changes))
	}
	if msg := after.Results[1].ErrorMessage; msg == nil || !strings.HasPrefix(*msg, "Invalid CIDR notation '10.0.0.0/33'") {
		t.Errorf("an invalid range: %v", msg)
	}
}

// A range that does not parse is refused with Kafka's prefix and
// commons-net's reason (SubnetUtils for IPv4, SubnetUtils6 for a host
// with a ':'), whose checks come in the order Kafka makes them.
func TestCIDRRefusals(t *testing.T) {
	for host, reason := range map[string]string{
		"10.0.0.0/33":         "Value [33] not in range [0,32]",
		"10.0.0.0/8/8":        "Could not parse [10.0.0.0/8/8]",
		"10.0.0/8":            "Could not parse [10.0.0/8]",
		"10.0.0.0/008":        "Could not parse [10.0.0.0/008]",
		"1000.0.0.0/8":        "Could not parse [1000.0.0.0/8]",
		"300.0.0.0/8":         "Value [300] not in range [0,255]",
		"300.0.0.0/40":        "Value [300] not in range [0,255]",
		"host.example/8":      "Could not parse [host.example/8]",
		"2001:db8::/129":      "Could not parse [2001:db8::/129] - prefix length must be between 0 and 128",
		"2001:db8::/-1":       "Could not parse [2001:db8::/-1] - prefix length must be between 0 and 128",
		"2001:db8::/x":        "Could not parse [2001:db8::/x] - invalid prefix length",
		"2001:db8:::/32":      "Could not parse [2001:db8:::]",
		"::ffff:10.0.0.0/104": "Could not parse [::ffff:10.0.0.0] - not an IPv6 address",
	} {
		_, err := parseCIDR(host)
		if want := "Invalid CIDR notation '" + host + "': " + reason; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", host, err, want)
		}
	}
	for host, want := range map[string]string{
		"010.001.000.000/8": "10.0.0.0/8",
		"10.1.2.3/0":        "0.0.0.0/0",
		"2001:db8::1/+32":   "2001:db8::/32",
		"[2001:db8::]/128":  "2001:db8::/128",
	} {
		if p, err := parseCIDR(host); err != nil || p.String() != want {
			t.Errorf("%s: %v %v, want %s", host, p, err, want)
		}
	}
}
