package broker

// DescribeConfigs, versions 1-4, for topics (resource type 2) and brokers
// (type 4: this node's id, or "" for the cluster-wide dynamic defaults),
// as Kafka's ConfigHelper answers: each config's value and source
// (TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG), its synonyms when asked (every
// broker synonym set at each level, level by level in that order, from the
// config's own name on), read-only for broker configs that cannot change
// at runtime, and from v3 its type and, when asked, documentation. No
// Gregor config is sensitive. An empty or null list of names means all.
// Groups (type 32) and client metrics subscriptions (type 16) have their
// own configs (group_configs.go, client_metrics_configs.go), this node's
// loggers (type 8) their levels (broker_loggers.go).

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var configTypes = map[string]kmsg.ConfigType{
	"BOOLEAN": kmsg.ConfigTypeBoolean, "STRING": kmsg.ConfigTypeString, "INT": kmsg.ConfigTypeInt,
	"SHORT": kmsg.ConfigTypeShort, "LONG": kmsg.ConfigTypeLong, "DOUBLE": kmsg.ConfigTypeDouble,
	"LIST": kmsg.ConfigTypeList, "CLASS": kmsg.ConfigTypeClass, "PASSWORD": kmsg.ConfigTypePassword,
}

type configSynonymEntry = kmsg.DescribeConfigsResponseResourceConfigConfigSynonym

