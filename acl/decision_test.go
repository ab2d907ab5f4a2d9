package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecisionRules checks the rule each decision names, as Kafka's
// StandardAuthorizer names it in the audit log.
func TestDecisionRules(t *testing.T) {
	readOrders := bind(topic, "orders", literal, "User:alice", "*", kmsg.ACLOperationRead, allow)
	readPrefix := bind(topic, "ord", prefix, "User:alice", "*", kmsg.ACLOperationRead, allow)
	readAll := bind(topic, "*", literal, "User:*", "*", kmsg.ACLOperationRead, allow)
	denyLong := bind(topic, "orders-e", prefix, "User:alice", "*", kmsg.ACLOperationAll, deny)
	denyShort := bind(topic, "orders-", prefix, "User:alice", "*", kmsg.ACLOperationAll, deny)
	groupLiteral := bind(group, "g", literal, "User:alice", "*", kmsg.ACLOperationRead, allow)
	groupPrefix := bind(group, "g", prefix, "User:alice", "*", kmsg.ACLOperationRead, allow)
	a := NewAuthorizer(set(readOrders, readPrefix, readAll, denyLong, denyShort, groupLiteral, groupPrefix,
		bind(topic, "held", literal, "User:bob", "*", kmsg.ACLOperationRead, allow)), []string{"User:admin"}, true)
	acl := func(b Binding) string {
		return "MatchingAcl(acl=StandardAcl[resourceType=TOPIC, resourceName=" + b.ResourceName + ", patternType=" + b.PatternType.String() +
			", principal=" + b.Principal + ", host=*, operation=" + b.Operation.String() + ", permissionType=" + b.Permission.String() + "])"
	}
	cases := []struct {
		principal, name string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		allowed         bool
		rule            string
	}{
		{"User:admin", "orders-eu", kmsg.ACLOperationWrite, topic, true, "SuperUser"},
		// Three ALLOWs cover "orders": Kafka reads the literal name, then
		// the prefixes, then "*", and names the last.
		{"User:alice", "orders", kmsg.ACLOperationRead, topic, true, acl(readAll)},
		{"User:bob", "ordinal", kmsg.ACLOperationRead, topic, true, acl(readAll)},
		// One name, both pattern types: LITERAL is read before PREFIXED.
		{"User:alice", "g", kmsg.ACLOperationDescribe, group, true, "MatchingAcl(acl=StandardAcl[resourceType=GROUP, resourceName=g, " +
			"patternType=PREFIXED, principal=User:alice, host=*, operation=READ, permissionType=ALLOW])"},
		// Two DENYs cover "orders-eu": the longer prefix is read first.
		{"User:alice", "orders-eu", kmsg.ACLOperationRead, topic, false, acl(denyLong)},
		{"User:carol", "held", kmsg.ACLOperationWrite, topic, false, "DefaultDeny"}, // ACLs name it, none for carol
		{"User:carol", "free", kmsg.ACLOperationWrite, group, true, "DefaultAllow"}, // no ACL names it: allow.everyone.if.no.acl.found
	}
	for _, c := range cases {
		d := a.Decide(c.principal, "127.0.0.1", c.op, c.rt, c.name)
		if d.Allowed != c.allowed || d.Rule() != c.rule {
			t.Errorf("%s %s %s: allowed %v by %s, want %v by %s", c.principal, c.op, c.name, d.Allowed, d.Rule(), c.allowed, c.rule)
		}
	}
	if d := NewAuthorizer(nil, nil, false).Decide("User:carol", "h", kmsg.ACLOperationRead, topic, "x"); d.Allowed || d.Rule() != "DefaultDeny" {
		t.Errorf("no ACLs, allow.everyone.if.no.acl.found=false: %v by %s", d.Allowed, d.Rule())
	}
}

func TestResourceTypeName(t *testing.T) {
	want := map[kmsg.ACLResourceType]string{topic: "Topic", group: "Group", cluster: "Cluster",
		kmsg.ACLResourceTypeTransactionalId: "TransactionalId", kmsg.ACLResourceTypeDelegationToken: "DelegationToken", kmsg.ACLResourceTypeUser: "User"}
	for rt, name := range want {
		if got := ResourceTypeName(rt); got != name {
			t.Errorf("%v: %s, want %s", rt, got, name)
		}
	}
}
