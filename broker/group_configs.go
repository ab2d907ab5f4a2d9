package broker

// Group configs (KIP-848, KIP-932): a group's own settings, set with
// IncrementalAlterConfigs or AlterConfigs on resource type GROUP
// (kafka-configs --entity-type groups) and described with DescribeConfigs,
// as Kafka's GroupConfig: a consumer group's session timeout and
// heartbeat interval, and a share group's, its record lock duration,
// where it starts reading a partition (share.auto.offset.reset) and
// whether it reads committed records only (share.isolation.level), and a
// streams group's session timeout, heartbeat interval and standby
// replicas. A key not set takes the broker's value. They are kept like
// topic configs (the metadata file, or the controller's metadata in a
// cluster), whether the group exists or not, and are read on every
// heartbeat and fetch.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// namedConfigKey is a config of a named resource (a group, a client
// metrics subscription): its type, and for a group the broker key it
// defaults to, or its own default when it has none.
type namedConfigKey struct {
	name, typ, broker, def, doc string
}

var groupConfigKeys = []namedConfigKey{
	{"consumer.heartbeat.interval.ms", "INT", "group.consumer.heartbeat.interval.ms", "", "The heartbeat interval given to the members."},
	{"consumer.session.timeout.ms", "INT", "group.consumer.session.timeout.ms", "", "The timeout to detect client failures when using the consumer group protocol."},
	{"errors.deadletterqueue.copy.record.enable", "BOOLEAN", "", "false", "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers."},
	{"errors.deadletterqueue.topic.name", "STRING", "", "", "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic."},
	{"share.auto.offset.reset", "STRING", "", "latest", "The strategy to initialize the share-partition start offset: latest, earliest, or by_duration:<ISO-8601 duration>."},
	{"share.delivery.count.limit", "INT", "group.share.delivery.count.limit", "", "The maximum number of delivery attempts for a record delivered to a share group."},
	{"share.heartbeat.interval.ms", "INT", "group.share.heartbeat.interval.ms", "", "The heartbeat interval given to the members."},
	{"share.isolation.level", "STRING", "", "read_uncommitted", "Controls how to read records written transactionally: read_committed or read_uncommitted."},
	{"share.partition.max.record.locks", "INT", "group.share.partition.max.record.locks", "", "Share-group record lock limit per share-partition."},
	{"share.record.lock.duration.ms", "INT", "group.share.record.lock.duration.ms", "", "The record acquisition lock duration in milliseconds."},
	{"share.session.timeout.ms", "INT", "group.share.session.timeout.ms", "", "The timeout to detect client failures when using the share group protocol."},
	{"streams.heartbeat.interval.ms", "INT", "group.streams.heartbeat.interval.ms", "", "The heartbeat interval given to the members."},
	{"streams.initial.rebalance.delay.ms", "INT", "group.streams.initial.rebalance.delay.ms", "", "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance."},
	{"streams.num.standby.replicas", "INT", "group.streams.num.standby.replicas", "", "The number of standby replicas for each task."},
	{"streams.session.timeout.ms", "INT", "group.streams.session.timeout.ms", "", "The timeout to detect client failures when using the streams group protocol."},
}

func findGroupConfigKey(name string) *namedConfigKey {
	return findConfigKey(groupConfigKeys, name)
}

func findConfigKey(keys []namedConfigKey, name string) *namedConfigKey {
	for i := range keys {
		if keys[i].name == name {
			return &keys[i]
		}
	}
	return nil
}

// groupOverrides are the configs set on a group.
func (b *Broker) groupOverrides(name string) map[string]string {
	return b.namedOverrides(controller.ResourceGroup, groupConfigsField, name)
}

// namedOverrides are the configs of a named resource kept by
// storeNamedConfigs: from the controller's image in a cluster, else from
// the metadata file's map that field picks.
func (b *Broker) namedOverrides(typ int8, field namedConfigsField, name string) map[string]string {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.Configs[controller.ConfigResource{Type: typ, Name: name}]
		}
		return nil
	}
	return b.meta.namedConfigs(field, name)
}

// groupMillis reads a group config of milliseconds (validated when set);
// zero when not set.
func groupMillis(set map[string]string, key string) time.Duration {
	n, _ := strconv.Atoi(strings.TrimSpace(set[key]))
	return time.Duration(n) * time.Millisecond
}

