package broker

import (
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/internal/configprovider"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/quota"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
)

// Config is the broker's configuration, read from Kafka's server.properties
// keys. Zero values are not meaningful: start from DefaultConfig or
// ParseConfig.
type Config struct {
	NodeID                  int32
	Listeners               []Listener
	AdvertisedListeners     []Listener
	ControllerListenerNames []string
	LogDirs                 []string
	// MetadataLogDir (metadata.log.dir) holds what kafka-storage format
	// wrote, the controller's raft log and the node's metadata; empty:
	// the first of LogDirs (metadataDir).
	MetadataLogDir string
	// CordonedLogDirs are the log dirs that take no new partition
	// (KIP-1066), "*" for all; in effect from metadata.version 4.3-IV0.
	CordonedLogDirs []string
	NumPartitions   int32
	// MaxResponsePartitions (max.request.partition.size.limit) caps the
	// partitions of one DescribeTopicPartitions answer.
	MaxResponsePartitions    int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	DeleteTopicEnable        bool // delete.topic.enable: false refuses every DeleteTopics
	MessageMaxBytes          int32
	FetchMaxBytes            int32 // fetch.max.bytes: the most a fetch answer carries, whatever the request asks
	SocketRequestMaxBytes    int32
	QueuedMaxRequestBytes    int64  // request bytes read but not handled (request_memory.go); <= 0: no limit
	SocketSendBufferBytes    int    // SO_SNDBUF of accepted connections; -1: the kernel's
	SocketReceiveBufferBytes int    // SO_RCVBUF of listeners (connections inherit it); -1: the kernel's
	SocketListenBacklog      int    // socket.listen.backlog.size: connections the kernel queues for accept
	MessageTimestampType     string // CreateTime or LogAppendTime
	FetchSessionCacheSlots   int
	RecoveryThreads          int // num.recovery.threads.per.data.dir
	MoveThreads              int // num.replica.alter.log.dirs.threads; 0: one per log dir
	Log                      logstore.Config

	// Connection limits (connlimits.go).
	MaxConnections               int
	MaxConnectionCreationRate    int // new connections a second
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int // by address
	ConnectionsMaxIdle           time.Duration  // <= 0: never
	// ListenerConnectionLimits are each listener's own maximum and rate,
	// by listener name (listener.name.<listener>.max.connections, ...).
	ListenerConnectionLimits map[string]ListenerConnectionLimits

	// The log dir's background work: how often retention is checked
	// (log.retention.check.interval.ms) and the log cleaner
	// (log.cleaner.enable, log.cleaner.threads, log.cleaner.backoff.ms).
	RetentionCheckIntervalMs int64
	// How often each offset checkpoint of a log dir is written
	// (log.flush.offset.checkpoint.interval.ms,
	// log.flush.start.offset.checkpoint.interval.ms,
	// replica.high.watermark.checkpoint.interval.ms).
	Checkpoints             logstore.CheckpointIntervals
	CleanerEnable           bool
	CleanerThreads          int
	CleanerBackoffMs        int64
	CleanerDedupeBufferSize int64
	CleanerIOMaxBytesPerSec float64 // log.cleaner.io.max.bytes.per.second, the cleaners' reads and writes together
	// Producer id expiration (producer.id.expiration.ms and the internal
	// producer.id.expiration.check.interval.ms).
	ProducerIDExpirationMs              int64
	ProducerIDExpirationCheckIntervalMs int64

	// The group coordinator's settings (group.*, offsets.*) and the
	// segment size of its topic (offsets.topic.segment.bytes).
	Groups group.Config
	// ConsumerProtocol serves KIP-848's consumer groups
	// (group.coordinator.rebalance.protocols lists "consumer").
	ConsumerProtocol bool
	// StreamsProtocol serves KIP-1071's streams groups (the list has
	// "streams").
	StreamsProtocol bool
	// The bounds of the consumer group session and heartbeat settings.
	ConsumerMinSessionTimeout, ConsumerMaxSessionTimeout       time.Duration
	ConsumerMinHeartbeatInterval, ConsumerMaxHeartbeatInterval time.Duration
	OffsetsSegmentBytes                                        int64
	// Share groups (KIP-932): config_share.go.
	shareSettings
	// Streams groups (KIP-1071): config_streams.go.
	streamsSettings

	// The transaction coordinator's settings (transaction.*,
	// transactional.id.*) and its topic's segment size and min ISR.
	Transactions         txn.Config
	TxnStateSegmentBytes int64
	TxnStateMinISR       int64
	// TxnPartitionVerification is transaction.partition.verification.enable.
	TxnPartitionVerification bool
	// AddPartitionsRetryBackoff and AddPartitionsRetryMax are
	// add.partitions.to.txn.retry.backoff.ms and .max.ms: how a leader
	// retries adding a partition for a producer on transactions V2 while
	// its last transaction's markers are being written.
	AddPartitionsRetryBackoff, AddPartitionsRetryMax time.Duration

	// How long a coordinator's write waits for its internal topic's ISR:
	// offsets.commit.timeout.ms for groups, share.coordinator.write.timeout.ms
	// for share-group state, and for transactions request.timeout.ms, which
	// also bounds a broker's requests to another broker (forwarded share
	// state, transaction markers and verification), as in Kafka.
	OffsetsCommitTimeout, ShareStateWriteTimeout, RequestTimeout time.Duration

	// Quota is how client quotas measure rates (quota.window.*).
	Quota quota.Config
	// Throttles are the replication and log-dir move throttles
	// (replication_throttle.go).
	Throttles throttleConfig

	// Listener security (security.go): the protocol map, the SASL keys,
	// and what they resolve to per client listener.
	SecurityProtocols        map[string]string
	SaslInterBrokerMechanism string
	SaslControllerMechanism  string
	// InterBrokerListener names the listener brokers reach each other on.
	InterBrokerListener       string
	FailedAuthenticationDelay time.Duration
	SaslMaxReceiveSize        int32
	Security                  map[string]ListenerSecurity
	// ControllerTLS and ControllerSASL are how raft streams and controller
	// requests reach a controller listener that is SSL or SASL; nil
	// where it is not. InterBrokerSASL is how replicas log in to their
	// leaders' SASL inter-broker listener.
	ControllerTLS   *tls.Config
	ControllerSASL  fsasl.Mechanism
	InterBrokerSASL fsasl.Mechanism

	// Authorization (authorize.go): authorizer.class.name set,
	// super.users, allow.everyone.if.no.acl.found.
	Authorizer   bool
	SuperUsers   []string
	AllowIfNoACL bool

	// Delegation tokens (config_tokens.go): delegation.token.*.
	Tokens                   delegation.Config
	TokenExpiryCheckInterval time.Duration

	Cluster ClusterConfig

	// values holds every recognised key with its effective value as text;
	// explicit marks the keys set by the user, for DescribeConfigs sources.
	values   map[string]string
	explicit map[string]bool
	// listenerProps are the listener-prefixed keys (security.go), kept out
	// of values: they hold passwords, which DescribeConfigs must not show.
	listenerProps map[string]string
	// providerProps configure the config providers (config.providers.*),
	// which resolve the dynamic configs' variables too.
	providerProps map[string]string
}

