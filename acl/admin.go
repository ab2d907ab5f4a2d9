package acl

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Change is one ACL added, or removed when Remove is set.
type Change struct {
	Binding Binding
	Remove  bool `json:",omitempty"`
}

// Apply makes the change in a map of bindings keyed by Binding.Key.
func (c Change) Apply(acls map[string]Binding) {
	if c.Remove {
		delete(acls, c.Binding.Key())
	} else {
		acls[c.Binding.Key()] = c.Binding
	}
}

// Changes lists bindings as the changes that would add them, in key
// order, for snapshots.
func Changes(acls map[string]Binding) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(acls)) {
		out = append(out, Change{Binding: acls[k]})
	}
	return out
}

// Create validates CreateAcls creations against have: each gets its own
// result (INVALID_REQUEST for an invalid ACL; UNSUPPORTED_VERSION for a
// CIDR host unless cidr, metadata.version 4.4-IV1, allows them); an ACL
// already present is a success that changes nothing.
func Create(req *kmsg.CreateACLsRequest, have map[string]Binding, cidr bool) (*kmsg.CreateACLsResponse, []Change) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	var changes []Change
	added := map[string]bool{}
	for _, c := range req.Creations {
		b := Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		r := kmsg.NewCreateACLsResponseResult()
		if msg := b.validate(); msg != "" {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
		} else if isCIDR(b.Host) && !cidr {
			r.ErrorCode = kerr.UnsupportedVersion.Code
			r.ErrorMessage = kmsg.StringPtr("CIDR-based ACL host patterns require metadata version " + CIDRMetadataVersion + " or higher.")
		} else if _, err := parseCIDR(b.Host); isCIDR(b.Host) && err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		} else if _, ok := have[b.Key()]; !ok && !added[b.Key()] {
			added[b.Key()] = true
			changes = append(changes, Change{Binding: b})
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, changes
}

// filterOf reads a DescribeAcls or DeleteAcls filter.
func filterOf(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Filter {
	return Filter{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// sorted lists the bindings in key order, so that answers are stable.
func sorted(acls map[string]Binding) []Binding {
	out := make([]Binding, 0, len(acls))
	for _, k := range slices.Sorted(maps.Keys(acls)) {
		out = append(out, acls[k])
	}
	return out
}

// Describe answers DescribeAcls: the ACLs the filter selects, grouped by
// resource pattern (none for a code Kafka does not know, as in Kafka).
func Describe(req *kmsg.DescribeACLsRequest, have map[string]Binding) *kmsg.DescribeACLsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := filterOf(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	index := map[string]int{}
	for _, b := range sorted(have) {
		if !f.Matches(b) {
			continue
		}
		key := patternKey(b) + "/" + b.ResourceType.String()
		i, ok := index[key]
		if !ok {
			i = len(resp.Resources)
			index[key] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp
}

// Delete answers DeleteAcls: per filter, the ACLs it selects, which are
// removed (an ACL selected by two filters is listed by both).
func Delete(req *kmsg.DeleteACLsRequest, have map[string]Binding) (*kmsg.DeleteACLsResponse, []Change) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	var changes []Change
	removed := map[string]bool{}
	all := sorted(have)
	for _, rf := range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		f := filterOf(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if msg := f.invalid(); msg != "" {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, r)
			continue
		}
		for _, b := range all {
			if !f.Matches(b) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			r.MatchingACLs = append(r.MatchingACLs, m)
			if !removed[b.Key()] {
				removed[b.Key()] = true
				changes = append(changes, Change{Binding: b, Remove: true})
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, changes
}

// patternKey identifies a binding's resource pattern within its type.
func patternKey(b Binding) string {
	return b.PatternType.String() + "/" + b.ResourceName
}
