package broker

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
)

// Topic configs: the table of every topic config Kafka 4.4 has (but
// internal.segment.bytes, for Kafka's own tests), how each is validated,
// which broker keys supply its default (its synonyms, in
// Kafka's precedence order, e.g. log.retention.ms > log.retention.minutes >
// log.retention.hours), and how a topic's overrides and the broker's
// values become the topicSettings produce and the log act on.

// configSynonym is a broker key standing for a topic config; toMs converts
// its unit (hours, minutes) to the topic config's milliseconds.
type configSynonym struct {
	name string
	toMs int64
}

// topicConfigKey is one topic-level config: its Kafka type, the broker keys
// that supply its default (none for the remote-storage and throttling
// configs, whose default is def), and a validator returning the reason a
// value is refused.
type topicConfigKey struct {
	name     string
	typ      string
	def      string
	synonyms []configSynonym
	doc      string
	validate func(v string) error
}

func syn(names ...string) []configSynonym {
	out := make([]configSynonym, len(names))
	for i, n := range names {
		out[i] = configSynonym{name: n}
	}
	return out
}

const (
	minuteMs = 60 * 1000
	hourMs   = 60 * minuteMs
)

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// topicConfigKeys are the topic configs, in name order. What acts today:
// segment.*, index.interval.bytes, flush.*, max.message.bytes,
// max.decompressed.message.bytes (produce, cleaner, lookups by timestamp),
// message.timestamp.*, compression.* (recompression on produce),
// cleanup.policy (keyless records refused on compacted topics, log cleaner),
// retention.*, delete.retention.ms, *.compaction.lag.ms,
// min.cleanable.dirty.ratio and file.delete.delay.ms (logstore). The
// replication, preallocation, throttling and tiered-storage ones are
// validated, stored and described only.
var topicConfigKeys = []topicConfigKey{
	{"cleanup.policy", "LIST", "delete", syn("log.cleanup.policy"), "The retention policy to use on log segments: delete (discard old segments by time or size), compact (keep the latest value per key), or both.", validCleanupPolicy},
	{"compression.gzip.level", "INT", "-1", syn("compression.gzip.level"), "The compression level to use if compression.type is set to gzip.", validGzipLevel},
	{"compression.lz4.level", "INT", "9", syn("compression.lz4.level"), "The compression level to use if compression.type is set to lz4.", intBetween(1, 17)},
	{"compression.type", "STRING", "producer", syn("compression.type"), "The final compression type for a given topic: uncompressed, zstd, lz4, snappy, gzip, or producer to keep the codec the producer used.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{"compression.zstd.level", "INT", "3", syn("compression.zstd.level"), "The compression level to use if compression.type is set to zstd.", intBetween(-131072, 22)},
	{"delete.retention.ms", "LONG", "86400000", syn("log.cleaner.delete.retention.ms"), "The amount of time to retain delete tombstone markers for log compacted topics.", longAtLeast(0)},
	{"errors.deadletterqueue.group.enable", "BOOLEAN", "false", nil, "Enable this topic to be used as a dead-letter queue for share groups. When set to <code>true</code>, share groups can write undeliverable records to this topic. When set to <code>false</code> (the default), attempts to use this topic as a DLQ will be rejected.", validBool},
	{"file.delete.delay.ms", "LONG", "60000", syn("log.segment.delete.delay.ms"), "The time to wait before deleting a file from the filesystem.", longAtLeast(0)},
	{"flush.messages", "LONG", maxLong, syn("log.flush.interval.messages"), "The number of messages written to a log partition before we force an fsync on the log.", longAtLeast(1)},
	{"flush.ms", "LONG", maxLong, syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), "The time in ms after which we force an fsync of the log.", longAtLeast(0)},
	{"follower.replication.throttled.replicas", "LIST", "", nil, "A list of replicas for which log replication should be throttled on the follower side.", validThrottledReplicas},
	{"index.interval.bytes", "INT", "4096", syn("log.index.interval.bytes"), "How frequently Kafka adds an index entry to its offset index.", intAtLeast(0)},
	{"leader.replication.throttled.replicas", "LIST", "", nil, "A list of replicas for which log replication should be throttled on the leader side.", validThrottledReplicas},
	{"local.retention.bytes", "LONG", "-2", syn("log.local.retention.bytes"), "The maximum size of local log segments before they are deleted; -2 means retention.bytes (tiered storage).", longAtLeast(-2)},
	{"local.retention.ms", "LONG", "-2", syn("log.local.retention.ms"), "The time to retain local log segments before they are deleted; -2 means retention.ms (tiered storage).", longAtLeast(-2)},
	{"max.compaction.lag.ms", "LONG", maxLong, syn("log.cleaner.max.compaction.lag.ms"), "The maximum time a message will remain ineligible for compaction in the log.", longAtLeast(1)},
	{"max.decompressed.message.bytes", "INT", maxDecompressedDefault, syn("max.decompressed.message.bytes"), maxDecompressedDoc, intBetween(1, math.MaxInt32-8)},
	{"max.message.bytes", "INT", "1048588", syn("message.max.bytes"), "The largest record batch size allowed.", intAtLeast(0)},
	{"message.timestamp.after.max.ms", "LONG", "3600000", syn("log.message.timestamp.after.max.ms"), "The maximum allowed timestamp difference ahead of the broker's timestamp.", longAtLeast(0)},
	{"message.timestamp.before.max.ms", "LONG", maxLong, syn("log.message.timestamp.before.max.ms"), "The maximum allowed timestamp difference behind the broker's timestamp.", longAtLeast(0)},
	{"message.timestamp.type", "STRING", "CreateTime", syn("log.message.timestamp.type"), "Whether the timestamp in the message is message create time or log append time.", oneOf("CreateTime", "LogAppendTime")},
	{"min.cleanable.dirty.ratio", "DOUBLE", "0.5", syn("log.cleaner.min.cleanable.ratio"), "The minimum ratio of dirty log to total log for a log to be eligible for cleaning.", doubleBetween(0, 1)},
	{"min.compaction.lag.ms", "LONG", "0", syn("log.cleaner.min.compaction.lag.ms"), "The minimum time a message will remain uncompacted in the log.", longAtLeast(0)},
	{"min.insync.replicas", "INT", "1", syn("min.insync.replicas"), "The minimum number of replicas that must acknowledge a write with acks=all.", intAtLeast(1)},
	{"preallocate", "BOOLEAN", "false", syn("log.preallocate"), "True if we should preallocate the file on disk when creating a new log segment.", validBool},
	{"remote.copy.lag.bytes", "LONG", "-1", syn("log.remote.copy.lag.bytes"), remoteCopyLagBytesDoc, longAtLeast(-1)},
	{"remote.copy.lag.ms", "LONG", "0", syn("log.remote.copy.lag.ms"), remoteCopyLagMsDoc, longAtLeast(-1)},
	{"remote.log.copy.disable", "BOOLEAN", "false", nil, "Whether to stop copying log segments to remote storage (tiered storage).", validBool},
	{"remote.log.delete.on.disable", "BOOLEAN", "false", nil, "Whether remote data is deleted when tiered storage is disabled for the topic.", validBool},
	{"remote.storage.enable", "BOOLEAN", "false", nil, "Whether tiered storage is enabled for the topic.", validBool},
	{"retention.bytes", "LONG", "-1", syn("log.retention.bytes"), "The maximum size a partition can grow to before old log segments are discarded; -1 means no limit.", validLong},
	{"retention.ms", "LONG", "604800000", []configSynonym{{"log.retention.ms", 1}, {"log.retention.minutes", minuteMs}, {"log.retention.hours", hourMs}}, "The maximum time a log is retained before old log segments are discarded; -1 means no limit.", longAtLeast(-1)},
	{"segment.bytes", "INT", "1073741824", syn("log.segment.bytes"), "The segment file size for the log.", intAtLeast(14)},
	{"segment.index.bytes", "INT", "10485760", syn("log.index.size.max.bytes"), "The size of the index that maps offsets to file positions.", intAtLeast(4)},
	{"segment.jitter.ms", "LONG", "0", []configSynonym{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", hourMs}}, "The maximum random jitter subtracted from the scheduled segment roll time.", longAtLeast(0)},
	{"segment.ms", "LONG", "604800000", []configSynonym{{"log.roll.ms", 1}, {"log.roll.hours", hourMs}}, "The period of time after which Kafka will force the log to roll.", longAtLeast(1)},
	{"unclean.leader.election.enable", "BOOLEAN", "false", syn("unclean.leader.election.enable"), "Whether replicas not in the ISR may be elected leader as a last resort.", validBool},
}

// maxDecompressedDefault is Kafka's default max.decompressed.message.bytes,
// the largest array a JVM allocates: no limit of its own.
var maxDecompressedDefault = strconv.Itoa(math.MaxInt32 - 8)

const (
	maxDecompressedDoc    = "The maximum decompressed size, in bytes, of a single record the broker will accept where it decompresses records: produce validation of compressed batches (INVALID_RECORD), log compaction and offset lookups by timestamp or max timestamp. Records of uncompressed batches are bounded by max.message.bytes alone."
	remoteCopyLagMsDoc    = "How long after its latest record a non-active segment becomes eligible for upload to remote storage (tiered storage); 0: at once, -1: from local.retention.ms."
	remoteCopyLagBytesDoc = "How many bytes of newer local data make a non-active segment eligible for upload to remote storage (tiered storage); 0: at once, -1: from local.retention.bytes."
)

func findTopicConfigKey(name string) *topicConfigKey {
	for i := range topicConfigKeys {
		if topicConfigKeys[i].name == name {
			return &topicConfigKeys[i]
		}
	}
	return nil
}

// validateTopicConfigs checks a topic's complete set of overrides (at
// creation or after an alteration), with Kafka's INVALID_CONFIG messages:
// unknown names, bad values, and the checks across keys that LogConfig
// makes. live supplies the broker defaults for the cross-key checks.
func validateTopicConfigs(configs map[string]string, live *Config) error {
	names := make([]string, 0, len(configs))
	for k := range configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if findTopicConfigKey(k) == nil {
			return fmt.Errorf("Unknown topic config name: %s", k)
		}
	}
	for _, k := range names {
		if err := findTopicConfigKey(k).validate(strings.TrimSpace(configs[k])); err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: %v", configs[k], k, err)
		}
	}
	value := func(name string) string { return strings.TrimSpace(live.topicValue(configs, name)) }
	minLag, _ := strconv.ParseInt(value("min.compaction.lag.ms"), 10, 64)
	maxLag, _ := strconv.ParseInt(value("max.compaction.lag.ms"), 10, 64)
	if minLag > maxLag {
		return fmt.Errorf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	if value("remote.storage.enable") == "true" {
		return fmt.Errorf("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return nil
}

// topicDefault is a topic config's value when the topic does not override
// it: the first of its broker synonyms that has a value (the broker's
// effective values, dynamic ones included), converted to the topic
// config's unit (a negative retention, in any unit, is -1: unlimited, as
// Kafka's logRetentionTimeMillis has it); the static default for configs
// without synonyms.
func (c *Config) topicDefault(key *topicConfigKey) string {
	for _, s := range key.synonyms {
		v := c.values[s.name]
		if v == "" {
			continue
		}
		if s.toMs > 1 || key.name == "retention.ms" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch {
			case n < 0:
				return "-1" // Kafka: a negative retention means unlimited
			case n > math.MaxInt64/s.toMs:
				return maxLong
			}
			return strconv.FormatInt(n*s.toMs, 10)
		}
		return v
	}
	return key.def
}

func (c *Config) topicValue(overrides map[string]string, name string) string {
	if v, ok := overrides[name]; ok {
		return strings.TrimSpace(v)
	}
	return c.topicDefault(findTopicConfigKey(name))
}

// topicSettings are the effective settings of one topic, derived from its
// overrides and the broker's defaults; produce reads them on every request.
type topicSettings struct {
	log             logstore.Config
	maxMessageBytes int32
	logAppendTime   bool
	// the window around now that CreateTime record timestamps must fall in
	timestampBeforeMax, timestampAfterMax int64
	// compact: cleanup.policy includes compact, so keyless records are refused
	compact bool
	// delete: cleanup.policy includes delete, so DeleteRecords may move
	// the log start (Kafka's Partition.deleteRecordsOnLeader)
	delete bool
	// codec is the codec batches are stored with (compression.type), or -1
	// for producer: as sent; level is that codec's compression.*.level.
	codec int8
	level int
	// minInsync is min.insync.replicas.
	minInsync int
	// the replicas of this broker that replication throttles
	// (replication_throttle.go), leader side and follower side
	leaderThrottled, followerThrottled throttledReplicas
}

// codecs maps compression.type values to batch codec numbers.
var codecs = map[string]int8{
	"producer": -1, "uncompressed": protocol.CompressionNone, "gzip": protocol.CompressionGzip,
	"snappy": protocol.CompressionSnappy, "lz4": protocol.CompressionLz4, "zstd": protocol.CompressionZstd,
}

func (c *Config) settingsFor(overrides map[string]string) topicSettings {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(c.topicValue(overrides, name), 10, 64)
		return n
	}
	s := topicSettings{log: c.Log}
	s.log.SegmentBytes = num("segment.bytes")
	s.log.SegmentMs = num("segment.ms")
	s.log.SegmentJitterMs = num("segment.jitter.ms")
	s.log.SegmentIndexBytes = int(num("segment.index.bytes"))
	s.log.IndexIntervalBytes = int(num("index.interval.bytes"))
	s.log.FlushMessages = num("flush.messages")
	s.log.FlushMs = num("flush.ms")
	s.maxMessageBytes = int32(num("max.message.bytes"))
	s.log.MaxDecompressedRecordBytes = int(num("max.decompressed.message.bytes"))
	s.logAppendTime = c.topicValue(overrides, "message.timestamp.type") == "LogAppendTime"
	s.timestampBeforeMax = num("message.timestamp.before.max.ms")
	s.timestampAfterMax = num("message.timestamp.after.max.ms")
	for _, p := range splitList(c.topicValue(overrides, "cleanup.policy")) {
		s.compact = s.compact || p == "compact"
		s.delete = s.delete || p == "delete"
	}
	s.minInsync = int(num("min.insync.replicas"))
	s.leaderThrottled = parseThrottledReplicas(c.topicValue(overrides, "leader.replication.throttled.replicas"), c.NodeID)
	s.followerThrottled = parseThrottledReplicas(c.topicValue(overrides, "follower.replication.throttled.replicas"), c.NodeID)
	s.codec = codecs[c.topicValue(overrides, "compression.type")]
	switch s.codec {
	case protocol.CompressionGzip:
		s.level = int(num("compression.gzip.level"))
	case protocol.CompressionLz4:
		s.level = int(num("compression.lz4.level"))
	case protocol.CompressionZstd:
		s.level = int(num("compression.zstd.level"))
	}
	setLifecycle(&s.log, func(name string) string { return c.topicValue(overrides, name) })
	return s
}

// --- validators: the reasons are Kafka's ConfigDef wording ---

func parseLong(v string, bits int, typ string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("Not a number of type %s", typ)
	}
	return n, nil
}