// Listener is one entry of listeners / advertised.listeners: NAME://host:port.
type Listener struct {
	Name string
	Host string
	Port int
}

func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// configKey describes one broker key: its Kafka type name for
// DescribeConfigs, its default as text, and how it sets the Config.
type configKey struct {
	name  string
	typ   string // BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD
	def   string
	doc   string
	apply func(c *Config, v string) error
}

const day = 24 * 60 * 60 * 1000

// brokerKeys are the keys Gregor knows: described by DescribeConfigs, and
// acted on either through a Config field or, for the defaults of topic
// configs (checked keys), through Config.values, which topicDefault reads
// with Kafka's synonym precedence. Keys are applied in this order, so a
// key listed later (log.roll.ms) overrides an earlier one (log.roll.hours)
// when both are set, as Kafka's precedence rules say.
var brokerKeys = []configKey{
	{"node.id", "INT", "1", "The node ID of this server.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.NodeID = int32(n)
		return err
	}},
	{"listeners", "STRING", "PLAINTEXT://localhost:9092", "Comma-separated list of URIs to listen on, NAME://host:port.", func(c *Config, v string) error {
		l, err := parseListeners(v)
		c.Listeners = l
		return err
	}},
	{"advertised.listeners", "STRING", "", "Listeners to publish to clients if different from listeners.", func(c *Config, v string) error {
		l, err := parseListeners(v)
		c.AdvertisedListeners = l
		return err
	}},
	{"controller.listener.names", "STRING", "", "Names of the listeners used by the controller; Gregor does not serve clients on them.", func(c *Config, v string) error {
		c.ControllerListenerNames = splitList(v)
		return nil
	}},
	{"log.dir", "STRING", "./data", "The directory in which the log data is kept (supplemental for log.dirs).", func(c *Config, v string) error {
		c.LogDirs = []string{v}
		return nil
	}},
	{"log.dirs", "STRING", "", "The directories in which the log data is kept (supplemental for log.dir); each new partition goes to the one with the fewest, and the metadata to the first.", func(c *Config, v string) error {
		if dirs := splitList(v); len(dirs) > 0 {
			c.LogDirs = dirs
		}
		return nil
	}},
	{"metadata.log.dir", "STRING", "", "This configuration determines where we put the metadata log. If it is not set, the metadata log is placed in the first log directory from log.dirs.", func(c *Config, v string) error {
		c.MetadataLogDir = v
		return nil
	}},
	{configprovider.Key, "LIST", "", "Comma-separated alias names for config providers, whose variables ${alias:path:key} in the other keys, static or dynamic, are replaced by their values: Kafka's FileConfigProvider, DirectoryConfigProvider and EnvVarConfigProvider, named by config.providers.<alias>.class and configured by config.providers.<alias>.param.*.", func(*Config, string) error { return nil }},
	{"cordoned.log.dirs", "LIST", "", "A comma-separated list of the directories that are cordoned. Entries in this list must be entries in log.dirs or log.dir configuration. This can also be set to * to cordon all log directories.", func(c *Config, v string) error {
		c.CordonedLogDirs = splitList(v)
		return nil
	}},
	{"num.partitions", "INT", "1", "The default number of log partitions per topic.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.NumPartitions = int32(n)
		return err
	}},
	{"max.request.partition.size.limit", "INT", "2000", "The maximum number of partitions can be served in one request.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.MaxResponsePartitions = int32(n)
		return err
	}},
	{"num.recovery.threads.per.data.dir", "INT", "2", "The number of threads per data directory to be used for log recovery at startup and flushing at shutdown.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.RecoveryThreads = int(n)
		return err
	}},
	{"num.replica.alter.log.dirs.threads", "INT", "", "The number of threads that can move replicas between log directories, which may include disk I/O. The default value is equal to the number of directories specified in the log.dir or log.dirs configuration property.", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		n, err := parseInt(v, 1, math.MaxInt32)
		c.MoveThreads = int(n)
		return err
	}},
	{"default.replication.factor", "INT", "1", "The replication factor for automatically created topics.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt16)
		c.DefaultReplicationFactor = int16(n)
		return err
	}},
	{"auto.create.topics.enable", "BOOLEAN", "true", "Enable auto creation of topic on the server.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.AutoCreateTopics = b
		return err
	}},
	{"delete.topic.enable", "BOOLEAN", "true", "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.DeleteTopicEnable = b
		return err
	}},
	{"fetch.max.bytes", "INT", "57671680", "The maximum number of bytes we will return for a fetch request. Must be at least 1024.", func(c *Config, v string) error {
		n, err := parseInt(v, 1024, math.MaxInt32)
		c.FetchMaxBytes = int32(n)
		return err
	}},
	{"message.max.bytes", "INT", "1048588", "The largest record batch size allowed.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.MessageMaxBytes = int32(n)
		return err
	}},
	{"socket.request.max.bytes", "INT", "104857600", "The maximum number of bytes in a socket request.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.SocketRequestMaxBytes = int32(n)
		return err
	}},
	{"queued.max.request.bytes", "LONG", "-1", "The number of queued bytes allowed before no more requests are read", func(c *Config, v string) error {
		n, err := parseInt(v, math.MinInt64, math.MaxInt64)
		c.QueuedMaxRequestBytes = n
		return err
	}},
	{"socket.send.buffer.bytes", "INT", "102400", "The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.", func(c *Config, v string) error {
		n, err := parseSocketBuffer(v)
		c.SocketSendBufferBytes = n
		return err
	}},
	{"socket.receive.buffer.bytes", "INT", "102400", "The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.", func(c *Config, v string) error {
		n, err := parseSocketBuffer(v)
		c.SocketReceiveBufferBytes = n
		return err
	}},
	{"socket.listen.backlog.size", "INT", "50", "The maximum number of pending connections on the socket. In Linux, you may also need to configure somaxconn and tcp_max_syn_backlog kernel parameters accordingly to make the configuration takes effect.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.SocketListenBacklog = int(n)
		return err
	}},
	{"log.message.timestamp.type", "STRING", "CreateTime", "Whether the timestamp in the message is message create time or log append time.", func(c *Config, v string) error {
		if v != "CreateTime" && v != "LogAppendTime" {
			return fmt.Errorf("must be CreateTime or LogAppendTime")
		}
		c.MessageTimestampType = v
		return nil
	}},
	{"max.incremental.fetch.session.cache.slots", "INT", "1000", "The maximum number of incremental fetch sessions.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.FetchSessionCacheSlots = int(n)
		return err
	}},
	{"log.segment.bytes", "INT", "1073741824", "The maximum size of a single log file.", func(c *Config, v string) error {
		n, err := parseInt(v, 14, math.MaxInt32)
		c.Log.SegmentBytes = n
		return err
	}},
	{"log.roll.hours", "INT", "168", "The maximum time before a new log segment is rolled out (in hours).", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Log.SegmentMs = n * 60 * 60 * 1000
		return err
	}},
	{"log.roll.ms", "LONG", "", "The maximum time before a new log segment is rolled out (in milliseconds); overrides log.roll.hours.", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Log.SegmentMs = n
		return err
	}},
	{"log.index.size.max.bytes", "INT", "10485760", "The maximum size in bytes of the offset index.", func(c *Config, v string) error {
		n, err := parseInt(v, 4, math.MaxInt32)
		c.Log.SegmentIndexBytes = int(n)
		return err
	}},
	{"log.index.interval.bytes", "INT", "4096", "The interval with which we add an entry to the offset index.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Log.IndexIntervalBytes = int(n)
		return err
	}},
	{"log.flush.interval.messages", "LONG", strconv.FormatInt(math.MaxInt64, 10), "The number of messages accumulated on a log partition before messages are flushed to disk.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Log.FlushMessages = n
		return err
	}},
	{"log.flush.interval.ms", "LONG", "", "The maximum time in ms that a message in any topic is kept in memory before flushed to disk.", func(c *Config, v string) error {
		if v == "" {
			c.Log.FlushMs = math.MaxInt64
			return nil
		}
		n, err := parseInt(v, 0, math.MaxInt64)
		c.Log.FlushMs = n
		return err
	}},
	{"log.flush.scheduler.interval.ms", "LONG", maxLong, "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk; the default of log.flush.interval.ms.", checked(validLong)},
	{"log.retention.hours", "INT", "168", "The number of hours to keep a log file before deleting it; log.retention.minutes and log.retention.ms take precedence.", checked(intAtLeast(math.MinInt32))},
	{"log.retention.minutes", "INT", "", "The number of minutes to keep a log file before deleting it; log.retention.ms takes precedence.", checked(intAtLeast(math.MinInt32))},
	{"log.retention.ms", "LONG", "", "The number of milliseconds to keep a log file before deleting it; a negative value means no time limit.", checked(validLong)},
	{"log.retention.bytes", "LONG", "-1", "The maximum size of the log before deleting it; -1 means no limit.", checked(validLong)},
	{"log.retention.check.interval.ms", "LONG", "300000", "The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.RetentionCheckIntervalMs = n
		return err
	}},
	{"log.flush.offset.checkpoint.interval.ms", "INT", "60000", "The frequency with which we update the persistent record of the last flush which acts as the log recovery point.", checkpointEvery(func(ci *logstore.CheckpointIntervals) *time.Duration { return &ci.RecoveryPoint })},
	{"log.flush.start.offset.checkpoint.interval.ms", "INT", "60000", "The frequency with which we update the persistent record of log start offset", checkpointEvery(func(ci *logstore.CheckpointIntervals) *time.Duration { return &ci.LogStart })},
	{"replica.high.watermark.checkpoint.interval.ms", "LONG", "5000", "The frequency with which the high watermark is saved out to disk", checkpointEvery(func(ci *logstore.CheckpointIntervals) *time.Duration { return &ci.HighWatermark })},
	{"producer.id.expiration.ms", "INT", "86400000", "The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs will not expire while a transaction associated to them is still ongoing.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ProducerIDExpirationMs = n
		return err
	}},
	{"producer.id.expiration.check.interval.ms", "INT", "600000", "The interval at which to remove producer IDs that have expired due to producer.id.expiration.ms passing.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.ProducerIDExpirationCheckIntervalMs = n
		return err
	}},
	{"log.cleanup.policy", "LIST", "delete", "The default cleanup policy for segments beyond the retention window: delete, compact, or both.", checked(validCleanupPolicy)},
	{"log.cleaner.enable", "BOOLEAN", "true", "Enable the log cleaner process to run on the server.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.CleanerEnable = b
		return err
	}},
	{"log.cleaner.threads", "INT", "1", "The number of background threads to use for log cleaning.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.CleanerThreads = int(n)
		return err
	}},
	{"log.cleaner.backoff.ms", "LONG", "15000", "The amount of time to sleep when there are no logs to clean.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt64)
		c.CleanerBackoffMs = n
		return err
	}},
	{"log.cleaner.dedupe.buffer.size", "LONG", "134217728", "The total memory used for log deduplication across all cleaner threads.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt64)
		c.CleanerDedupeBufferSize = n
		return err
	}},
	{"log.cleaner.io.max.bytes.per.second", "DOUBLE", "1.7976931348623157E308", "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average.", func(c *Config, v string) error {
		if err := positiveDouble(v); err != nil {
			return err
		}
		c.CleanerIOMaxBytesPerSec, _ = strconv.ParseFloat(v, 64)
		return nil
	}},
	{"log.cleaner.delete.retention.ms", "LONG", "86400000", "The amount of time to retain tombstone markers for log compacted topics.", checked(longAtLeast(0))},
	{"log.cleaner.min.compaction.lag.ms", "LONG", "0", "The minimum time a message will remain uncompacted in the log.", checked(longAtLeast(0))},
	{"log.cleaner.max.compaction.lag.ms", "LONG", maxLong, "The maximum time a message will remain ineligible for compaction in the log.", checked(longAtLeast(1))},
	{"log.cleaner.min.cleanable.ratio", "DOUBLE", "0.5", "The minimum ratio of dirty log to total log for a log to be eligible for cleaning.", checked(doubleBetween(0, 1))},
	{"log.segment.delete.delay.ms", "LONG", "60000", "The amount of time to wait before deleting a file from the filesystem.", checked(longAtLeast(0))},
	{"log.roll.jitter.hours", "INT", "0", "The maximum jitter to subtract from logRollTimeMillis (in hours).", checked(intAtLeast(0))},
	{"log.roll.jitter.ms", "LONG", "", "The maximum jitter to subtract from logRollTimeMillis (in milliseconds); overrides log.roll.jitter.hours.", checked(longAtLeast(0))},
	{"log.preallocate", "BOOLEAN", "false", "Whether to preallocate the file when creating a new segment.", checked(validBool)},
	{"log.message.timestamp.before.max.ms", "LONG", maxLong, "The maximum difference allowed between the broker's timestamp and an earlier message timestamp.", checked(longAtLeast(0))},
	{"log.message.timestamp.after.max.ms", "LONG", "3600000", "The maximum difference allowed between a later message timestamp and the broker's timestamp.", checked(longAtLeast(0))},
	{"log.local.retention.ms", "LONG", "-2", "The time to retain local log segments before deletion (tiered storage); -2 means log.retention.ms.", checked(longAtLeast(-2))},
	{"log.local.retention.bytes", "LONG", "-2", "The maximum size of local log segments before deletion (tiered storage); -2 means log.retention.bytes.", checked(longAtLeast(-2))},
	{"log.remote.copy.lag.ms", "LONG", "0", remoteCopyLagMsDoc, checked(longAtLeast(-1))},
	{"log.remote.copy.lag.bytes", "LONG", "-1", remoteCopyLagBytesDoc, checked(longAtLeast(-1))},
	{"max.decompressed.message.bytes", "INT", maxDecompressedDefault, maxDecompressedDoc, checked(intBetween(1, math.MaxInt32-8))},
	{"compression.type", "STRING", "producer", "The final compression type for topics: uncompressed, zstd, lz4, snappy, gzip, or producer to keep the producer's codec.", checked(oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))},
	{"compression.gzip.level", "INT", "-1", "The compression level to use if compression.type is set to gzip.", checked(validGzipLevel)},
	{"compression.lz4.level", "INT", "9", "The compression level to use if compression.type is set to lz4.", checked(intBetween(1, 17))},
	{"compression.zstd.level", "INT", "3", "The compression level to use if compression.type is set to zstd.", checked(intBetween(-131072, 22))},
	{"min.insync.replicas", "INT", "1", "The minimum number of replicas that must acknowledge a write with acks=all.", checked(intAtLeast(1))},
	{"unclean.leader.election.enable", "BOOLEAN", "false", "Whether replicas not in the ISR may be elected leader as a last resort.", checked(validBool)},
}

