package broker

// Client metrics subscriptions (KIP-714): named sets of configs on
// resource type CLIENT_METRICS (16), set with IncrementalAlterConfigs or
// AlterConfigs (kafka-client-metrics --alter, kafka-configs --entity-type
// client-metrics), listed by ListConfigResources and described with
// DescribeConfigs, validated as Kafka's ClientMetricsConfigs validates
// them: the metric name prefixes to collect (metrics), how often clients
// push them (interval.ms) and which clients they apply to (match). They
// are kept like group configs (the metadata file, or the controller's
// metadata in a cluster); removing every key removes the subscription.
//
// As a Kafka broker without a client telemetry plugin, Gregor does not
// list GetTelemetrySubscriptions and PushTelemetry in ApiVersions, so no
// client is asked to push: the subscriptions are kept for the tools and
// for the day a receiver exists.

import (
	"errors"
	"fmt"
	"maps"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientMetricsKeys are a subscription's configs, in the order Kafka
// defines (and checks) them.
var clientMetricsKeys = []namedConfigKey{
	{name: "metrics", typ: "LIST", def: "", doc: "Telemetry metric name prefix list"},
	{name: "interval.ms", typ: "INT", def: "300000", doc: "Metrics push interval in milliseconds"},
	{name: "match", typ: "LIST", def: "", doc: "Client match criteria"},
}

// clientMatchKeys are the client attributes a match pattern may test.
var clientMatchKeys = []string{"client_instance_id", "client_id", "client_software_name",
	"client_software_version", "client_source_address", "client_source_port"}

func findClientMetricsKey(name string) *namedConfigKey {
	return findConfigKey(clientMetricsKeys, name)
}

func clientMetricsField(d *metaData) *map[string]map[string]string { return &d.ClientMetricsConfigs }

// clientMetricsOverrides are a subscription's configs.
func (b *Broker) clientMetricsOverrides(name string) map[string]string {
	return b.namedOverrides(controller.ResourceClientMetrics, clientMetricsField, name)
}

// clientMetricsSubscriptions lists the subscriptions' names.
func (b *Broker) clientMetricsSubscriptions() []string {
	if b.cluster == nil {
		return b.meta.configNames(clientMetricsField)
	}
	img := b.cluster.image()
	if img == nil {
		return nil
	}
	var names []string
	for r := range img.Configs {
		if r.Type == controller.ResourceClientMetrics {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// parseConfigList splits a LIST value as Kafka's ConfigDef does: nothing
// but blanks is the empty list, otherwise every comma separates two
// values (empty ones included), each trimmed.
func parseConfigList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// validateClientMetrics applies Kafka's ClientMetricsConfigs.validate to a
// subscription's configs as they would be. The codes are those Kafka's
// controller answers: INVALID_REQUEST for an unknown key or an interval
// out of range, INVALID_CONFIG for a value its ConfigDef refuses and for
// a bad match pattern.
func validateClientMetrics(set map[string]string) *configError {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if findClientMetricsKey(name) == nil {
			return configErr(errInvalidRequest, "Unknown client metrics configuration: %s", name)
		}
	}
	interval := int64(300000)
	for _, key := range clientMetricsKeys {
		name := key.name
		v, ok := set[name]
		if !ok {
			continue
		}
		if name == "interval.ms" {
			n, err := parseLong(v, 32, "INT")
			if err != nil {
				return configErr(errInvalidConfig, "Invalid value %s for configuration interval.ms: %v", v, err)
			}
			interval = n
			continue
		}
		values := parseConfigList(v)
		if len(uniqueStrings(values)) != len(values) {
			return configErr(errInvalidConfig, "Configuration '%s' values must not be duplicated.", name)
		}
		if slices.Contains(values, "") {
			return configErr(errInvalidConfig, "Configuration '%s' values must not be empty.", name)
		}
	}
	if interval < 100 || interval > 3600000 {
		return configErr(errInvalidRequest, "Invalid value %d for interval.ms, interval must be between 100 and 3600000 (1 hour)", interval)
	}
	for _, pattern := range parseConfigList(set["match"]) {
		if !validClientMatch(pattern) {
			return configErr(errInvalidConfig, "Illegal client matching pattern: %s", pattern)
		}
	}
	return nil
}

func uniqueStrings(values []string) map[string]bool {
	set := map[string]bool{}
	for _, v := range values {
		set[v] = true
	}
	return set
}

// validClientMatch reports whether a match entry is "attribute=regex" with
// a known attribute and a regular expression that compiles. It splits on
// "=" as Java's String.split does, which drops trailing empty parts, so
// "client_id=" is one part and illegal. Kafka compiles the expression as
// a Java pattern; Go's regexp refuses the same broken ones (unbalanced
// brackets and parentheses, a repetition of nothing), but also Perl
// constructs RE2 lacks and Java has (lookaround, backreferences), which
// are taken here as Kafka takes them.
func validClientMatch(entry string) bool {
	parts := strings.Split(entry, "=")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 2 || !slices.Contains(clientMatchKeys, strings.TrimSpace(parts[0])) {
		return false
	}
	_, err := syntax.Parse(strings.TrimSpace(parts[1]), syntax.Perl)
	var perr *syntax.Error
	if errors.As(err, &perr) && (perr.Code == syntax.ErrInvalidPerlOp || perr.Code == syntax.ErrInvalidEscape) {
		return true
	}
	return err == nil
}

// describeClientMetrics lists a subscription's configs as Kafka's
// ConfigHelper does: every key, CLIENT_METRICS_CONFIG where set (the
// value as its type prints it), else DEFAULT_CONFIG with the default.
func describeClientMetrics(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range clientMetricsKeys {
		if !wanted(names, key.name) {
			continue
		}
		value := key.def
		var chain []configSynonymEntry
		if v, ok := overrides[key.name]; ok {
			if key.typ == "LIST" {
				value = strings.Join(parseConfigList(v), ",")
			} else {
				n, _ := parseLong(v, 32, key.typ)
				value = strconv.FormatInt(n, 10)
			}
			chain = append(chain, configSynonymEntry{Name: key.name, Value: kmsg.StringPtr(value), Source: kmsg.ConfigSourceClientMetricsConfig})
		}
		out = append(out, describeEntry(key.name, key.typ, key.doc, kmsg.StringPtr(value), chain, false, synonyms, docs))
	}
	return out
}

func (b *Broker) alterClientMetrics(r alterResource, incremental, validateOnly bool) *configError {
	if r.name == "" {
		return configErr(errInvalidRequest, "Subscription name can't be empty")
	}
	notList := func(name string, op int8) *configError {
		if key := findClientMetricsKey(name); key != nil && key.typ == "LIST" {
			return nil
		}
		return configErr(errInvalidConfig, "Can't %s to key %s because its type is not LIST.", opName(op), name)
	}
	next, cerr := nextOverrides(b.clientMetricsOverrides(r.name), r, incremental, notList, func(string) string { return "" })
	if cerr != nil {
		return cerr
	}
	if cerr := validateClientMetrics(next); cerr != nil {
		return cerr
	}
	if validateOnly {
		return nil
	}
	return b.storeNamedConfigs(r, incremental, next, clientMetricsField)
}

// storeNamedConfigs keeps the configs of a named resource that needs no
// other state (a group, a client metrics subscription): in the
// controller's metadata in a cluster, else in the metadata file's map
// that field picks; an empty set removes the resource's entry.
func (b *Broker) storeNamedConfigs(r alterResource, incremental bool, next map[string]string, field namedConfigsField) *configError {
	if b.cluster != nil {
		return b.cluster.setConfigs(r.typ, r.name, next, r.touched(incremental))
	}
	err := b.meta.update(func(d *metaData) {
		all := maps.Clone(*field(d))
		if all == nil {
			all = map[string]map[string]string{}
		}
		if len(next) == 0 {
			delete(all, r.name)
		} else {
			all[r.name] = next
		}
		*field(d) = all
	})
	if err != nil {
		b.logger.Error("persisting configs failed", "resource_type", r.typ, "name", r.name, "err", err)
		return configErr(errUnknownServerError, "persisting the configs failed: %v", err)
	}
	b.logger.Info("altered configs", "resource_type", fmt.Sprint(r.typ), "name", r.name, "configs", next)
	return nil
}