func describeConfigsHandler(b *Broker, c *conn, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.DescribeConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		var msg string
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := controller.ValidateTopicName(r.ResourceName); err != nil {
				rr.ErrorCode, msg = errInvalidTopic, err.Error()
			} else if !b.topicExists(r.ResourceName) {
				rr.ErrorCode = errUnknownTopicOrPartition
			} else {
				rr.Configs = b.describeTopicConfigs(b.topicOverrides(r.ResourceName), r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName == "" {
				rr.Configs = b.describeClusterBrokerConfigs(r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			} else if id, err := strconv.Atoi(r.ResourceName); err != nil {
				rr.ErrorCode, msg = errInvalidRequest, "Broker id must be an integer, but it is: "+r.ResourceName
			} else if id != int(b.cfg.NodeID) {
				rr.ErrorCode = errInvalidRequest
				msg = fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, r.ResourceName)
			} else {
				rr.Configs = b.describeBrokerConfigs(r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if r.ResourceName == "" {
				rr.ErrorCode, msg = errInvalidRequest, "Group name must not be empty"
			} else {
				rr.Configs = b.describeGroupConfigs(b.groupOverrides(r.ResourceName), r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeBrokerLogger:
			rr.Configs, rr.ErrorCode, msg = b.describeBrokerLoggers(r.ResourceName, r.ConfigNames)
		case kmsg.ConfigResourceTypeClientMetrics:
			if r.ResourceName == "" {
				rr.ErrorCode, msg = errInvalidRequest, "Client metrics subscription name must not be empty"
			} else {
				rr.Configs = describeClientMetrics(b.clientMetricsOverrides(r.ResourceName), r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		default:
			rr.ErrorCode, msg = errInvalidRequest, fmt.Sprintf("Unsupported resource type: %d", r.ResourceType)
		}
		if rr.ErrorCode != 0 {
			rr.ErrorMessage = errorMessage(rr.ErrorCode)
			if msg != "" {
				rr.ErrorMessage = &msg
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// wanted reports whether name is asked for; no names means all.
func wanted(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// configLayer is one source of broker values.
type configLayer struct {
	source kmsg.ConfigSource
	values map[string]string
}

// brokerLayers are the sources of broker values in Kafka's precedence
// order: this node's dynamic configs, the cluster-wide dynamic defaults,
// server.properties, and the built-in defaults.
func (b *Broker) brokerLayers() []configLayer {
	perBroker, cluster := b.dynamicBrokerConfigs()
	defaults := map[string]string{}
	for _, k := range brokerKeys {
		if k.def != "" {
			defaults[k.name] = k.def
		}
	}
	return []configLayer{
		{kmsg.ConfigSourceDynamicBrokerConfig, perBroker},
		{kmsg.ConfigSourceDynamicDefaultBrokerConfig, cluster},
		{kmsg.ConfigSourceStaticBrokerConfig, b.cfg.staticProps()},
		{kmsg.ConfigSourceDefaultConfig, defaults},
	}
}

// brokerSynonyms are the broker keys that set the same thing as name, in
// precedence order (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
	groups := [][]string{
		{"log.roll.ms", "log.roll.hours"},
		{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	}
	if name == "log.flush.interval.ms" {
		return []string{name, "log.flush.scheduler.interval.ms"}
	}
	for _, g := range groups {
		for _, n := range g {
			if n == name {
				return g
			}
		}
	}
	return []string{name}
}

// synonymChain lists, level by level, every synonym of name that has a
// value at that level, then drops the entries before the first one named
// name, as Kafka does: describing retention.ms with only
// log.retention.hours set gives no synonyms.
func synonymChain(layers []configLayer, name string) []configSynonymEntry {
	var out []configSynonymEntry
	for _, l := range layers {
		for _, n := range brokerSynonyms(name) {
			if v, ok := l.values[n]; ok {
				out = append(out, configSynonymEntry{Name: n, Value: kmsg.StringPtr(v), Source: l.source})
			}
		}
	}
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	return out
}

// describeEntry builds one config entry from its value and synonym chain.
func describeEntry(name, typ, doc string, value *string, chain []configSynonymEntry, readOnly, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	cfg := kmsg.DescribeConfigsResponseResourceConfig{Name: name, Value: value, ReadOnly: readOnly,
		Source: kmsg.ConfigSourceDefaultConfig, ConfigType: configTypes[typ]}
	if len(chain) > 0 {
		cfg.Source = chain[0].Source
	}
	cfg.IsDefault = cfg.Source == kmsg.ConfigSourceDefaultConfig
	if typ == "PASSWORD" { // passwords and keys are never described, as in Kafka
		cfg.Value, cfg.IsSensitive = nil, true
		chain = slices.Clone(chain)
		for i := range chain {
			chain[i].Value = nil
		}
	}
	if synonyms {
		cfg.ConfigSynonyms = chain
	}
	if docs {
		cfg.Documentation = kmsg.StringPtr(doc)
	}
	return cfg
}

// describeTopicConfigs lists a topic's configs given its overrides.
func (b *Broker) describeTopicConfigs(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	live := b.liveConfig()
	layers := b.brokerLayers()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range topicConfigKeys {
		key := &topicConfigKeys[i]
		if !wanted(names, key.name) {
			continue
		}
		var chain []configSynonymEntry
		if v, ok := overrides[key.name]; ok {
			chain = append(chain, configSynonymEntry{Name: key.name, Value: kmsg.StringPtr(v), Source: kmsg.ConfigSourceDynamicTopicConfig})
		}
		if len(key.synonyms) > 0 {
			chain = append(chain, synonymChain(layers, key.synonyms[0].name)...)
		}
		value := kmsg.StringPtr(live.topicValue(overrides, key.name))
		out = append(out, describeEntry(key.name, key.typ, key.doc, value, chain, false, synonyms, docs))
	}
	return out
}

// describeBrokerConfigs lists this node's broker keys with their effective
// values; only the dynamic ones are alterable, so the rest are read-only.
func (b *Broker) describeBrokerConfigs(names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	live := b.liveConfig()
	layers := b.brokerLayers()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range brokerKeys {
		if !wanted(names, key.name) {
			continue
		}
		var value *string
		if v := live.values[key.name]; v != "" {
			value = kmsg.StringPtr(v)
		}
		chain := synonymChain(layers, key.name)
		out = append(out, describeEntry(key.name, key.typ, key.doc, value, chain, !dynamicBrokerKeys[key.name], synonyms, docs))
	}
	return append(out, listenerKeyEntries(layers, names, synonyms, docs)...)
}

// listenerKeyEntries describes the listener-prefixed keys
// (listener.name.<listener>.<setting>) set at any of the layers, as Kafka
// lists them with the broker's: typed and documented as their setting, so
// a password stays hidden; the connection limits are alterable (the TLS
// stores too, but Kafka describes them read-only, as every
// listener-prefixed key).
func listenerKeyEntries(layers []configLayer, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	set := map[string]bool{}
	for _, l := range layers {
		for k := range l.values {
			if isListenerKey(k) || isDynamicListenerKey(k) || isDynamicSSLKey(k) {
				set[k] = true
			}
		}
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !wanted(names, k) {
			continue
		}
		var chain []configSynonymEntry
		for _, l := range layers {
			if v, ok := l.values[k]; ok {
				chain = append(chain, configSynonymEntry{Name: k, Value: kmsg.StringPtr(v), Source: l.source})
			}
		}
		typ, doc := listenerSettingType(k)
		out = append(out, describeEntry(k, typ, doc, chain[0].Value, chain, !isDynamicListenerKey(k), synonyms, docs))
	}
	return out
}

// listenerSettingType is the type and documentation of the setting a
// listener-prefixed key sets; a mechanism's JAAS entry is a password.
func listenerSettingType(key string) (typ, doc string) {
	rest := strings.TrimPrefix(key, listenerPrefix)
	_, setting, _ := strings.Cut(rest, ".")
	if strings.HasSuffix(setting, ".sasl.jaas.config") {
		return "PASSWORD", "The JAAS login context of a SASL mechanism on this listener."
	}
	if k := findKey(setting); k != nil {
		return k.typ, k.doc
	}
	if _, base, ok := strings.Cut(setting, "."); ok { // <mechanism>.<setting>
		if k := findKey(base); k != nil {
			return k.typ, k.doc
		}
	}
	return "STRING", ""
}

// describeClusterBrokerConfigs lists the cluster-wide dynamic defaults
// (resource name ""): only the keys set there, with only that level's
// synonyms.
func (b *Broker) describeClusterBrokerConfigs(names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	_, cluster := b.dynamicBrokerConfigs()
	layers := []configLayer{{kmsg.ConfigSourceDynamicDefaultBrokerConfig, cluster}}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range brokerKeys {
		v, ok := cluster[key.name]
		if !ok || !wanted(names, key.name) {
			continue
		}
		chain := synonymChain(layers, key.name)
		out = append(out, describeEntry(key.name, key.typ, key.doc, kmsg.StringPtr(v), chain, !dynamicBrokerKeys[key.name], synonyms, docs))
	}
	return append(out, listenerKeyEntries(layers, names, synonyms, docs)...)
}
