package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides requests from a fixed set of ACLs; a new set makes a
// new Authorizer.
type Authorizer struct {
	byType      map[kmsg.ACLResourceType][]Binding
	superUsers  map[string]bool
	allowIfNone bool
}

// NewAuthorizer builds an Authorizer over acls (keyed by Binding.Key) with
// super.users and allow.everyone.if.no.acl.found.
func NewAuthorizer(acls map[string]Binding, superUsers []string, allowIfNone bool) *Authorizer {
	a := &Authorizer{byType: map[kmsg.ACLResourceType][]Binding{}, superUsers: map[string]bool{}, allowIfNone: allowIfNone}
	for _, b := range acls {
		a.byType[b.ResourceType] = append(a.byType[b.ResourceType], b)
	}
	for _, u := range superUsers {
		a.superUsers[u] = true
	}
	return a
}

// Allowed decides whether principal ("User:alice"), connecting from host,
// may perform op on the resource of type rt called name.
func (a *Authorizer) Allowed(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	allowed, named := false, false
	for _, b := range a.byType[rt] {
		if !namesResource(b, name) {
			continue
		}
		named = true
		switch applies(b, principal, host, op) {
		case kmsg.ACLPermissionTypeDeny:
			return false
		case kmsg.ACLPermissionTypeAllow:
			allowed = true
		}
	}
	if !named {
		return a.allowIfNone
	}
	return allowed
}

// AllowedAnyOf decides whether principal may perform op on some resource
// of type rt, as Kafka's authorizeByResourceType does for an idempotent
// producer without IDEMPOTENT_WRITE: an ALLOW ACL for it on any resource
// not taken back by a DENY of the same pattern (or of every resource).
func (a *Authorizer) AllowedAnyOf(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	denied := map[string]bool{}
	for _, b := range a.byType[rt] {
		if applies(b, principal, host, op) == kmsg.ACLPermissionTypeDeny {
			if b.ResourceName == wildcard && b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
				return false
			}
			denied[patternKey(b)] = true
		}
	}
	for _, b := range a.byType[rt] {
		if applies(b, principal, host, op) == kmsg.ACLPermissionTypeAllow && !denied[patternKey(b)] {
			return true
		}
	}
	return len(a.byType[rt]) == 0 && a.allowIfNone
}

func patternKey(b Binding) string {
	return b.PatternType.String() + "/" + b.ResourceName
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
func applies(b Binding, principal, host string, op kmsg.ACLOperation) kmsg.ACLPermissionType {
	if b.Principal != principal && b.Principal != "User:*" {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Host != wildcard && b.Host != host {
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
