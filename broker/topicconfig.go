package broker

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/logstore"
)

// topicConfigKey is one topic-level config: its Kafka type, the broker key
// that supplies its default (its synonym in DescribeConfigs), the default
// when the broker does not know that key, and a validator.
type topicConfigKey struct {
	name     string
	typ      string
	synonym  string
	def      string
	doc      string
	validate func(v string) error
}

func longAtLeast(min int64) func(string) error { return numberAtLeast(64, "long", min) }

func intAtLeast(min int64) func(string) error { return numberAtLeast(32, "int", min) }

func numberAtLeast(bits int, typ string, min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return fmt.Errorf("not a valid %s", typ)
		}
		if n < min {
			return fmt.Errorf("value must be at least %d", min)
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
		return fmt.Errorf("must be one of %s", strings.Join(options, ", "))
	}
}

func validBool(v string) error {
	_, err := parseBool(v)
	return err
}

func validCleanupPolicy(v string) error {
	parts := splitList(v)
	if len(parts) == 0 {
		return fmt.Errorf("must be delete, compact or both")
	}
	for _, p := range parts {
		if p != "delete" && p != "compact" {
			return fmt.Errorf("%q is not delete or compact", p)
		}
	}
	return nil
}

func validRatio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("must be a number between 0 and 1")
	}
	return nil
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// topicConfigKeys are the topic configs Gregor accepts. Those the log acts
// on today are segment.*, index.interval.bytes, flush.*, max.message.bytes
// and message.timestamp.type; the retention, compaction and replication
// ones are validated, stored and described, and take effect as the log
// lifecycle and replication work lands (see README).
var topicConfigKeys = []topicConfigKey{
	{"cleanup.policy", "LIST", "log.cleanup.policy", "delete", "The retention policy to use on log segments: delete or compact.", validCleanupPolicy},
	{"compression.type", "STRING", "compression.type", "producer", "The final compression type for a given topic.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{"delete.retention.ms", "LONG", "log.cleaner.delete.retention.ms", "86400000", "The amount of time to retain delete tombstone markers for log compacted topics.", longAtLeast(0)},
	{"file.delete.delay.ms", "LONG", "log.segment.delete.delay.ms", "60000", "The time to wait before deleting a file from the filesystem.", longAtLeast(0)},
	{"flush.messages", "LONG", "log.flush.interval.messages", maxLong, "The number of messages written to a log partition before we force an fsync on the log.", longAtLeast(1)},
	{"flush.ms", "LONG", "log.flush.interval.ms", maxLong, "The time in ms after which we force an fsync of the log.", longAtLeast(0)},
	{"index.interval.bytes", "INT", "log.index.interval.bytes", "4096", "How frequently Kafka adds an index entry to its offset index.", intAtLeast(0)},
	{"max.compaction.lag.ms", "LONG", "log.cleaner.max.compaction.lag.ms", maxLong, "The maximum time a message will remain ineligible for compaction in the log.", longAtLeast(1)},
	{"max.message.bytes", "INT", "message.max.bytes", "1048588", "The largest record batch size allowed.", intAtLeast(0)},
	{"message.timestamp.after.max.ms", "LONG", "log.message.timestamp.after.max.ms", "3600000", "The maximum allowed timestamp difference ahead of the broker's timestamp.", longAtLeast(0)},
	{"message.timestamp.before.max.ms", "LONG", "log.message.timestamp.before.max.ms", maxLong, "The maximum allowed timestamp difference behind the broker's timestamp.", longAtLeast(0)},
	{"message.timestamp.type", "STRING", "log.message.timestamp.type", "CreateTime", "Whether the timestamp in the message is message create time or log append time.", oneOf("CreateTime", "LogAppendTime")},
	{"min.cleanable.dirty.ratio", "DOUBLE", "log.cleaner.min.cleanable.ratio", "0.5", "The minimum ratio of dirty log to total log for a log to be eligible for cleaning.", validRatio},
	{"min.compaction.lag.ms", "LONG", "log.cleaner.min.compaction.lag.ms", "0", "The minimum time a message will remain uncompacted in the log.", longAtLeast(0)},
	{"min.insync.replicas", "INT", "min.insync.replicas", "1", "The minimum number of replicas that must acknowledge a write with acks=all.", intAtLeast(1)},
	{"preallocate", "BOOLEAN", "log.preallocate", "false", "True if we should preallocate the file on disk when creating a new log segment.", validBool},
	{"retention.bytes", "LONG", "log.retention.bytes", "-1", "The maximum size a partition can grow to before old log segments are discarded.", longAtLeast(-1)},
	{"retention.ms", "LONG", "log.retention.ms", "604800000", "The maximum time a log is retained before old log segments are discarded.", longAtLeast(-1)},
	{"segment.bytes", "INT", "log.segment.bytes", "1073741824", "The segment file size for the log.", intAtLeast(14)},
	{"segment.index.bytes", "INT", "log.index.size.max.bytes", "10485760", "The size of the index that maps offsets to file positions.", intAtLeast(4)},
	{"segment.jitter.ms", "LONG", "log.roll.jitter.ms", "0", "The maximum random jitter subtracted from the scheduled segment roll time.", longAtLeast(0)},
	{"segment.ms", "LONG", "log.roll.ms", "604800000", "The period of time after which Kafka will force the log to roll.", longAtLeast(1)},
	{"unclean.leader.election.enable", "BOOLEAN", "unclean.leader.election.enable", "false", "Whether replicas not in the ISR may be elected leader as a last resort.", validBool},
}

func findTopicConfigKey(name string) *topicConfigKey {
	for i := range topicConfigKeys {
		if topicConfigKeys[i].name == name {
			return &topicConfigKeys[i]
		}
	}
	return nil
}

// validateTopicConfigs checks overrides given at creation; the message
// names the offending key as Kafka's INVALID_CONFIG messages do.
func validateTopicConfigs(configs map[string]string) error {
	for k, v := range configs {
		key := findTopicConfigKey(k)
		if key == nil {
			return fmt.Errorf("unknown topic config name: %s", k)
		}
		if err := key.validate(v); err != nil {
			return fmt.Errorf("invalid value %s for configuration %s: %v", v, k, err)
		}
	}
	return nil
}

// topicDefault is a topic config's value when the topic does not override
// it: the broker's value for the synonym key, else the static default. It
// also reports whether the broker value was set explicitly.
func (c *Config) topicDefault(key *topicConfigKey) (string, bool) {
	if v, ok := c.values[key.synonym]; ok {
		switch key.synonym {
		case "log.roll.ms":
			if v == "" {
				return strconv.FormatInt(c.Log.SegmentMs, 10), c.explicit["log.roll.hours"]
			}
		case "log.flush.interval.ms":
			if v == "" {
				return maxLong, false
			}
		}
		return v, c.explicit[key.synonym]
	}
	return key.def, false
}

// topicSettings are the effective settings of one topic, derived from its
// overrides and the broker's defaults; produce reads them on every request.
type topicSettings struct {
	log             logstore.Config
	maxMessageBytes int32
	logAppendTime   bool
	// the window around now that CreateTime record timestamps must fall in
	timestampBeforeMax, timestampAfterMax int64
}

func (c *Config) topicValue(overrides map[string]string, name string) string {
	if v, ok := overrides[name]; ok {
		return v
	}
	v, _ := c.topicDefault(findTopicConfigKey(name))
	return v
}

func (c *Config) settingsFor(overrides map[string]string) topicSettings {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(c.topicValue(overrides, name), 10, 64)
		return n
	}
	s := topicSettings{log: c.Log}
	s.log.SegmentBytes = num("segment.bytes")
	s.log.SegmentMs = num("segment.ms")
	s.log.SegmentIndexBytes = int(num("segment.index.bytes"))
	s.log.IndexIntervalBytes = int(num("index.interval.bytes"))
	s.log.FlushMessages = num("flush.messages")
	s.log.FlushMs = num("flush.ms")
	s.maxMessageBytes = int32(num("max.message.bytes"))
	s.logAppendTime = c.topicValue(overrides, "message.timestamp.type") == "LogAppendTime"
	s.timestampBeforeMax = num("message.timestamp.before.max.ms")
	s.timestampAfterMax = num("message.timestamp.after.max.ms")
	return s
}
