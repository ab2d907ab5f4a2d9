package broker

// Group configs (KIP-848): a consumer group's own session timeout and
// heartbeat interval, set with IncrementalAlterConfigs or AlterConfigs on
// resource type GROUP (kafka-configs --entity-type groups) and described
// with DescribeConfigs, as Kafka's GroupConfig. A key not set takes the
// broker's group.consumer.* value. They are kept like topic configs (the
// metadata file, or the controller's metadata in a cluster), whether the
// group exists or not, and the coordinator reads them on every heartbeat.
// The share.* and streams.* keys of Kafka's GroupConfig are refused as
// unknown: Gregor serves neither share nor streams groups.

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfigKey is a group config and the broker key it defaults to.
type groupConfigKey struct {
	name, broker, doc string
}

var groupConfigKeys = []groupConfigKey{
	{"consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "The heartbeat interval given to the members."},
	{"consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "The timeout to detect client failures when using the consumer group protocol."},
}

func findGroupConfigKey(name string) *groupConfigKey {
	for i := range groupConfigKeys {
		if groupConfigKeys[i].name == name {
			return &groupConfigKeys[i]
		}
	}
	return nil
}

// groupOverrides are the configs set on a group.
func (b *Broker) groupOverrides(name string) map[string]string {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.Configs[controller.ConfigResource{Type: controller.ResourceGroup, Name: name}]
		}
		return nil
	}
	return b.meta.groupConfigs(name)
}

// groupConfigFor is what the coordinator asks of a group's configs.
func (b *Broker) groupConfigFor(name string) group.GroupConfig {
	set := b.groupOverrides(name)
	millis := func(key string) time.Duration {
		n, _ := strconv.Atoi(set[key]) // validated when set
		return time.Duration(n) * time.Millisecond
	}
	return group.GroupConfig{
		ConsumerSessionTimeout:    millis("consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: millis("consumer.heartbeat.interval.ms"),
	}
}

// describeGroupConfigs lists a group's configs: GROUP_CONFIG where set,
// else DEFAULT_CONFIG with the broker's value.
func (b *Broker) describeGroupConfigs(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	live := b.liveConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range groupConfigKeys {
		if !wanted(names, key.name) {
			continue
		}
		value := live.values[key.broker]
		var chain []configSynonymEntry
		if v, ok := overrides[key.name]; ok {
			value = v
			chain = append(chain, configSynonymEntry{Name: key.name, Value: kmsg.StringPtr(v), Source: kmsg.ConfigSourceGroupConfig})
		}
		out = append(out, describeEntry(key.name, "INT", key.doc, kmsg.StringPtr(value), chain, false, synonyms, docs))
	}
	return out
}

// validateGroupConfigs applies Kafka's GroupConfig.validate to a group's
// configs as they would be: known names, whole numbers of at least 1
// within the broker's min and max, and a session longer than the
// heartbeat interval.
func validateGroupConfigs(set map[string]string, live *Config) error {
	heartbeat, session := live.Groups.ConsumerHeartbeatInterval, live.Groups.ConsumerSessionTimeout
	for name, v := range set {
		n, err := strconv.ParseInt(v, 10, 32)
		d := time.Duration(n) * time.Millisecond
		switch {
		case findGroupConfigKey(name) == nil:
			return fmt.Errorf("Unknown group config name: %s", name)
		case err != nil || n < 1:
			return fmt.Errorf("Invalid value %s for configuration %s: must be an integer of at least 1", v, name)
		case name == "consumer.heartbeat.interval.ms":
			heartbeat = d
		default:
			session = d
		}
	}
	switch {
	case heartbeat < live.ConsumerMinHeartbeatInterval:
		return fmt.Errorf("consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
	case heartbeat > live.ConsumerMaxHeartbeatInterval:
		return fmt.Errorf("consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
	case session < live.ConsumerMinSessionTimeout:
		return fmt.Errorf("consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
	case session > live.ConsumerMaxSessionTimeout:
		return fmt.Errorf("consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms")
	case session <= heartbeat:
		return fmt.Errorf("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
	}
	return nil
}

func (b *Broker) alterGroup(r alterResource, incremental, validateOnly bool) *configError {
	if r.name == "" {
		return configErr(errInvalidRequest, "Default group resources are not allowed.")
	}
	notList := func(name string, op int8) *configError {
		if findGroupConfigKey(name) == nil {
			return configErr(errInvalidConfig, "Unknown group config name: %s", name)
		}
		return configErr(errInvalidConfig, "Can't %s to key %s because its type is not LIST.", opName(op), name)
	}
	next, cerr := nextOverrides(b.groupOverrides(r.name), r, incremental, notList, func(string) string { return "" })
	if cerr != nil {
		return cerr
	}
	if err := validateGroupConfigs(next, b.liveConfig()); err != nil {
		return configErr(errInvalidConfig, "%s", err.Error())
	}
	if validateOnly {
		return nil
	}
	if b.cluster != nil {
		return b.cluster.setConfigs(kmsg.ConfigResourceTypeGroupConfig, r.name, next)
	}
	err := b.meta.update(func(d *metaData) {
		groups := maps.Clone(d.GroupConfigs)
		if groups == nil {
			groups = map[string]map[string]string{}
		}
		if len(next) == 0 {
			delete(groups, r.name)
		} else {
			groups[r.name] = next
		}
		d.GroupConfigs = groups
	})
	if err != nil {
		b.logger.Error("persisting group configs failed", "group", r.name, "err", err)
		return configErr(errUnknownServerError, "persisting the configs failed: %v", err)
	}
	b.logger.Info("altered group configs", "group", r.name, "configs", next)
	return nil
}
