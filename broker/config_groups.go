package broker

import (
	"math"
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

func init() {
	brokerKeys = append(brokerKeys, groupKeys...)
}

// groupConfig is the coordinator's configuration.
func (c *Config) groupConfig() group.Config {
	g := c.Groups
	g.NewMemberJoinTimeout = group.DefaultConfig().NewMemberJoinTimeout
	return g
}
