package acl

import (
	"cmp"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decision is an Authorizer's answer and the rule it followed, which
// Kafka's audit log (kafka.authorizer.logger) names after "based on rule".
type Decision struct {
	Allowed bool
	rule    ruleKind
	acl     Binding // the deciding ACL, for ruleACL
}

type ruleKind uint8

const (
	ruleDefault   ruleKind = iota // no ACL decided: DefaultAllow or DefaultDeny
	ruleSuperUser                 // the principal is in super.users
	ruleACL                       // a matching ACL decided
)

// Rule is the rule as Kafka's StandardAuthorizer prints it: "SuperUser",
// "DefaultAllow", "DefaultDeny" or "MatchingAcl(acl=StandardAcl[...])".
// Where several ACLs match, the one named is the one Kafka's would name:
// the first DENY, or else the last ALLOW, in the order it reads them
// (kafkaOrder).
func (d Decision) Rule() string {
	switch {
	case d.rule == ruleSuperUser:
		return "SuperUser"
	case d.rule == ruleACL:
		b := d.acl
		return "MatchingAcl(acl=StandardAcl[resourceType=" + b.ResourceType.String() + ", resourceName=" + b.ResourceName +
			", patternType=" + b.PatternType.String() + ", principal=" + b.Principal + ", host=" + b.Host +
			", operation=" + OperationName(b.Operation) + ", permissionType=" + b.Permission.String() + "])"
	case d.Allowed:
		return "DefaultAllow"
	}
	return "DefaultDeny"
}

// OperationName is the operation as Kafka's AclOperation enum names it.
func OperationName(op kmsg.ACLOperation) string {
	if op == twoPhaseCommit {
		return "TWO_PHASE_COMMIT"
	}
	return op.String()
}

// ResourceTypeName is the resource type as Kafka's audit log writes it
// (SecurityUtils.resourceTypeName): Topic, Group, Cluster,
// TransactionalId, DelegationToken, User.
func ResourceTypeName(rt kmsg.ACLResourceType) string {
	var b strings.Builder
	for _, word := range strings.Split(rt.String(), "_") {
		b.WriteString(word[:1] + strings.ToLower(word[1:]))
	}
	return b.String()
}

// kafkaOrder compares two ACLs that cover one resource in the order
// Kafka's StandardAuthorizer reads them: those naming it (its exact name,
// then ever shorter prefixes) before the "*" ACLs, and within one name
// LITERAL before PREFIXED, then by operation, principal and host.
func kafkaOrder(x, y Binding) int {
	if c := cmp.Compare(wildcardRank(x), wildcardRank(y)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(y.ResourceName), len(x.ResourceName)); c != 0 {
		return c
	}
	if c := cmp.Compare(x.PatternType, y.PatternType); c != 0 {
		return c
	}
	if c := cmp.Compare(x.Operation, y.Operation); c != 0 {
		return c
	}
	if c := cmp.Compare(x.Principal, y.Principal); c != 0 {
		return c
	}
	return cmp.Compare(x.Host, y.Host)
}

func wildcardRank(b Binding) int {
	if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == wildcard {
		return 1
	}
	return 0
}
