package group

import (
	"math"
	"time"
)

// Config holds the broker settings the coordinator obeys, named after
// Kafka's keys.
type Config struct {
	// NumPartitions is offsets.topic.num.partitions (default 50).
	NumPartitions int32
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min.session.timeout.ms, 6 s; group.max.session.timeout.ms,
	// 30 min); outside them JoinGroup fails with INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3 s).
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size (default unbounded).
	MaxSize int
	// NewMemberJoinTimeout removes a new member whose JoinGroup is still
	// parked after this long (Kafka's fixed 5 minutes).
	NewMemberJoinTimeout time.Duration
	// OffsetsRetention is offsets.retention.minutes (7 days), checked every
	// OffsetsRetentionCheckInterval (offsets.retention.check.interval.ms, 10 min).
	OffsetsRetention, OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// Compression is the codec of the records written
	// (offsets.topic.compression.codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
	Compression int8

	// Consumer groups (KIP-848): group.consumer.session.timeout.ms (45 s),
	// group.consumer.heartbeat.interval.ms (5 s), group.consumer.max.size.
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	ConsumerMaxSize           int
	// ConsumerAssignors is group.consumer.assignors: names of
	// AssignorNames, the first the default.
	ConsumerAssignors []string
	// GroupConfigs gives a group's own settings (Kafka's dynamic group
	// configs); nil means no group has any.
	GroupConfigs func(group string) GroupConfig
	// MigrationPolicy is group.consumer.migration.policy, one of
	// MigrationPolicies (bidirectional): which online migrations between
	// the classic and consumer protocols a group with members may make.
	MigrationPolicy string

	// Share groups (KIP-932): group.share.session.timeout.ms (45 s),
	// group.share.heartbeat.interval.ms (5 s), group.share.max.size (200).
	ShareSessionTimeout    time.Duration
	ShareHeartbeatInterval time.Duration
	ShareMaxSize           int

	// Streams groups (KIP-1071): group.streams.session.timeout.ms (45 s),
	// group.streams.heartbeat.interval.ms (5 s), group.streams.max.size,
	// group.streams.num.standby.replicas (0).
	StreamsSessionTimeout     time.Duration
	StreamsHeartbeatInterval  time.Duration
	StreamsMaxSize            int
	StreamsNumStandbyReplicas int
	// StreamsInitialRebalanceDelay is group.streams.initial.rebalance.delay.ms
	// (3 s): how long an empty group's first assignment waits for more
	// members.
	StreamsInitialRebalanceDelay time.Duration
}

// GroupConfig is what a group's dynamic configs set (Kafka's GroupConfig:
// consumer.session.timeout.ms, consumer.heartbeat.interval.ms,
// share.session.timeout.ms and share.heartbeat.interval.ms); a zero field
// leaves the broker's setting. A change applies from each member's next
// heartbeat.
type GroupConfig struct {
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	ShareSessionTimeout, ShareHeartbeatInterval       time.Duration
	StreamsSessionTimeout, StreamsHeartbeatInterval   time.Duration
	// StreamsInitialRebalanceDelay is streams.initial.rebalance.delay.ms;
	// nil leaves the broker's (0 is a value).
	StreamsInitialRebalanceDelay *time.Duration
	// StreamsNumStandbyReplicas is streams.num.standby.replicas; nil
	// leaves the broker's.
	StreamsNumStandbyReplicas *int
}

// groupConfig is a group's settings, its own over the broker's.
func (cfg *Config) groupConfig(group string) GroupConfig {
	out := GroupConfig{
		ConsumerSessionTimeout: cfg.ConsumerSessionTimeout, ConsumerHeartbeatInterval: cfg.ConsumerHeartbeatInterval,
		ShareSessionTimeout: cfg.ShareSessionTimeout, ShareHeartbeatInterval: cfg.ShareHeartbeatInterval,
		StreamsSessionTimeout: cfg.StreamsSessionTimeout, StreamsHeartbeatInterval: cfg.StreamsHeartbeatInterval,
		StreamsNumStandbyReplicas: &cfg.StreamsNumStandbyReplicas, StreamsInitialRebalanceDelay: &cfg.StreamsInitialRebalanceDelay,
	}
	if cfg.GroupConfigs == nil {
		return out
	}
	own := cfg.GroupConfigs(group)
	if own.StreamsNumStandbyReplicas != nil {
		out.StreamsNumStandbyReplicas = own.StreamsNumStandbyReplicas
	}
	if own.StreamsInitialRebalanceDelay != nil {
		out.StreamsInitialRebalanceDelay = own.StreamsInitialRebalanceDelay
	}
	for _, f := range []struct{ own, out *time.Duration }{
		{&own.ConsumerSessionTimeout, &out.ConsumerSessionTimeout},
		{&own.ConsumerHeartbeatInterval, &out.ConsumerHeartbeatInterval},
		{&own.ShareSessionTimeout, &out.ShareSessionTimeout},
		{&own.ShareHeartbeatInterval, &out.ShareHeartbeatInterval},
		{&own.StreamsSessionTimeout, &out.StreamsSessionTimeout},
		{&own.StreamsHeartbeatInterval, &out.StreamsHeartbeatInterval},
	} {
		if *f.own > 0 {
			*f.out = *f.own
		}
	}
	return out
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		NumPartitions:                 50,
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		InitialRebalanceDelay:         3 * time.Second,
		MaxSize:                       math.MaxInt32,
		NewMemberJoinTimeout:          5 * time.Minute,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		ConsumerSessionTimeout:        45 * time.Second,
		ConsumerHeartbeatInterval:     5 * time.Second,
		ConsumerMaxSize:               math.MaxInt32,
		ConsumerAssignors:             AssignorNames,
		MigrationPolicy:               MigrationBidirectional,
		ShareSessionTimeout:           45 * time.Second,
		ShareHeartbeatInterval:        5 * time.Second,
		ShareMaxSize:                  200,
		StreamsSessionTimeout:         45 * time.Second,
		StreamsHeartbeatInterval:      5 * time.Second,
		StreamsMaxSize:                math.MaxInt32,
		StreamsInitialRebalanceDelay:  3 * time.Second,
	}
}

// Clock is time as the coordinator sees it; tests drive a manual one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a manual clock, the
	// goroutine advancing it) once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
