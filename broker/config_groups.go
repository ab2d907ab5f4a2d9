package broker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
)

// groupKeys are the broker keys of the group coordinator and its internal
// topic, __consumer_offsets.
var groupKeys = []configKey{
	{"offsets.topic.num.partitions", "INT", "50", "The number of partitions for the offset commit topic (should not change after deployment).", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Groups.NumPartitions = int32(n)
		return err
	}},
	{"offsets.topic.replication.factor", "SHORT", "3", "The replication factor for the offsets topic; a single node creates it with 1, a cluster with at most its live brokers.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt16)
		c.Cluster.OffsetsReplicationFactor = int16(n)
		return err
	}},
	{"offsets.topic.segment.bytes", "INT", "104857600", "The offsets topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.OffsetsSegmentBytes = n
		return err
	}},
	{"offsets.topic.compression.codec", "INT", "0", "Compression codec for the offsets topic: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, 4)
		c.Groups.Compression = int8(n)
		return err
	}},
	{"offsets.retention.minutes", "INT", "10080", "For subscribed consumers, committed offset of a specific partition will be expired and discarded after this period of time since the group became empty (or the commit, for standalone consumers).", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Groups.OffsetsRetention = time.Duration(n) * time.Minute
		return err
	}},
	{"offsets.retention.check.interval.ms", "LONG", "600000", "Frequency at which to check for stale offsets.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Groups.OffsetsRetentionCheckInterval = time.Duration(n) * time.Millisecond
		return err
	}},
	{"offsets.commit.timeout.ms", "INT", "5000", "Offset commit will be delayed until all replicas for the offsets topic receive the commit or this timeout is reached. This is similar to the producer request timeout. This is applied to all the writes made by the coordinator.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.OffsetsCommitTimeout = time.Duration(n) * time.Millisecond
		return err
	}},
	{"offset.metadata.max.bytes", "INT", "4096", "The maximum size for a metadata entry associated with an offset commit.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.OffsetMetadataMaxBytes = int(n)
		return err
	}},
	{"group.min.session.timeout.ms", "INT", "6000", "The minimum allowed session timeout for registered consumers.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.MinSessionTimeout = time.Duration(n) * time.Millisecond
		return err
	}},
	{"group.max.session.timeout.ms", "INT", "1800000", "The maximum allowed session timeout for registered consumers.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.MaxSessionTimeout = time.Duration(n) * time.Millisecond
		return err
	}},
	{"group.initial.rebalance.delay.ms", "INT", "3000", "The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.InitialRebalanceDelay = time.Duration(n) * time.Millisecond
		return err
	}},
	{"group.max.size", "INT", "2147483647", "The maximum number of consumers that a single consumer group can accommodate.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Groups.MaxSize = int(n)
		return err
	}},
}