// checked is the apply function of a key Gregor validates and keeps only
// as text (in Config.values): the topic settings read it from there.
func checked(validate func(string) error) func(*Config, string) error {
	return func(_ *Config, v string) error {
		if v == "" {
			return nil // the key has no default: unset
		}
		return validate(v)
	}
}

// dynamicBrokerKeys are the broker keys AlterConfigs may change at
// runtime, per broker or cluster-wide, as Kafka's DynamicBrokerConfig
// allows: the first broker synonym of every topic config
// (DynamicLogConfig), the cleaner's threads, backoff and buffer, the
// recovery threads and the replica fetchers (DynamicThreadPool),
// cordoned.log.dirs (Kafka 4.3's DynamicLogConfig),
// producer.id.expiration.ms and
// transaction.partition.verification.enable
// (DynamicProducerStateManagerConfig), the share groups' dead-letter
// queue prefix and auto-creation (GroupCoordinatorConfig's
// reconfigurable configs), and the connection limits, the
// broker's and the per-address ones (SocketServer's reconfigurable
// configs). All others are read-only; changing them needs a restart.
var dynamicBrokerKeys = func() map[string]bool {
	keys := map[string]bool{"log.cleaner.threads": true, "log.cleaner.backoff.ms": true, "log.cleaner.dedupe.buffer.size": true,
		"log.cleaner.io.max.bytes.per.second": true,
		"num.recovery.threads.per.data.dir":   true, "num.replica.fetchers": true, "producer.id.expiration.ms": true,
		"transaction.partition.verification.enable": true,
		"max.connections.per.ip":                    true, "max.connections.per.ip.overrides": true,
		"max.connections": true, "max.connection.creation.rate": true,
		"cordoned.log.dirs":                        true,
		"errors.deadletterqueue.topic.name.prefix": true, "errors.deadletterqueue.auto.create.topics.enable": true}
	for _, k := range topicConfigKeys {
		if len(k.synonyms) > 0 {
			keys[k.synonyms[0].name] = true
		}
	}
	return keys
}()

