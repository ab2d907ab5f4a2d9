// Package quota is Kafka's client quotas: who a quota belongs to (an
// entity of a user, a client id, or both), how AlterClientQuotas validates
// it and DescribeClientQuotas matches it, which quota applies to a request
// (Kafka's eight levels of precedence), and the sampled rate and throttle
// time of KIP-13 and KIP-219.
//
// The entities and their values are state the broker stores (its metadata
// file on a single node, the controller's records in a cluster) and hands
// to a Manager with Set. Enforcement is per broker, as in Kafka: a Manager
// measures each client's bytes over quota.window.num samples of
// quota.window.size.seconds and answers how long a client over its quota
// must wait; the broker puts that in the response's throttle time and reads
// nothing more from the connection until it has passed.
package quota

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The entity types of client quotas.
const (
	User     = "user"
	ClientID = "client-id"
	IP       = "ip"
)

// The quota keys Kafka defines.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// integralKeys are the keys Kafka types LONG or INT (the others DOUBLE).
var integralKeys = map[string]string{ProducerByteRate: "LONG", ConsumerByteRate: "LONG", ConnectionCreationRate: "INT"}

// Part is one component of an entity; a nil Name is the default entity
// of its type (`--entity-default` of kafka-configs).
type Part struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

// Entity is a quota's owner: its parts sorted by type, each type once.
type Entity []Part

