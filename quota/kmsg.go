package quota

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Alter applies an AlterClientQuotas request to the stored entries (keyed
// by Entity.Key) and returns its response and the entries whose values
// change (empty Values: the entity is removed). An invalid entity is
// refused alone; the others still apply, as in Kafka. An entity named
// again has one answer, as Kafka's (a map by entity): the later entry is
// ignored and the entity's answer becomes INVALID_REQUEST, though the
// first entry's changes stand, as in Kafka. With validateOnly nothing
// changes.
func Alter(req *kmsg.AlterClientQuotasRequest, stored map[string]Entry) (*kmsg.AlterClientQuotasResponse, []Entry) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var changed []Entry
	answered := map[string]int{} // entity key -> its entry in resp.Entries
	for _, re := range req.Entries {
		out := kmsg.AlterClientQuotasResponseEntry{}
		parts := make([]Part, len(re.Entity))
		for i, p := range re.Entity {
			parts[i] = Part{Type: p.Type, Name: p.Name}
			out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		err := func() error {
			e, err := NewEntity(parts)
			if err != nil {
				return err
			}
			if i, dup := answered[e.Key()]; dup {
				resp.Entries[i].ErrorCode = kerr.InvalidRequest.Code
				resp.Entries[i].ErrorMessage = kmsg.StringPtr("Ignoring duplicate entity " + e.String())
				return errDuplicate
			}
			answered[e.Key()] = len(resp.Entries)
			ops := make([]Op, len(re.Ops))
			for i, op := range re.Ops {
				ops[i] = Op{Key: op.Key, Value: op.Value, Remove: op.Remove}
			}
			current := stored[e.Key()].Values
			next, err := e.Apply(current, ops)
			if err != nil {
				return err
			}
			if !req.ValidateOnly && !maps.Equal(current, next) {
				changed = append(changed, Entry{Entity: e, Values: next})
			}
			return nil
		}()
		if err == errDuplicate {
			continue
		}
		if err != nil {
			out.ErrorCode = kerr.InvalidRequest.Code
			out.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp, changed
}

// errDuplicate is an entry whose entity Alter has already answered.
var errDuplicate = errors.New("duplicate entity")

// Describe answers a DescribeClientQuotas request from the stored entries.
func Describe(req *kmsg.DescribeClientQuotasRequest, entries []Entry) *kmsg.DescribeClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	comps := make([]Component, len(req.Components))
	for i, c := range req.Components {
		comps[i] = Component{Type: c.EntityType, Match: int8(c.MatchType), Name: c.Match}
	}
	f, err := NewFilter(comps, req.Strict)
	if err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		if unsup := (*UnsupportedError)(nil); errors.As(err, &unsup) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
		}
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{} // null only with an error: the Java client needs an array
	for _, e := range entries {
		if len(e.Values) == 0 || !f.Matches(e.Entity) {
			continue
		}
		var out kmsg.DescribeClientQuotasResponseEntry
		for _, p := range e.Entity {
			out.Entity = append(out.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		keys := make([]string, 0, len(e.Values))
		for k := range e.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out.Values = append(out.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: e.Values[k]})
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp
}

// Sorted returns the stored entries in the order of their keys.
func Sorted(stored map[string]Entry) []Entry {
	keys := make([]string, 0, len(stored))
	for k := range stored {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = stored[k]
	}
	return out
}
