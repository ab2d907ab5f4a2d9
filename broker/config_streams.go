package broker

import (
	"fmt"
	"math"
	"time"
)

// streamsKeys are the broker keys of streams groups (KIP-1071), with
// Kafka's names, defaults and bounds (GroupCoordinatorConfig). The bounds
// are checked together in validateStreamsGroups.
var streamsKeys = []configKey{
	{"group.streams.session.timeout.ms", "INT", "45000", "The timeout to detect client failures when using the streams group protocol.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.StreamsSessionTimeout)
	}},
	{"group.streams.min.session.timeout.ms", "INT", "45000", "The minimum allowed session timeout for registered streams consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.StreamsMinSessionTimeout)
	}},
	{"group.streams.max.session.timeout.ms", "INT", "60000", "The maximum allowed session timeout for registered streams consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.StreamsMaxSessionTimeout)
	}},
	{"group.streams.heartbeat.interval.ms", "INT", "5000", "The heartbeat interval given to the members.", func(c *Config, v string) error {
		return parseMillis(v, &c.Groups.StreamsHeartbeatInterval)
	}},
	{"group.streams.min.heartbeat.interval.ms", "INT", "5000", "The minimum heartbeat interval for registered streams consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.StreamsMinHeartbeatInterval)
	}},
	{"group.streams.max.heartbeat.interval.ms", "INT", "15000", "The maximum heartbeat interval for registered streams consumers.", func(c *Config, v string) error {
		return parseMillis(v, &c.StreamsMaxHeartbeatInterval)
	}},
	{"group.streams.max.size", "INT", "2147483647", "The maximum number of streams clients that a single streams group can accommodate.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Groups.StreamsMaxSize = int(n)
		return err
	}},
	{"group.streams.num.standby.replicas", "INT", "0", "The number of standby replicas for each task.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.StreamsNumStandbyReplicas = int(n)
		return err
	}},
	{"group.streams.initial.rebalance.delay.ms", "INT", "3000", "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Groups.StreamsInitialRebalanceDelay = time.Duration(n) * time.Millisecond
		return err
	}},
	{"group.streams.max.standby.replicas", "INT", "2", "The maximum allowed value for the group-level configuration of streams.num.standby.replicas.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.StreamsMaxStandbyReplicas = int(n)
		return err
	}},
}

// streamsSettings are the bounds of streams groups' settings.
type streamsSettings struct {
	StreamsMinSessionTimeout, StreamsMaxSessionTimeout       time.Duration
	StreamsMinHeartbeatInterval, StreamsMaxHeartbeatInterval time.Duration
	StreamsMaxStandbyReplicas                                int
}

// validateStreamsGroups applies Kafka's bounds on the streams group
// settings.
func (c *Config) validateStreamsGroups() error {
	g := c.Groups
	switch {
	case g.StreamsSessionTimeout < c.StreamsMinSessionTimeout:
		return fmt.Errorf("group.streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms")
	case g.StreamsSessionTimeout > c.StreamsMaxSessionTimeout:
		return fmt.Errorf("group.streams.session.timeout.ms must be less than or equal to group.streams.max.session.timeout.ms")
	case g.StreamsHeartbeatInterval < c.StreamsMinHeartbeatInterval:
		return fmt.Errorf("group.streams.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms")
	case g.StreamsHeartbeatInterval > c.StreamsMaxHeartbeatInterval:
		return fmt.Errorf("group.streams.heartbeat.interval.ms must be less than or equal to group.streams.max.heartbeat.interval.ms")
	case g.StreamsHeartbeatInterval >= g.StreamsSessionTimeout:
		return fmt.Errorf("group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms")
	case g.StreamsNumStandbyReplicas > c.StreamsMaxStandbyReplicas:
		return fmt.Errorf("group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas")
	}
	return nil
}

func init() {
	brokerKeys = append(brokerKeys, streamsKeys...)
}
