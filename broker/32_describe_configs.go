package broker

// DescribeConfigs, versions 1-4, for topics (resource type 2) and this
// broker (type 4): values, sources (topic override, static broker config,
// default), synonyms (v1+), types and documentation (v3+).
// Not implemented: broker loggers (type 8) get INVALID_REQUEST; dynamic
// broker configs do not exist yet, so the cluster-default resource ("")
// describes nothing.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var configTypes = map[string]kmsg.ConfigType{
	"BOOLEAN": kmsg.ConfigTypeBoolean, "STRING": kmsg.ConfigTypeString, "INT": kmsg.ConfigTypeInt,
	"SHORT": kmsg.ConfigTypeShort, "LONG": kmsg.ConfigTypeLong, "DOUBLE": kmsg.ConfigTypeDouble,
	"LIST": kmsg.ConfigTypeList, "CLASS": kmsg.ConfigTypeClass, "PASSWORD": kmsg.ConfigTypePassword,
}

func handleDescribeConfigs(b *Broker, c *conn, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.DescribeConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if t := b.topics.get(r.ResourceName); t == nil {
				rr.ErrorCode = errUnknownTopicOrPartition
			} else {
				rr.Configs = b.describeTopicConfigs(b.meta.topicConfigs(t.name), r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeBroker:
			switch r.ResourceName {
			case "":
			case strconv.Itoa(int(b.cfg.NodeID)):
				rr.Configs = b.describeBrokerConfigs(r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			default:
				rr.ErrorCode = errInvalidRequest
				msg := fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, r.ResourceName)
				rr.ErrorMessage = &msg
			}
		default:
			rr.ErrorCode = errInvalidRequest
			msg := fmt.Sprintf("Unsupported resource type %d", r.ResourceType)
			rr.ErrorMessage = &msg
		}
		if rr.ErrorCode != 0 && rr.ErrorMessage == nil {
			rr.ErrorMessage = errorMessage(rr.ErrorCode)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func wanted(names []string, name string) bool {
	if names == nil {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// describeTopicConfigs lists a topic's configs given its overrides.
func (b *Broker) describeTopicConfigs(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range topicConfigKeys {
		key := &topicConfigKeys[i]
		if !wanted(names, key.name) {
			continue
		}
		brokerValue, brokerExplicit := b.cfg.topicDefault(key)
		cfg := kmsg.DescribeConfigsResponseResourceConfig{Name: key.name, ConfigType: configTypes[key.typ]}
		var chain []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if v, ok := overrides[key.name]; ok {
			chain = append(chain, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: key.name, Value: kmsg.StringPtr(v), Source: kmsg.ConfigSourceDynamicTopicConfig})
		}
		if brokerExplicit {
			chain = append(chain, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: key.synonym, Value: kmsg.StringPtr(brokerValue), Source: kmsg.ConfigSourceStaticBrokerConfig})
		}
		chain = append(chain, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: key.synonym, Value: kmsg.StringPtr(key.def), Source: kmsg.ConfigSourceDefaultConfig})
		cfg.Value, cfg.Source = chain[0].Value, chain[0].Source
		if chain[0].Source == kmsg.ConfigSourceDefaultConfig {
			cfg.Value = kmsg.StringPtr(brokerValue)
		}
		cfg.IsDefault = cfg.Source == kmsg.ConfigSourceDefaultConfig
		if synonyms {
			cfg.ConfigSynonyms = chain
		}
		if docs {
			cfg.Documentation = kmsg.StringPtr(key.doc)
		}
		out = append(out, cfg)
	}
	return out
}

// describeBrokerConfigs lists the broker keys Gregor acts on. None is
// dynamically alterable yet, so all are read-only.
func (b *Broker) describeBrokerConfigs(names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range brokerKeys {
		if !wanted(names, key.name) {
			continue
		}
		v := b.cfg.values[key.name]
		source := kmsg.ConfigSourceDefaultConfig
		if b.cfg.explicit[key.name] {
			source = kmsg.ConfigSourceStaticBrokerConfig
		}
		cfg := kmsg.DescribeConfigsResponseResourceConfig{
			Name: key.name, Value: kmsg.StringPtr(v), ReadOnly: true, Source: source,
			IsDefault: source == kmsg.ConfigSourceDefaultConfig, ConfigType: configTypes[key.typ],
		}
		if v == "" {
			cfg.Value = nil
		}
		if synonyms {
			cfg.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: key.name, Value: cfg.Value, Source: source}}
		}
		if docs {
			cfg.Documentation = kmsg.StringPtr(key.doc)
		}
		out = append(out, cfg)
	}
	return out
}
