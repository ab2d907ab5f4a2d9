// Package acl is Kafka's access control without the I/O: ACL bindings
// (a resource pattern, a principal, a host, an operation, ALLOW or DENY),
// the CreateAcls / DescribeAcls / DeleteAcls rules that maintain them, and
// an Authorizer deciding each request as Kafka's StandardAuthorizer does:
//
//	super user                              -> allowed
//	a DENY ACL matches                      -> denied
//	an ALLOW ACL matches                    -> allowed
//	no ACL names the resource at all        -> allow.everyone.if.no.acl.found
//	otherwise                               -> denied
//
// An ACL names a resource by its exact name (LITERAL), by "*" (every
// resource of the type) or by a prefix (PREFIXED); its principal may be
// "User:*" and its host "*" or, from metadata.version 4.4-IV1, a CIDR
// range (cidr.go). ALLOW of READ, WRITE, DELETE or ALTER also
// allows DESCRIBE, and ALLOW of ALTER_CONFIGS allows DESCRIBE_CONFIGS.
package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

const wildcard = "*"

// Binding is one ACL.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string // "User:alice", or "User:*"
	Host         string // an IP, a CIDR range (cidr.go), or "*"
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Key identifies a binding; two equal bindings are one ACL.
func (b Binding) Key() string {
	return fmt.Sprintf("%d/%d/%d/%s/%s/%d/%d/%s", b.ResourceType, b.PatternType, len(b.ResourceName), b.ResourceName,
		b.Principal, b.Operation, b.Permission, b.Host)
}

// validate applies Kafka 4.4's checks of a new ACL, the broker's
// (AclApis: the CLUSTER resource's name, an empty name) and then the
// controller's (AclControlManager), returning the INVALID_REQUEST message
// or "".
func (b Binding) validate() string {
	switch {
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return "The only valid name for the CLUSTER resource is " + ClusterName
	case b.ResourceName == "":
		return "Invalid empty resource name"
	case b.ResourceType < kmsg.ACLResourceTypeTopic || b.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Sprintf("Invalid resourceType %s", b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Sprintf("Invalid patternType %s", b.PatternType)
	case b.Operation < kmsg.ACLOperationAll || b.Operation > twoPhaseCommit:
		return fmt.Sprintf("Invalid operation %s", b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return fmt.Sprintf("Invalid permissionType %s", b.Permission)
	case !strings.Contains(b.Principal, ":"):
		return fmt.Sprintf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	case b.Host == "":
		return "Host pattern cannot be null or empty"
	}
	return ""
}

// twoPhaseCommit is Kafka 4's TWO_PHASE_COMMIT operation (KIP-939), which
// franz-go's enum does not name; ACLs for it are kept like any other.
const twoPhaseCommit kmsg.ACLOperation = 15

// Filter selects bindings, as DescribeAcls and DeleteAcls do: ANY types
// and nil strings match everything; the MATCH pattern type selects the
// ACLs that would apply to the named resource (its literal ACLs, "*",
// and the prefixes of its name).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// invalid reports why DeleteAcls refuses a filter naming a code Kafka
// does not know (which Java reads as UNKNOWN), in AclControlManager's
// words, or "". DescribeAcls refuses none: such a filter matches nothing.
func (f Filter) invalid() string {
	switch {
	case f.ResourceType <= kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser,
		f.PatternType <= kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return "Unknown patternFilter."
	case f.Operation <= kmsg.ACLOperationUnknown || f.Operation > twoPhaseCommit,
		f.Permission <= kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return "Unknown entryFilter."
	}
	return ""
}

// NamesUnknown reports whether an ACL or filter names UNKNOWN (code 0) as
// its resource type, pattern type, operation or permission: Kafka's
// CreateAcls, DescribeAcls and DeleteAcls requests do not parse then
// (their validate throws), which closes the connection.
func NamesUnknown(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) bool {
	return rt == kmsg.ACLResourceTypeUnknown || pt == kmsg.ACLResourcePatternTypeUnknown ||
		op == kmsg.ACLOperationUnknown || perm == kmsg.ACLPermissionTypeUnknown
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == b.PatternType:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != wildcard {
				return false
			}
		default: // MATCH against a PREFIXED ACL
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		}
	}
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == b.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission)
}