// keyAliases maps other spellings people put in server.properties to the
// broker key they mean: a topic-level one (the issue names
// index.interval.bytes), and broker.id, the deprecated name of node.id
// (which must then agree with it, as in Kafka).
var keyAliases = map[string]string{
	"index.interval.bytes": "log.index.interval.bytes",
	"broker.id":            "node.id",
}

// knownUnusedKeys are Kafka broker keys found in Kafka's own shipped
// server.properties files that Gregor accepts but does not act on yet.
var knownUnusedKeys = map[string]bool{
	"num.network.threads": true, "num.io.threads": true,
	"share.coordinator.state.topic.replication.factor": true, "share.coordinator.state.topic.min.isr": true,
}

// DefaultConfig is Gregor's built-in configuration: one node, PLAINTEXT on
// localhost:9092, data under ./data.
func DefaultConfig() Config {
	c, _, err := ParseConfig(nil)
	if err != nil {
		panic(err) // the defaults are constants
	}
	return c
}

// ParseConfig builds a Config from key/value pairs (server.properties and
// overrides, or those with the dynamic configs over them), their config
// providers' variables resolved first (configprovider). It returns
// warnings for keys it does not know and an error naming the key of the
// first bad value.
func ParseConfig(props map[string]string) (Config, []string, error) {
	props, err := configprovider.Resolve(props)
	if err != nil {
		return Config{}, nil, err
	}
	c := Config{values: map[string]string{}, explicit: map[string]bool{}}
	c.Log = logstore.DefaultConfig()
	var warnings []string
	resolved := make(map[string]string, len(props))
	for k, v := range props {
		resolved[k] = v
	}
	if id, ok := props["broker.id"]; ok {
		if n, both := props["node.id"]; both && strings.TrimSpace(n) != strings.TrimSpace(id) {
			return c, warnings, fmt.Errorf("`node.id` and `broker.id` must be set to the same value. `broker.id` is deprecated, please use `node.id` instead")
		}
	}
	for k, v := range props {
		if alias, ok := keyAliases[k]; ok {
			if _, both := props[alias]; !both {
				resolved[alias] = v
			}
			continue
		}
		if findKey(k) == nil && !isListenerKey(k) && !configprovider.IsProviderKey(k) {
			if knownUnusedKeys[k] {
				warnings = append(warnings, fmt.Sprintf("config key %s is accepted but not used by Gregor yet", k))
			} else {
				warnings = append(warnings, fmt.Sprintf("unknown config key %s is ignored", k))
			}
		}
	}
	sort.Strings(warnings)
	for _, key := range brokerKeys {
		v, set := resolved[key.name]
		if !set {
			v = key.def
		} else {
			c.explicit[key.name] = true
		}
		v = strings.TrimSpace(v)
		if err := key.apply(&c, v); err != nil {
			return c, warnings, fmt.Errorf("invalid value %q for config key %s: %v", v, key.name, err)
		}
		c.values[key.name] = v
	}
	// The log dir's defaults carry the broker's retention and compaction
	// settings too, for logs not yet given their topic's.
	setLifecycle(&c.Log, func(name string) string { return c.topicValue(nil, name) })
	if len(c.AdvertisedListeners) == 0 {
		c.AdvertisedListeners = c.Listeners
	}
	if err := c.validateListeners(); err != nil {
		return c, warnings, err
	}
	related, err := c.validateRelatedKeys()
	warnings = append(warnings, related...)
	if err != nil {
		return c, warnings, err
	}
	if err := c.validateQuorumNamed(); err != nil {
		return c, warnings, err
	}
	c.resolveBootstrap()
	if len(c.clientListeners()) == 0 && !c.clustered() {
		return c, warnings, fmt.Errorf("invalid value for config key listeners: no listener serves clients")
	}
	if err := c.validateCluster(); err != nil {
		return c, warnings, err
	}
	c.listenerProps, c.providerProps = map[string]string{}, map[string]string{}
	for k, v := range resolved {
		switch {
		case isListenerKey(k):
			c.listenerProps[k] = v
		case configprovider.IsProviderKey(k):
			c.providerProps[k] = v
		}
	}
	if err := c.resolveSecurity(); err != nil {
		return c, warnings, err
	}
	if err := c.resolveInterBrokerListener(); err != nil {
		return c, warnings, err
	}
	if err := c.validateInterBrokerStores(); err != nil {
		return c, warnings, err
	}
	if err := c.resolveControllerSecurity(); err != nil {
		return c, warnings, err
	}
	if err := c.validateInterBrokerSecurity(); err != nil {
		return c, warnings, err
	}
	if err := c.validateConnectionLimits(); err != nil {
		return c, warnings, err
	}
	listenerWarnings, err := c.resolveListenerConnectionLimits()
	warnings = append(warnings, listenerWarnings...)
	if err != nil {
		return c, warnings, err
	}
	if err := c.validateConsumerGroups(); err != nil {
		return c, warnings, err
	}
	if err := c.validateStreamsGroups(); err != nil {
		return c, warnings, err
	}
	if err := c.validateShareGroups(); err != nil {
		return c, warnings, err
	}
	return c, warnings, nil
}

