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
