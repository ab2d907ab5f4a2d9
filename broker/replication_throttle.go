package broker

// Replication throttles (Kafka's KIP-73 and KIP-113), what
// kafka-reassign-partitions --throttle and --replica-alter-log-dirs-throttle
// set: the dynamic broker configs leader.replication.throttled.rate and
// follower.replication.throttled.rate bound the bytes per second of the
// replicas that the topic configs leader.replication.throttled.replicas
// and follower.replication.throttled.replicas name for this broker
// ("partition:broker" pairs, or "*"). A replica in the ISR is never
// throttled, as in Kafka: only catching up is. Over its rate, the leader
// answers a throttled follower's fetch without that partition's records
// (01_fetch.go), and a follower leaves its throttled partitions out of its
// fetches (fetcher.go) until the rate is back under the bound.
// replica.alter.log.dirs.io.max.bytes.per.second bounds the copying of
// logs between this broker's log dirs (logstore's move.go). The rates are
// measured over replication.quota.window.num samples of
// replication.quota.window.size.seconds (alter.log.dirs.replication.* for
// moves).

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/quota"
)

// throttleConfig is the throttles' part of Config.
type throttleConfig struct {
	LeaderRate, FollowerRate, AlterLogDirsRate int64 // bytes per second
	Replication, AlterLogDirs                  quota.Config
}

var throttleKeys = []configKey{
	{"leader.replication.throttled.rate", "LONG", strconv.FormatInt(math.MaxInt64, 10),
		"A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in the property leader.replication.throttled.replicas (for each topic).",
		func(c *Config, v string) error { return parseRate(v, &c.Throttles.LeaderRate) }},
	{"follower.replication.throttled.rate", "LONG", strconv.FormatInt(math.MaxInt64, 10),
		"A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in the property follower.replication.throttled.replicas (for each topic).",
		func(c *Config, v string) error { return parseRate(v, &c.Throttles.FollowerRate) }},
	{"replica.alter.log.dirs.io.max.bytes.per.second", "LONG", strconv.FormatInt(math.MaxInt64, 10),
		"A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories on the same broker.",
		func(c *Config, v string) error { return parseRate(v, &c.Throttles.AlterLogDirsRate) }},
	{"replication.quota.window.num", "INT", "11", "The number of samples to retain in memory for replication quotas.",
		func(c *Config, v string) error { return parseSamples(v, &c.Throttles.Replication) }},
	{"replication.quota.window.size.seconds", "INT", "1", "The time span of each sample for replication quotas.",
		func(c *Config, v string) error { return parseWindow(v, &c.Throttles.Replication) }},
	{"alter.log.dirs.replication.quota.window.num", "INT", "11", "The number of samples to retain in memory for alter log dirs replication quotas.",
		func(c *Config, v string) error { return parseSamples(v, &c.Throttles.AlterLogDirs) }},
	{"alter.log.dirs.replication.quota.window.size.seconds", "INT", "1", "The time span of each sample for alter log dirs replication quotas.",
		func(c *Config, v string) error { return parseWindow(v, &c.Throttles.AlterLogDirs) }},
}

func init() {
	brokerKeys = append(brokerKeys, throttleKeys...)
	for _, k := range throttleKeys[:3] {
		dynamicBrokerKeys[k.name] = true
	}
}

func parseRate(v string, to *int64) error {
	n, err := parseInt(v, 0, math.MaxInt64)
	*to = n
	return err
}

func parseSamples(v string, to *quota.Config) error {
	n, err := parseInt(v, 1, math.MaxInt32)
	to.Samples = int(n)
	return err
}

func parseWindow(v string, to *quota.Config) error {
	n, err := parseInt(v, 1, math.MaxInt32)
	to.Window = time.Duration(n) * time.Second
	return err
}

// throttles are a broker's three throttles.
type throttles struct {
	leader, follower, alterLogDirs *quota.Throttle
}

func newThrottles(c throttleConfig) throttles {
	return throttles{leader: quota.NewThrottle(c.Replication), follower: quota.NewThrottle(c.Replication),
		alterLogDirs: quota.NewThrottle(c.AlterLogDirs)}
}

// applyThrottles sets the throttles' bounds from the live config.
func (b *Broker) applyThrottles() {
	c := b.liveConfig().Throttles
	b.throttles.leader.SetBound(c.LeaderRate)
	b.throttles.follower.SetBound(c.FollowerRate)
	b.throttles.alterLogDirs.SetBound(c.AlterLogDirsRate)
}

// throttledReplicas is a topic's leader.replication.throttled.replicas or
// follower.replication.throttled.replicas as it concerns this broker: the
// partitions whose pairs name it, or all of them for "*".
type throttledReplicas struct {
	all        bool
	partitions map[int32]bool
}

func parseThrottledReplicas(v string, node int32) throttledReplicas {
	parts := splitList(v)
	if len(parts) == 1 && parts[0] == "*" {
		return throttledReplicas{all: true}
	}
	var r throttledReplicas
	for _, p := range parts {
		part, broker, _ := strings.Cut(p, ":")
		pn, errP := strconv.Atoi(strings.TrimSpace(part))
		bn, errB := strconv.Atoi(strings.TrimSpace(broker))
		if errP == nil && errB == nil && int32(bn) == node {
			if r.partitions == nil {
				r.partitions = map[int32]bool{}
			}
			r.partitions[int32(pn)] = true
		}
	}
	return r
}

func (r throttledReplicas) has(partition int32) bool { return r.all || r.partitions[partition] }
