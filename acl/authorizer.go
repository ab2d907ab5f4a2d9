package acl

import (
	"net/netip"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides requests from a fixed set of ACLs; a new set makes a
// new Authorizer.
type Authorizer struct {
	byType      map[kmsg.ACLResourceType][]Binding
	superUsers  map[string]bool
	allowIfNone bool
	ranges      map[string]netip.Prefix // the ACLs' CIDR hosts, parsed once
}

// NewAuthorizer builds an Authorizer over acls (keyed by Binding.Key) with
// super.users and allow.everyone.if.no.acl.found.
func NewAuthorizer(acls map[string]Binding, superUsers []string, allowIfNone bool) *Authorizer {
	a := &Authorizer{byType: map[kmsg.ACLResourceType][]Binding{}, superUsers: map[string]bool{}, allowIfNone: allowIfNone,
		ranges: map[string]netip.Prefix{}}
	for _, b := range acls {
		a.byType[b.ResourceType] = append(a.byType[b.ResourceType], b)
		if p, err := parseCIDR(b.Host); isCIDR(b.Host) && err == nil {
			a.ranges[b.Host] = p
		}
	}
	for _, u := range superUsers {
		a.superUsers[u] = true
	}
	return a
}

// Allowed decides whether principal ("User:alice"), connecting from host,
// may perform op on the resource of type rt called name.
func (a *Authorizer) Allowed(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.Decide(principal, host, op, rt, name).Allowed
}

// Decide is Allowed with the rule that decided, for the audit log.
func (a *Authorizer) Decide(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) Decision {
	if a.superUsers[principal] {
		return Decision{Allowed: true, rule: ruleSuperUser}
	}
	var deny, allow *Binding
	named := false
	for i := range a.byType[rt] {
		b := &a.byType[rt][i]
		if !namesResource(*b, name) {
			continue
		}
		named = true
		switch a.applies(*b, principal, host, op) {
		case kmsg.ACLPermissionTypeDeny:
			if deny == nil || kafkaOrder(*b, *deny) < 0 {
				deny = b
			}
		case kmsg.ACLPermissionTypeAllow:
			if allow == nil || kafkaOrder(*b, *allow) > 0 {
				allow = b
			}
		}
	}
	switch {
	case deny != nil:
		return Decision{rule: ruleACL, acl: *deny}
	case allow != nil:
		return Decision{Allowed: true, rule: ruleACL, acl: *allow}
	case !named:
		return Decision{Allowed: a.allowIfNone, rule: ruleDefault}
	}
	return Decision{rule: ruleDefault}
}

// AllowedAnyOf decides whether principal may perform op on some resource
// of type rt, as Kafka's Authorizer.authorizeByResourceType does (an
// idempotent producer without IDEMPOTENT_WRITE needs WRITE on some topic):
// allowed if a resource nobody has named would be, otherwise if an ALLOW
// ACL for op names some resource that no DENY covers: a DENY of every
// resource wins, a literal ALLOW falls to a DENY of the same name or of a
// prefix of it, a prefixed ALLOW to a DENY of a prefix of its prefix.
func (a *Authorizer) AllowedAnyOf(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.Allowed(principal, host, op, rt, "hardcode") { // Kafka's own probe name
		return true
	}
	deniedLiteral, deniedPrefix := map[string]bool{}, map[string]bool{}
	var allowed []Binding
	for _, b := range a.byType[rt] {
		if b.Principal != principal && b.Principal != "User:*" || !a.hostMatches(b.Host, host) ||
			b.Operation != op && b.Operation != kmsg.ACLOperationAll {
			continue
		}
		literal := b.PatternType == kmsg.ACLResourcePatternTypeLiteral
		switch {
		case b.Permission == kmsg.ACLPermissionTypeDeny && literal && b.ResourceName == wildcard:
			return false
		case b.Permission == kmsg.ACLPermissionTypeDeny && literal:
			deniedLiteral[b.ResourceName] = true
		case b.Permission == kmsg.ACLPermissionTypeDeny:
			deniedPrefix[b.ResourceName] = true
		case b.Permission == kmsg.ACLPermissionTypeAllow:
			allowed = append(allowed, b)
		}
	}
	wildcardAllowed := false
	for _, b := range allowed {
		wildcardAllowed = wildcardAllowed || b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == wildcard
	}
	if wildcardAllowed {
		return true
	}
	for _, b := range allowed {
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && deniedLiteral[b.ResourceName] {
			continue
		}
		dominated := false
		for i := 1; i <= len(b.ResourceName) && !dominated; i++ {
			dominated = deniedPrefix[b.ResourceName[:i]]
		}
		if !dominated {
			return true
		}
	}
	return false
}

// namesResource reports whether b's resource pattern covers name.
func namesResource(b Binding, name string) bool {
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == name || b.ResourceName == wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// applies returns b's permission if it applies to principal, host and op
// (ALLOW of an operation implying op included), or Unknown if it does not.
func (a *Authorizer) applies(b Binding, principal, host string, op kmsg.ACLOperation) kmsg.ACLPermissionType {
	if b.Principal != principal && b.Principal != "User:*" {
		return kmsg.ACLPermissionTypeUnknown
	}
	if !a.hostMatches(b.Host, host) {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Operation != kmsg.ACLOperationAll && b.Operation != op {
		implied := b.Permission == kmsg.ACLPermissionTypeAllow &&
			(op == kmsg.ACLOperationDescribe && (b.Operation == kmsg.ACLOperationRead || b.Operation == kmsg.ACLOperationWrite ||
				b.Operation == kmsg.ACLOperationDelete || b.Operation == kmsg.ACLOperationAlter) ||
				op == kmsg.ACLOperationDescribeConfigs && b.Operation == kmsg.ACLOperationAlterConfigs)
		if !implied {
			return kmsg.ACLPermissionTypeUnknown
		}
	}
	return b.Permission
}
