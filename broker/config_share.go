package broker

import (
	"fmt"
	"math"
	"time"

	"github.com/gregor-broker/gregor/coordinator/share"
)

// shareKeys are the broker keys of share groups (KIP-932) and of the share
// coordinator's topic, __share_group_state, with Kafka's names, defaults
// and bounds (GroupCoordinatorConfig, ShareGroupConfig,
// ShareCoordinatorConfig). The bounds are checked together in
// validateShareGroups.
var shareKeys = []configKey{
	{"group.share.session.timeout.ms", "INT", "45000", "The timeout to detect client failures when using the share group protocol.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.ShareSessionTimeout)
	}},
	{"group.share.min.session.timeout.ms", "INT", "45000", "The minimum allowed session timeout for share group members.", func(c *Config, v string) error {
		return parseMillis(v, &c.ShareMinSessionTimeout)
	}},
	{"group.share.max.session.timeout.ms", "INT", "60000", "The maximum allowed session timeout for share group members.", func(c *Config, v string) error {
		return parseMillis(v, &c.ShareMaxSessionTimeout)
	}},
	{"group.share.heartbeat.interval.ms", "INT", "5000", "The heartbeat interval given to the members of a share group.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.ShareHeartbeatInterval)
	}},
	{"group.share.min.heartbeat.interval.ms", "INT", "5000", "The minimum heartbeat interval for share group members.", func(c *Config, v string) error {
		return parseMillis(v, &c.ShareMinHeartbeatInterval)
	}},
	{"group.share.max.heartbeat.interval.ms", "INT", "15000", "The maximum heartbeat interval for share group members.", func(c *Config, v string) error {
		return parseMillis(v, &c.ShareMaxHeartbeatInterval)
	}},
	{"group.share.max.size", "SHORT", "200", "The maximum number of members that a single share group can accommodate.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, 1000)
		c.Groups.ShareMaxSize = int(n)
		return err
	}},
	{"group.share.record.lock.duration.ms", "INT", "30000", "The record acquisition lock duration in milliseconds for share groups.", func(c *Config, v string) error {
		return parseMillisIn(v, 1000, 3600000, &c.Share.LockDuration)
	}},
	{"group.share.min.record.lock.duration.ms", "INT", "15000", "The record acquisition lock minimum duration in milliseconds for share groups.", func(c *Config, v string) error {
		return parseMillisIn(v, 1000, 30000, &c.ShareMinLockDuration)
	}},
	{"group.share.max.record.lock.duration.ms", "INT", "60000", "The record acquisition lock maximum duration in milliseconds for share groups.", func(c *Config, v string) error {
		return parseMillisIn(v, 30000, 3600000, &c.ShareMaxLockDuration)
	}},
	{"group.share.delivery.count.limit", "INT", "5", "The maximum number of delivery attempts for a record delivered to a share group.", func(c *Config, v string) error {
		return parseIntIn(v, 2, 10, &c.Share.DeliveryLimit)
	}},
	{"group.share.min.delivery.count.limit", "INT", "2", "The minimum share.delivery.count.limit a share group may set.", func(c *Config, v string) error {
		return parseIntIn(v, 2, 5, &c.ShareMinDeliveryLimit)
	}},
	{"group.share.max.delivery.count.limit", "INT", "10", "The maximum share.delivery.count.limit a share group may set.", func(c *Config, v string) error {
		return parseIntIn(v, 5, 25, &c.ShareMaxDeliveryLimit)
	}},
	{"group.share.partition.max.record.locks", "INT", "2000", "Share-group record lock limit per share-partition.", func(c *Config, v string) error {
		return parseIntIn(v, 100, 10000, &c.Share.MaxInFlight)
	}},
	{"group.share.min.partition.max.record.locks", "INT", "100", "The minimum share.partition.max.record.locks a share group may set.", func(c *Config, v string) error {
		return parseIntIn(v, 100, 2000, &c.ShareMinMaxInFlight)
	}},
	{"group.share.max.partition.max.record.locks", "INT", "4000", "The maximum share.partition.max.record.locks a share group may set.", func(c *Config, v string) error {
		return parseIntIn(v, 2000, 10000, &c.ShareMaxMaxInFlight)
	}},
	{"group.share.max.share.sessions", "INT", "2000", "The maximum number of share sessions per broker.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ShareMaxSessions = int(n)
		return err
	}},
	{"share.coordinator.state.topic.num.partitions", "INT", "50", "The number of partitions for the share-group state topic (should not change after deployment).", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ShareStateNumPartitions = int32(n)
		return err
	}},
	{"share.coordinator.state.topic.replication.factor", "SHORT", "3", "Replication factor for the share-group state topic; a single node creates it with 1, a cluster with at most its live brokers.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt16)
		c.Cluster.ShareStateReplicationFactor = int16(n)
		return err
	}},
	{"errors.deadletterqueue.topic.name.prefix", "STRING", "dlq.", "The required prefix of topic names used by dead-letter queue topics for share groups. When set to \"\", there is no restriction on the names used for dead-letter queue topics.", func(c *Config, v string) error {
		c.ShareDLQTopicPrefix = v
		return nil
	}},
	{"errors.deadletterqueue.auto.create.topics.enable", "BOOLEAN", "false", "Whether automatic creation of DLQ topics is enabled (KIP-1191). When a share group has a DLQ topic configured, this setting controls whether the broker will automatically create the topic if it does not exist.", func(c *Config, v string) error {
		var err error
		c.ShareDLQAutoCreate, err = parseBool(v)
		return err
	}},
	{"share.coordinator.state.topic.min.isr", "SHORT", "2", "The min.insync.replicas of the share-group state topic.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt16)
		c.ShareStateMinISR = n
		return err
	}},
	{"share.coordinator.write.timeout.ms", "INT", "5000", "The duration in milliseconds that the share coordinator will wait for all replicas of the share-group state topic to receive a write.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ShareStateWriteTimeout = time.Duration(n) * time.Millisecond
		return err
	}},
	{"share.coordinator.state.topic.segment.bytes", "INT", "104857600", "The log segment size for the share-group state topic.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ShareStateSegmentBytes = n
		return err
	}},
}