// Entry is one entity and its quota values.
type Entry struct {
	Entity Entity             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// Key is the entity's canonical text, unique per entity.
func (e Entity) Key() string {
	var sb strings.Builder
	for _, p := range e {
		sb.WriteString(p.Type)
		if p.Name == nil {
			sb.WriteString("=<default>;")
		} else {
			sb.WriteString("=" + strconv.Quote(*p.Name) + ";")
		}
	}
	return sb.String()
}

func (e Entity) String() string {
	parts := make([]string, len(e))
	for i, p := range e {
		name := "<default>"
		if p.Name != nil {
			name = *p.Name
		}
		parts[i] = p.Type + "=" + name
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// name returns the part of type typ: whether the entity has one, and its
// name (nil for the default).
func (e Entity) name(typ string) (*string, bool) {
	for _, p := range e {
		if p.Type == typ {
			return p.Name, true
		}
	}
	return nil, false
}

// InvalidError is a request Kafka answers with INVALID_REQUEST.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// NewEntity validates the parts of an AlterClientQuotas entry as Kafka's
// ClientQuotaControlManager does and returns them as an Entity.
func NewEntity(parts []Part) (Entity, error) {
	if len(parts) == 0 {
		return nil, invalid("Invalid empty client quota entity")
	}
	e := make(Entity, 0, len(parts))
	for _, p := range parts {
		if _, dup := e.name(p.Type); dup {
			return nil, invalid("Invalid client quota entity, duplicate entity entry %s", p.Type)
		}
		if p.Type != User && p.Type != ClientID && p.Type != IP {
			return nil, invalid("Unhandled client quota entity type: %s", p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return nil, invalid("Empty %s not supported", p.Type)
		}
		e = append(e, p)
	}
	if ip, isIP := e.name(IP); isIP && len(e) > 1 {
		// Kafka 4.4's words, "shouldnot" included.
		return nil, invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
	} else if isIP && ip != nil && !validIPEntity(*ip) {
		return nil, invalid("%s is not a valid IP or resolvable host.", *ip)
	}
	slices.SortFunc(e, func(a, b Part) int { return strings.Compare(a.Type, b.Type) })
	return e, nil
}

// CheckValue validates one quota value for the entity as Kafka 4.4's
// ClientQuotaControlManager does: a key of the entity's kind, a finite
// value above zero, and for a key Kafka types INT or LONG one that fits
// and has no fraction (within 1e-6).
func (e Entity) CheckValue(key string, value float64) error {
	var valid bool
	if _, ip := e.name(IP); ip {
		valid = key == ConnectionCreationRate
	} else {
		valid = key == ProducerByteRate || key == ConsumerByteRate || key == RequestPercentage || key == ControllerMutationRate
	}
	switch {
	case !valid:
		return invalid("Invalid configuration key %s", key)
	case math.IsInf(value, 0) || math.IsNaN(value):
		return invalid("Quota %s must be a finite number", key)
	case value <= 0:
		return invalid("Quota %s must be greater than 0", key)
	}
	switch integralKeys[key] {
	case "INT":
		if value > math.MaxInt32 {
			return invalid("Proposed value for %s is too large for an INT.", key)
		}
	case "LONG":
		if value > math.MaxInt64 {
			return invalid("Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return nil
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return invalid("%s cannot be a fractional value.", key)
	}
	return nil
}

// validIPEntity is Kafka's test of an IP entity's name
// (InetAddress.getByName): an address, or a host name that resolves.
func validIPEntity(name string) bool {
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return true
	}
	_, err := net.LookupHost(name)
	return err == nil
}

// Op is one change of an AlterClientQuotas entry: set Key to Value, or
// remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Apply validates ops against the entity's current values and returns the
// values after them (empty when every key is removed). Kafka refuses the
// whole entity when a key appears twice or a value is invalid.
func (e Entity) Apply(current map[string]float64, ops []Op) (map[string]float64, error) {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return nil, invalid("Duplicate quota key %s not updating quota for this entity %s", op.Key, e)
		}
		seen[op.Key] = true
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]float64{}
	}
	for _, op := range ops {
		if op.Remove {
			delete(next, op.Key)
			continue
		}
		if err := e.CheckValue(op.Key, op.Value); err != nil {
			return nil, err
		}
		next[op.Key] = op.Value
	}
	return next, nil
}

// The match types of a DescribeClientQuotas filter component.
const (
	MatchExact     = 0 // the named entity
	MatchDefault   = 1 // the default entity
	MatchSpecified = 2 // any entity of the type, default included
)

// Component is one part of a DescribeClientQuotas filter.
type Component struct {
	Type  string
	Match int8
	Name  *string
}

// Filter is a validated DescribeClientQuotas filter.
type Filter struct {
	exact  map[string]*string
	typed  map[string]bool
	strict bool
}

// UnsupportedError is a filter Kafka answers with UNSUPPORTED_VERSION.
type UnsupportedError struct{ Msg string }

func (e *UnsupportedError) Error() string { return e.Msg }

// NewFilter validates a DescribeClientQuotas filter as Kafka's
// ClientQuotasImage does.
func NewFilter(components []Component, strict bool) (*Filter, error) {
	f := &Filter{exact: map[string]*string{}, typed: map[string]bool{}, strict: strict}
	for _, c := range components {
		if c.Type == "" {
			return nil, invalid("Invalid empty entity type.")
		}
		if _, dup := f.exact[c.Type]; dup || f.typed[c.Type] {
			return nil, invalid("Entity type %s cannot appear more than once in the filter.", c.Type)
		}
		if c.Type != User && c.Type != ClientID && c.Type != IP {
			return nil, &UnsupportedError{Msg: "Unsupported entity type " + c.Type}
		}
		switch c.Match {
		case MatchExact:
			if c.Name == nil {
				return nil, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.Type] = c.Name
		case MatchDefault:
			if c.Name != nil {
				return nil, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			f.exact[c.Type] = nil
		case MatchSpecified:
			if c.Name != nil {
				return nil, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			f.typed[c.Type] = true
		default:
			// INVALID_REQUEST, where an unknown entity type is
			// UNSUPPORTED_VERSION: ClientQuotasImage.describe's choice.
			return nil, invalid("Unknown match type %d", c.Match)
		}
	}
	_, ipExact := f.exact[IP]
	_, userExact := f.exact[User]
	_, clientExact := f.exact[ClientID]
	if (ipExact || f.typed[IP]) && (userExact || f.typed[User] || clientExact || f.typed[ClientID]) {
		return nil, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return f, nil
}

// Matches reports whether the filter selects the entity.
func (f *Filter) Matches(e Entity) bool {
	if f.strict && len(e) != len(f.exact)+len(f.typed) {
		return false
	}
	for typ, want := range f.exact {
		got, ok := e.name(typ)
		if !ok || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			return false
		}
	}
	for typ := range f.typed {
		if _, ok := e.name(typ); !ok {
			return false
		}
	}
	return true
}