// consumerGroupKeys are the keys of consumer groups (KIP-848). The bounds
// are checked together in validateConsumerGroups, as Kafka's
// GroupCoordinatorConfig does.
var consumerGroupKeys = []configKey{
	{"group.coordinator.rebalance.protocols", "LIST", "classic,consumer,streams", "The list of enabled rebalance protocols: classic, consumer (KIP-848's ConsumerGroupHeartbeat) and streams (KIP-1071's StreamsGroupHeartbeat); the APIs of one not listed answer UNSUPPORTED_VERSION; share is accepted as Kafka 4.0 took it, share groups following the share.version feature.", func(c *Config, v string) error {
		c.ConsumerProtocol, c.StreamsProtocol = false, false
		for _, p := range splitList(v) {
			switch p {
			case "classic":
			case "consumer":
				c.ConsumerProtocol = true
			case "streams":
				c.StreamsProtocol = true
			case "share":
				// Kafka 4.0's switch for share groups, which the
				// share.version feature has replaced.
			default:
				return fmt.Errorf("unknown rebalance protocol %q (classic, consumer, share, streams)", p)
			}
		}
		return nil
	}},
	{"group.consumer.session.timeout.ms", "INT", "45000", "The timeout to detect client failures when using the consumer group protocol.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.ConsumerSessionTimeout)
	}},
	{"group.consumer.min.session.timeout.ms", "INT", "45000", "The minimum allowed session timeout for registered consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.ConsumerMinSessionTimeout)
	}},
	{"group.consumer.max.session.timeout.ms", "INT", "60000", "The maximum allowed session timeout for registered consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.ConsumerMaxSessionTimeout)
	}},
	{"group.consumer.heartbeat.interval.ms", "INT", "5000", "The heartbeat interval given to the members of a consumer group.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.ConsumerHeartbeatInterval)
	}},
	{"group.consumer.min.heartbeat.interval.ms", "INT", "5000", "The minimum heartbeat interval for registered consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.ConsumerMinHeartbeatInterval)
	}},
	{"group.consumer.max.heartbeat.interval.ms", "INT", "15000", "The maximum heartbeat interval for registered consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.ConsumerMaxHeartbeatInterval)
	}},
	{"group.consumer.assignors", "LIST", "uniform,range", "The server side assignors, by name or by Kafka's class name: uniform and range. The first is the default for members that ask for none.", func(c *Config, v string) error {
		c.Groups.ConsumerAssignors = nil
		for _, name := range splitList(v) {
			short, ok := kafkaAssignors[name]
			if !ok {
				return fmt.Errorf("unknown server assignor %q: there are uniform and range (or Kafka's class names of them)", name)
			}
			if !slices.Contains(c.Groups.ConsumerAssignors, short) {
				c.Groups.ConsumerAssignors = append(c.Groups.ConsumerAssignors, short)
			}
		}
		if len(c.Groups.ConsumerAssignors) == 0 {
			return fmt.Errorf("at least one server assignor is needed")
		}
		return nil
	}},
	{"group.consumer.max.size", "INT", "2147483647", "The maximum number of consumers that a single consumer group can accommodate.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Groups.ConsumerMaxSize = int(n)
		return err
	}},
	{"group.consumer.migration.policy", "STRING", "bidirectional", "The config that enables converting the non-empty classic group using the consumer embedded protocol to the non-empty consumer group using the consumer group protocol and vice versa; conversions of empty groups in both directions are always enabled regardless of this policy. bidirectional: both upgrade from classic group to consumer group and downgrade from consumer group to classic group are enabled, upgrade: only upgrade is enabled, downgrade: only downgrade is enabled, disabled: neither upgrade nor downgrade is enabled.", func(c *Config, v string) error {
		policy := strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(group.MigrationPolicies, policy) {
			return fmt.Errorf("must be one of %s", strings.Join(group.MigrationPolicies, ", "))
		}
		c.Groups.MigrationPolicy = policy
		return nil
	}},
}

// kafkaAssignors maps the names group.consumer.assignors accepts, short
// or Kafka's class names, to the coordinator's.
var kafkaAssignors = map[string]string{
	"uniform": "uniform",
	"range":   "range",
	"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
	"org.apache.kafka.coordinator.group.assignor.RangeAssignor":   "range",
}

// parseMillis reads a positive INT of milliseconds.
func parseMillis(v string, d *time.Duration) error {
	n, err := parseInt(v, 1, math.MaxInt32)
	*d = time.Duration(n) * time.Millisecond
	return err
}

// validateConsumerGroups applies Kafka's bounds on the consumer group
// timeouts.
func (c *Config) validateConsumerGroups() error {
	g := c.Groups
	switch {
	case g.ConsumerSessionTimeout < c.ConsumerMinSessionTimeout:
		return fmt.Errorf("group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
	case g.ConsumerSessionTimeout > c.ConsumerMaxSessionTimeout:
		return fmt.Errorf("group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms")
	case g.ConsumerHeartbeatInterval < c.ConsumerMinHeartbeatInterval:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
	case g.ConsumerHeartbeatInterval > c.ConsumerMaxHeartbeatInterval:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
	case g.ConsumerHeartbeatInterval >= g.ConsumerSessionTimeout:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
	}
	return nil
}

func init() {
	brokerKeys = append(brokerKeys, groupKeys...)
	brokerKeys = append(brokerKeys, consumerGroupKeys...)
}

// groupConfig is the coordinator's configuration.
func (c *Config) groupConfig() group.Config {
	g := c.Groups
	g.NewMemberJoinTimeout = group.DefaultConfig().NewMemberJoinTimeout
	return g
}