// validateRelatedKeys refuses, with Kafka's messages, the values its
// KafkaConfig.validateValues refuses in view of other keys, and warns
// where Kafka only logs an error.
func (c *Config) validateRelatedKeys() (warnings []string, err error) {
	retention := c.topicDefault(findTopicConfigKey("retention.ms"))
	if retention == "0" {
		key := "log.retention.hours"
		for _, k := range []string{"log.retention.ms", "log.retention.minutes"} {
			if c.values[k] != "" {
				key = k
				break
			}
		}
		return nil, fmt.Errorf("invalid value for config key %s: log.retention.ms must be unlimited (-1) or, greater than or equal to 1", key)
	}
	if slices.Contains(c.CordonedLogDirs, "*") && len(c.CordonedLogDirs) > 1 {
		return nil, fmt.Errorf("invalid value for config key cordoned.log.dirs: When cordoned.log.dirs is set to *, it must not contain other values")
	}
	if missing := slices.DeleteFunc(slices.Clone(c.CordonedLogDirs), func(d string) bool { return d == "*" || slices.Contains(c.LogDirs, d) }); len(missing) > 0 {
		return nil, fmt.Errorf("invalid value for config key cordoned.log.dirs: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : %s", strings.Join(missing, ","))
	}
	if c.CleanerThreads > 0 && c.CleanerDedupeBufferSize/int64(c.CleanerThreads) <= 1<<20 {
		return nil, fmt.Errorf("invalid value for config key log.cleaner.dedupe.buffer.size: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
	}
	if c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes) {
		return nil, fmt.Errorf("invalid value for config key queued.max.request.bytes: queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
	}
	if c.Cluster.ReplicaFetchWaitMax > c.Cluster.ReplicaLagTimeMax {
		return nil, fmt.Errorf("invalid value for config key replica.fetch.wait.max.ms: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR")
	}
	if c.Cluster.ReplicaFetchWaitMax > c.Cluster.ReplicaSocketTimeout {
		return nil, fmt.Errorf("invalid value for config key replica.socket.timeout.ms: replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts")
	}
	if c.ConnectionsMaxIdle >= 0 && c.FailedAuthenticationDelay >= c.ConnectionsMaxIdle {
		return nil, fmt.Errorf("invalid value for config key connection.failed.authentication.delay.ms: connection.failed.authentication.delay.ms=%d should always be less than connections.max.idle.ms=%d to prevent failed authentication responses from timing out",
			c.FailedAuthenticationDelay.Milliseconds(), c.ConnectionsMaxIdle.Milliseconds())
	}
	if interval, session := c.Cluster.BrokerHeartbeatInterval, c.Cluster.BrokerSessionTimeout; 2*interval > session {
		warnings = append(warnings, fmt.Sprintf("broker.heartbeat.interval.ms (%d ms) must be less than or equal to half of the broker.session.timeout.ms (%d ms). "+
			"The broker.session.timeout.ms is configured on controller. The broker.heartbeat.interval.ms is configured on broker. "+
			"If a broker doesn't send heartbeat request within broker.session.timeout.ms, it loses broker lease. "+
			"Please increase broker.session.timeout.ms or decrease broker.heartbeat.interval.ms.", interval.Milliseconds(), session.Milliseconds()))
	}
	return warnings, nil
}

func findKey(name string) *configKey {
	for i := range brokerKeys {
		if brokerKeys[i].name == name {
			return &brokerKeys[i]
		}
	}
	return nil
}

// clientListeners are the listeners that are not controller listeners.
func (c *Config) clientListeners() []Listener {
	var out []Listener
	for _, l := range c.Listeners {
		isController := false
		for _, n := range c.ControllerListenerNames {
			if n == l.Name {
				isController = true
			}
		}
		if !isController {
			out = append(out, l)
		}
	}
	return out
}

// advertised returns the address clients are told to use for the listener
// called name, which was bound at bound.
func (c *Config) advertised(name string, bound *net.TCPAddr) (string, int) {
	for _, l := range c.AdvertisedListeners {
		if l.Name != name {
			continue
		}
		host, port := l.Host, l.Port
		if port == 0 {
			port = bound.Port
		}
		if host == "" {
			host = bound.IP.String()
			if bound.IP.IsUnspecified() {
				host, _ = os.Hostname()
			}
		}
		return host, port
	}
	return bound.IP.String(), bound.Port
}

func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	for _, item := range splitList(v) {
		name, addr, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", item)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %v", item, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q has a bad port", item)
		}
		out = append(out, Listener{Name: strings.ToUpper(name), Host: host, Port: port})
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseInt(v string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < min || n > max {
		return 0, fmt.Errorf("must be between %d and %d", min, max)
	}
	return n, nil
}

// checkpointEvery applies one of the checkpoint intervals, in ms, at least 0.
func checkpointEvery(field func(*logstore.CheckpointIntervals) *time.Duration) func(*Config, string) error {
	return longMillis(0, func(c *Config) *time.Duration { return field(&c.Checkpoints) })
}

// parseSocketBuffer reads a socket buffer size: bytes, or -1 for the
// kernel's default (and its autotuning).
func parseSocketBuffer(v string) (int, error) {
	n, err := parseInt(v, -1, math.MaxInt32)
	if err == nil && n == 0 {
		err = fmt.Errorf("must be -1 (the OS default) or a positive number of bytes")
	}
	return int(n), err
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("must be true or false")
}

// metadataDir is metadata.log.dir, or the first log dir.
func (c *Config) metadataDir() string {
	if c.MetadataLogDir != "" {
		return c.MetadataLogDir
	}
	return c.LogDirs[0]
}

// metadataDirIsALogDir reports whether the metadata dir is one of the log
// dirs, whose meta.properties the log store writes.
func (c *Config) metadataDirIsALogDir() bool {
	meta, err := filepath.Abs(c.metadataDir())
	return err == nil && slices.ContainsFunc(c.LogDirs, func(dir string) bool {
		abs, err := filepath.Abs(dir)
		return err == nil && abs == meta
	})
}