func numberBetween(bits int, typ string, min, max int64) func(string) error {
	return func(v string) error {
		n, err := parseLong(v, bits, typ)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("Value must be at least %d", min)
		}
		if n > max {
			return fmt.Errorf("Value must be no more than %d", max)
		}
		return nil
	}
}

func longAtLeast(min int64) func(string) error {
	return numberBetween(64, "LONG", min, math.MaxInt64)
}

func intAtLeast(min int64) func(string) error {
	return numberBetween(32, "INT", min, math.MaxInt32)
}

func intBetween(min, max int64) func(string) error { return numberBetween(32, "INT", min, max) }

var validLong = longAtLeast(math.MinInt64)

// positiveDouble checks a DOUBLE that must be above 0 (a rate: 0 would
// stall what it throttles).
func positiveDouble(v string) error {
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil || f <= 0 {
		return fmt.Errorf("Value must be a number of type DOUBLE above 0")
	}
	return nil
}

func doubleBetween(min, max float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("Not a number of type DOUBLE")
		}
		if f < min {
			return fmt.Errorf("Value must be at least %v", min)
		}
		if f > max {
			return fmt.Errorf("Value must be no more than %v", max)
		}
		return nil
	}
}

func oneOf(options ...string) func(string) error {
	return func(v string) error {
		for _, o := range options {
			if v == o {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(options, ", "))
	}
}

func validBool(v string) error {
	if _, err := parseBool(v); err != nil {
		return fmt.Errorf("Expected value to be either true or false")
	}
	return nil
}

func validGzipLevel(v string) error {
	n, err := parseLong(v, 32, "INT")
	if err != nil {
		return err
	}
	if n > 9 || (n < 1 && n != -1) {
		return fmt.Errorf("Value must be between 1 and 9 or equal to -1")
	}
	return nil
}

// validCleanupPolicy takes Kafka's ValidList.in(compact, delete), which
// accepts the empty list: neither policy, so nothing is deleted but
// what DeleteRecords moves the log start past.
func validCleanupPolicy(v string) error {
	for _, p := range splitList(v) {
		if p != "delete" && p != "compact" {
			return fmt.Errorf("String must be one of: compact, delete")
		}
	}
	return nil
}

// validThrottledReplicas accepts Kafka's forms: empty, "*", or
// partition:broker pairs.
func validThrottledReplicas(v string) error {
	parts := splitList(v)
	if len(parts) == 1 && parts[0] == "*" {
		return nil
	}
	for _, p := range parts {
		a, b, ok := strings.Cut(p, ":")
		_, errA := strconv.Atoi(strings.TrimSpace(a))
		_, errB := strconv.Atoi(strings.TrimSpace(b))
		if !ok || errA != nil || errB != nil {
			return fmt.Errorf("Value must be a list of partitionId:brokerId pairs, or the single wildcard '*'")
		}
	}
	return nil
}