// groupConfigFor is what the coordinator asks of a group's configs.
func (b *Broker) groupConfigFor(name string) group.GroupConfig {
	set := b.groupOverrides(name)
	out := group.GroupConfig{
		ConsumerSessionTimeout:    groupMillis(set, "consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: groupMillis(set, "consumer.heartbeat.interval.ms"),
		ShareSessionTimeout:       groupMillis(set, "share.session.timeout.ms"),
		ShareHeartbeatInterval:    groupMillis(set, "share.heartbeat.interval.ms"),
		StreamsSessionTimeout:     groupMillis(set, "streams.session.timeout.ms"),
		StreamsHeartbeatInterval:  groupMillis(set, "streams.heartbeat.interval.ms"),
		StreamsNumStandbyReplicas: groupInt(set, "streams.num.standby.replicas"),
	}
	if n := groupInt(set, "streams.initial.rebalance.delay.ms"); n != nil {
		d := time.Duration(*n) * time.Millisecond
		out.StreamsInitialRebalanceDelay = &d
	}
	return out
}

// groupInt reads a group config that may be 0 (validated when set); nil
// when not set.
func groupInt(set map[string]string, key string) *int {
	v, ok := set[key]
	if !ok {
		return nil
	}
	n, _ := strconv.Atoi(strings.TrimSpace(v))
	return &n
}

// shareGroupSettings are a share group's settings that its partitions'
// leaders apply.
type shareGroupSettings struct {
	autoOffsetReset string // latest, earliest or by_duration:...
	readCommitted   bool
	dlqTopic        string        // errors.deadletterqueue.topic.name; "" for none
	dlqCopyRecord   bool          // errors.deadletterqueue.copy.record.enable
	lockDuration    time.Duration // 0: the broker's
	deliveryLimit   int           // 0: the broker's
	maxInFlight     int           // 0: the broker's
}

func (b *Broker) shareGroupSettings(name string) shareGroupSettings {
	set := b.groupOverrides(name)
	s := shareGroupSettings{autoOffsetReset: "latest", lockDuration: groupMillis(set, "share.record.lock.duration.ms")}
	s.deliveryLimit, _ = strconv.Atoi(strings.TrimSpace(set["share.delivery.count.limit"]))
	s.maxInFlight, _ = strconv.Atoi(strings.TrimSpace(set["share.partition.max.record.locks"]))
	if v, ok := set["share.auto.offset.reset"]; ok {
		s.autoOffsetReset = v
	}
	s.readCommitted = set["share.isolation.level"] == "read_committed"
	s.dlqTopic = set["errors.deadletterqueue.topic.name"]
	s.dlqCopyRecord, _ = parseBool(set["errors.deadletterqueue.copy.record.enable"])
	return s
}

// shareConfigFor is the share-partition configuration of a group: the
// broker's, with the group's lock duration, delivery count limit and
// record locks where it set them, and whether it has a dead-letter queue.
func (b *Broker) shareConfigFor(name string) share.Config {
	cfg := b.liveConfig().Share
	own := b.shareGroupSettings(name)
	if own.lockDuration > 0 {
		cfg.LockDuration = own.lockDuration
	}
	if own.deliveryLimit > 0 {
		cfg.DeliveryLimit = own.deliveryLimit
	}
	if own.maxInFlight > 0 {
		cfg.MaxInFlight = own.maxInFlight
	}
	cfg.DLQ = b.shareDLQEnabled(own)
	return cfg
}

// describeGroupConfigs lists a group's configs as Kafka's ConfigHelper
// does: GROUP_CONFIG where set, then as synonyms the group.<name> broker
// key at each level it has a value (whose first is the source of a
// config the group does not set), or the key's own default,
// DEFAULT_CONFIG, for a config without a broker key.
func (b *Broker) describeGroupConfigs(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	live := b.liveConfig()
	layers := b.brokerLayers()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, key := range groupConfigKeys {
		if !wanted(names, key.name) {
			continue
		}
		value := key.def
		if key.broker != "" {
			value = live.values[key.broker]
		}
		var chain []configSynonymEntry
		if v, ok := overrides[key.name]; ok {
			value = v
			chain = append(chain, configSynonymEntry{Name: key.name, Value: kmsg.StringPtr(v), Source: kmsg.ConfigSourceGroupConfig})
		}
		if key.broker != "" {
			chain = append(chain, synonymChain(layers, key.broker)...)
		} else {
			chain = append(chain, configSynonymEntry{Name: key.name, Value: kmsg.StringPtr(key.def), Source: kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, describeEntry(key.name, key.typ, key.doc, kmsg.StringPtr(value), chain, false, synonyms, docs))
	}
	return out
}

// groupBound is a numeric group config's value when not set, and its
// bounds, from the broker's keys.
type groupBound struct {
	def, min, max    int64
	minName, maxName string
}

func groupBounds(live *Config) map[string]groupBound {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	g := live.Groups
	return map[string]groupBound{
		"consumer.heartbeat.interval.ms":   {ms(g.ConsumerHeartbeatInterval), ms(live.ConsumerMinHeartbeatInterval), ms(live.ConsumerMaxHeartbeatInterval), "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
		"consumer.session.timeout.ms":      {ms(g.ConsumerSessionTimeout), ms(live.ConsumerMinSessionTimeout), ms(live.ConsumerMaxSessionTimeout), "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
		"share.heartbeat.interval.ms":      {ms(g.ShareHeartbeatInterval), ms(live.ShareMinHeartbeatInterval), ms(live.ShareMaxHeartbeatInterval), "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
		"share.session.timeout.ms":         {ms(g.ShareSessionTimeout), ms(live.ShareMinSessionTimeout), ms(live.ShareMaxSessionTimeout), "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
		"share.record.lock.duration.ms":    {ms(live.Share.LockDuration), ms(live.ShareMinLockDuration), ms(live.ShareMaxLockDuration), "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
		"share.delivery.count.limit":       {int64(live.Share.DeliveryLimit), int64(live.ShareMinDeliveryLimit), int64(live.ShareMaxDeliveryLimit), "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
		"share.partition.max.record.locks": {int64(live.Share.MaxInFlight), int64(live.ShareMinMaxInFlight), int64(live.ShareMaxMaxInFlight), "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
		"streams.heartbeat.interval.ms":    {ms(g.StreamsHeartbeatInterval), ms(live.StreamsMinHeartbeatInterval), ms(live.StreamsMaxHeartbeatInterval), "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
		"streams.session.timeout.ms":       {ms(g.StreamsSessionTimeout), ms(live.StreamsMinSessionTimeout), ms(live.StreamsMaxSessionTimeout), "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
		"streams.num.standby.replicas":     {int64(g.StreamsNumStandbyReplicas), 0, int64(live.StreamsMaxStandbyReplicas), "0", "group.streams.max.standby.replicas"},
	}
}

// validateGroupConfigs applies Kafka's GroupConfig.validate to a group's
// configs as they would be: known names (all checked first); whole
// numbers of at least their key's least (ConfigDef's messages) within the
// broker's min and max; sessions longer than heartbeat
// intervals; share.auto.offset.reset and share.isolation.level among
// their values; a dead-letter queue topic not named like an internal one.
func validateGroupConfigs(set map[string]string, live *Config) error {
	bounds := groupBounds(live)
	values := map[string]int64{}
	for name, b := range bounds {
		values[name] = b.def
	}
	names := slices.Sorted(maps.Keys(set))
	for _, name := range names {
		if findGroupConfigKey(name) == nil {
			return fmt.Errorf("Unknown group config name: %s", name)
		}
	}
	for _, name := range names {
		v := set[name]
		switch {
		case name == "share.auto.offset.reset":
			if err := validateShareAutoOffsetReset(v); err != nil {
				return err
			}
		case name == "share.isolation.level":
			if v != "read_committed" && v != "read_uncommitted" {
				return fmt.Errorf("Invalid value %s for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted", v)
			}
		case name == "errors.deadletterqueue.topic.name":
			if strings.HasPrefix(v, "__") {
				return fmt.Errorf("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
			}
		case name == "errors.deadletterqueue.copy.record.enable":
			if _, err := parseBool(v); err != nil {
				return fmt.Errorf("Invalid value %s for configuration errors.deadletterqueue.copy.record.enable: Expected value to be either true or false", v)
			}
		default:
			if err := intAtLeast(groupConfigLeast(name))(strings.TrimSpace(v)); err != nil {
				return fmt.Errorf("Invalid value %s for configuration %s: %v", v, name, err)
			}
			values[name], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(bounds)) {
		n, bound := values[name], bounds[name]
		if n < bound.min {
			return fmt.Errorf("%s must be greater than or equal to %s", name, bound.minName)
		}
		if n > bound.max {
			return fmt.Errorf("%s must be less than or equal to %s", name, bound.maxName)
		}
	}
	for _, kind := range []string{"consumer", "share", "streams"} {
		if values[kind+".session.timeout.ms"] <= values[kind+".heartbeat.interval.ms"] {
			return fmt.Errorf("%s.session.timeout.ms must be greater than %s.heartbeat.interval.ms", kind, kind)
		}
	}
	return nil
}

// groupConfigLeast is the least value of a group's INT config in Kafka's
// GroupConfig, whatever the broker's bounds.
func groupConfigLeast(name string) int64 {
	switch name {
	case "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms":
		return 0
	case "share.delivery.count.limit":
		return 2
	case "share.partition.max.record.locks":
		return 100
	case "share.record.lock.duration.ms":
		return 1000
	}
	return 1
}

// validateShareAutoOffsetReset accepts Kafka's
// ShareGroupAutoOffsetResetStrategy: latest, earliest, or by_duration: and
// a non-negative ISO-8601 duration.
func validateShareAutoOffsetReset(v string) error {
	switch lower := strings.ToLower(v); {
	case lower == "latest" || lower == "earliest":
		return nil
	case strings.HasPrefix(lower, "by_duration:"):
		if d, err := parseISODuration(v[len("by_duration:"):]); err != nil || d < 0 {
			return fmt.Errorf("Invalid value %s for configuration share.auto.offset.reset: the duration must be a non-negative ISO-8601 duration such as PT1H", v)
		}
		return nil
	}
	return fmt.Errorf("Invalid value %s for configuration share.auto.offset.reset: must be latest, earliest or by_duration:<ISO-8601 duration>", v)
}

func (b *Broker) alterGroup(r alterResource, incremental, validateOnly bool) *configError {
	if r.name == "" {
		return configErr(errInvalidRequest, "Default group resources are not allowed.")
	}
	notList := func(name string, op int8) *configError { // no group config is a LIST, nor an unknown one
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
	return b.storeNamedConfigs(r, incremental, next, groupConfigsField)
}
