package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func set(bs ...Binding) map[string]Binding {
	m := map[string]Binding{}
	for _, b := range bs {
		m[b.Key()] = b
	}
	return m
}

func TestAuthorizer(t *testing.T) {
	acls := set(
		bind(topic, "orders", literal, "User:alice", "*", kmsg.ACLOperationWrite, allow),
		bind(topic, "pay-", prefix, "User:alice", "*", kmsg.ACLOperationRead, allow),
		bind(topic, "pay-secret", literal, "User:alice", "*", kmsg.ACLOperationAll, deny),
		bind(topic, "*", literal, "User:*", "*", kmsg.ACLOperationDescribeConfigs, allow),
		bind(topic, "local", literal, "User:bob", "10.0.0.1", kmsg.ACLOperationRead, allow),
		bind(group, "g", literal, "User:alice", "*", kmsg.ACLOperationAlterConfigs, allow),
		bind(cluster, ClusterName, literal, "User:bob", "*", kmsg.ACLOperationCreate, allow),
	)
	a := NewAuthorizer(acls, []string{"User:admin"}, false)
	cases := []struct {
		principal, host string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		name            string
		want            bool
	}{
		{"User:alice", "1.2.3.4", kmsg.ACLOperationWrite, topic, "orders", true},
		{"User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "orders", false},      // only WRITE
		{"User:alice", "1.2.3.4", kmsg.ACLOperationDescribe, topic, "orders", true},   // WRITE implies DESCRIBE
		{"User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "pay-in", true},       // prefix
		{"User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "pay-secret", false},  // DENY wins
		{"User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "pa", false},          // shorter than the prefix
		{"User:carol", "1.2.3.4", kmsg.ACLOperationDescribeConfigs, topic, "x", true}, // wildcard resource and principal
		{"User:carol", "1.2.3.4", kmsg.ACLOperationAlterConfigs, topic, "x", false},
		{"User:bob", "10.0.0.1", kmsg.ACLOperationRead, topic, "local", true},
		{"User:bob", "10.0.0.2", kmsg.ACLOperationRead, topic, "local", false}, // host
		{"User:alice", "1.2.3.4", kmsg.ACLOperationDescribeConfigs, group, "g", true},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationCreate, cluster, ClusterName, true},
		{"User:admin", "1.2.3.4", kmsg.ACLOperationDelete, topic, "pay-secret", true}, // super user
		{"User:carol", "1.2.3.4", kmsg.ACLOperationRead, group, "unnamed", false},     // no ACL: default deny
	}
	for _, c := range cases {
		if got := a.Allowed(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("%s@%s %s %s %q: %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
		}
	}
	// allow.everyone.if.no.acl.found applies only where no ACL names the resource.
	open := NewAuthorizer(acls, nil, true)
	if !open.Allowed("User:carol", "h", kmsg.ACLOperationRead, group, "unnamed") {
		t.Error("a resource without ACLs was denied with allow.everyone.if.no.acl.found")
	}
	if open.Allowed("User:carol", "h", kmsg.ACLOperationWrite, topic, "orders") {
		t.Error("a resource with ACLs was allowed to a principal none of them names")
	}
	// An idempotent producer may write to some topic.
	if !a.AllowedAnyOf("User:alice", "h", kmsg.ACLOperationWrite, topic) || a.AllowedAnyOf("User:carol", "h", kmsg.ACLOperationWrite, topic) {
		t.Error("AllowedAnyOf")
	}
	// Kafka's authorizeByResourceType: a DENY on a prefix of the allowed
	// name takes it back; a DENY of another name does not; a DENY of every
	// topic wins over everything.
	anyOf := func(acls ...Binding) bool {
		return NewAuthorizer(set(acls...), nil, false).AllowedAnyOf("User:dan", "h", kmsg.ACLOperationWrite, topic)
	}
	allowLit := bind(topic, "pay-in", literal, "User:dan", "*", kmsg.ACLOperationWrite, allow)
	allowPre := bind(topic, "pay-", prefix, "User:dan", "*", kmsg.ACLOperationWrite, allow)
	for name, c := range map[string]struct {
		acls []Binding
		want bool
	}{
		"literal allow":                {[]Binding{allowLit}, true},
		"same literal denied":          {[]Binding{allowLit, bind(topic, "pay-in", literal, "User:dan", "*", kmsg.ACLOperationWrite, deny)}, false},
		"prefix of the literal denied": {[]Binding{allowLit, bind(topic, "pa", prefix, "User:dan", "*", kmsg.ACLOperationAll, deny)}, false},
		"prefix of the prefix denied":  {[]Binding{allowPre, bind(topic, "pay", prefix, "User:*", "*", kmsg.ACLOperationWrite, deny)}, false},
		"a longer prefix denied":       {[]Binding{allowPre, bind(topic, "pay-out", prefix, "User:dan", "*", kmsg.ACLOperationWrite, deny)}, true},
		"another literal denied":       {[]Binding{allowLit, bind(topic, "other", literal, "User:dan", "*", kmsg.ACLOperationWrite, deny)}, true},
		"every topic denied":           {[]Binding{allowLit, bind(topic, "*", literal, "User:dan", "*", kmsg.ACLOperationWrite, deny)}, false},
		"READ does not count":          {[]Binding{bind(topic, "x", literal, "User:dan", "*", kmsg.ACLOperationRead, allow)}, false},
	} {
		if got := anyOf(c.acls...); got != c.want {
			t.Errorf("AllowedAnyOf, %s: %v, want %v", name, got, c.want)
		}
	}
}

func TestCreateDescribeDelete(t *testing.T) {
	have := map[string]Binding{}
	creation := func(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
		return kmsg.CreateACLsRequestCreation{ResourceType: rt, ResourceName: name, ResourcePatternType: pt, Principal: principal, Host: "*", Operation: op, PermissionType: perm}
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		creation(topic, "orders", literal, "User:alice", kmsg.ACLOperationRead, allow),
		creation(topic, "orders", literal, "User:alice", kmsg.ACLOperationRead, allow), // twice: one ACL
		creation(topic, "pay-", prefix, "User:alice", kmsg.ACLOperationWrite, allow),
		creation(cluster, "other", literal, "User:alice", kmsg.ACLOperationAlter, allow),
		creation(topic, "", literal, "User:alice", kmsg.ACLOperationRead, allow),
		creation(topic, "x", literal, "alice", kmsg.ACLOperationRead, allow),
		creation(topic, "x", kmsg.ACLResourcePatternTypeMatch, "User:alice", kmsg.ACLOperationRead, allow),
		creation(topic, "x", literal, "User:alice", kmsg.ACLOperationAny, allow),
		creation(kmsg.ACLResourceTypeTransactionalId, "t", literal, "User:alice", twoPhaseCommit, allow), // KIP-939's operation
	}
	req.Creations = append(req.Creations, creation(topic, "y", literal, "User:alice", kmsg.ACLOperationRead, allow))
	req.Creations[len(req.Creations)-1].Host = ""
	resp, changes := Create(req, have, false)
	// Kafka 4.4's words: the broker's AclApis, then its AclControlManager.
	want := []struct {
		code int16
		msg  string
	}{
		{0, ""}, {0, ""}, {0, ""},
		{kerr.InvalidRequest.Code, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{kerr.InvalidRequest.Code, "Invalid empty resource name"},
		{kerr.InvalidRequest.Code, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{kerr.InvalidRequest.Code, "Invalid patternType MATCH"},
		{kerr.InvalidRequest.Code, "Invalid operation ANY"},
		{0, ""},
		{kerr.InvalidRequest.Code, "Host pattern cannot be null or empty"},
	}
	for i, r := range resp.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != want[i].code || msg != want[i].msg {
			t.Errorf("creation %d: %d %q, want %d %q", i, r.ErrorCode, msg, want[i].code, want[i].msg)
		}
	}
	if len(changes) != 3 {
		t.Fatalf("changes %+v", changes)
	}
	for _, c := range changes {
		c.Apply(have)
	}

	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeMatch, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	d.ResourceName = kmsg.StringPtr("pay-in")
	if got := Describe(d, have); got.ErrorCode != 0 || len(got.Resources) != 1 || got.Resources[0].ResourceName != "pay-" {
		t.Fatalf("MATCH pay-in: %+v", got.Resources)
	}
	d.ResourceName, d.ResourcePatternType = nil, kmsg.ACLResourcePatternTypeAny
	if got := Describe(d, have); len(got.Resources) != 3 {
		t.Fatalf("describe all: %+v", got.Resources)
	}
	// A code Kafka does not know reads as UNKNOWN, which matches nothing:
	// no error (AclApis.handleDescribeAcls, AclCache.acls).
	d.Operation = 99
	if got := Describe(d, have); got.ErrorCode != 0 || len(got.Resources) != 0 {
		t.Fatalf("unknown operation filter: %+v", got)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: topic, ResourceName: kmsg.StringPtr("orders"), ResourcePatternType: literal,
		Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
	dresp, removed := Delete(del, have)
	if len(dresp.Results) != 1 || len(dresp.Results[0].MatchingACLs) != 1 || len(removed) != 1 || !removed[0].Remove {
		t.Fatalf("delete: %+v %+v", dresp.Results, removed)
	}
	removed[0].Apply(have)
	if len(have) != 2 {
		t.Fatalf("left %v", have)
	}

	// Unknown codes are refused per filter, in AclControlManager's words.
	del.Filters = []kmsg.DeleteACLsRequestFilter{
		{ResourceType: 99, ResourcePatternType: literal, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
		{ResourceType: topic, ResourcePatternType: literal, Operation: kmsg.ACLOperationAny, PermissionType: 99},
	}
	dresp, removed = Delete(del, have)
	for i, want := range []string{"Unknown patternFilter.", "Unknown entryFilter."} {
		if r := dresp.Results[i]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Errorf("delete filter %d: %d %v, want %q", i, r.ErrorCode, r.ErrorMessage, want)
		}
	}
	if len(removed) != 0 {
		t.Fatalf("unknown filters removed %+v", removed)
	}
}