// shareSettings are Config's share-group fields not kept by the group
// coordinator.
type shareSettings struct {
	// Share is the share-partitions' configuration on their leader: the
	// broker's lock duration (a group's share.record.lock.duration.ms
	// overrides it), delivery count limit and in-flight cap.
	Share share.Config
	// The bounds of the share-group timeouts and lock durations.
	ShareMinSessionTimeout, ShareMaxSessionTimeout       time.Duration
	ShareMinHeartbeatInterval, ShareMaxHeartbeatInterval time.Duration
	ShareMinLockDuration, ShareMaxLockDuration           time.Duration
	ShareMinDeliveryLimit, ShareMaxDeliveryLimit         int
	ShareMinMaxInFlight, ShareMaxMaxInFlight             int // bounds of share.partition.max.record.locks
	// ShareMaxSessions is group.share.max.share.sessions.
	ShareMaxSessions int
	// The share groups' dead-letter queues (KIP-1191): the prefix their
	// topics' names need, and whether a missing one is created.
	ShareDLQTopicPrefix string
	ShareDLQAutoCreate  bool
	// __share_group_state: partitions, min ISR, segment size.
	ShareStateNumPartitions int32
	ShareStateMinISR        int64
	ShareStateSegmentBytes  int64
}

// validateShareGroups applies Kafka's bounds on the share-group settings.
func (c *Config) validateShareGroups() error {
	g := c.Groups
	switch {
	case g.ShareSessionTimeout < c.ShareMinSessionTimeout:
		return fmt.Errorf("group.share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms")
	case g.ShareSessionTimeout > c.ShareMaxSessionTimeout:
		return fmt.Errorf("group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms")
	case g.ShareHeartbeatInterval < c.ShareMinHeartbeatInterval:
		return fmt.Errorf("group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms")
	case g.ShareHeartbeatInterval > c.ShareMaxHeartbeatInterval:
		return fmt.Errorf("group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms")
	case g.ShareHeartbeatInterval >= g.ShareSessionTimeout:
		return fmt.Errorf("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
	case c.Share.LockDuration < c.ShareMinLockDuration:
		return fmt.Errorf("group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms")
	case c.Share.LockDuration > c.ShareMaxLockDuration:
		return fmt.Errorf("group.share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms")
	case c.Share.DeliveryLimit < c.ShareMinDeliveryLimit || c.Share.DeliveryLimit > c.ShareMaxDeliveryLimit:
		return fmt.Errorf("group.share.delivery.count.limit must be between group.share.min.delivery.count.limit and group.share.max.delivery.count.limit")
	case c.Share.MaxInFlight < c.ShareMinMaxInFlight || c.Share.MaxInFlight > c.ShareMaxMaxInFlight:
		return fmt.Errorf("group.share.partition.max.record.locks must be between group.share.min.partition.max.record.locks and group.share.max.partition.max.record.locks")
	}
	return nil
}

// parseMillisIn reads an INT of milliseconds within Kafka's range.
func parseMillisIn(v string, lo, hi int64, d *time.Duration) error {
	n, err := parseInt(v, lo, hi)
	*d = time.Duration(n) * time.Millisecond
	return err
}

// parseIntIn reads an INT within Kafka's range.
func parseIntIn(v string, lo, hi int64, out *int) error {
	n, err := parseInt(v, lo, hi)
	*out = int(n)
	return err
}

func init() {
	brokerKeys = append(brokerKeys, shareKeys...)
}
