package logstore

import (
	"math"
	"math/rand/v2"

	"github.com/gregor-broker/gregor/protocol"
)

// Config holds the per-partition settings, named after Kafka's topic configs
// (and the broker-wide log.* defaults they fall back to).
//
// How values are read: start from DefaultConfig() and set what the topic
// says. For the segment, index and flush fields zero (or below) means
// Kafka's default, except index.interval.bytes and flush.ms, where 0 is
// taken literally and only negatives mean the default. The log lifecycle fields
// (retention, cleanup policy, compaction, file deletion) take their values
// literally, because zero is legal for most of them (retention.ms=0 deletes
// every segment whose records are older than now); only values Kafka
// refuses fall back to the default: below -1 for the retention pair (-1 is
// unlimited), below 0 for the other durations and the ratio, and a ratio
// above 1. One safety net: a Config whose lifecycle fields are all zero
// (a Config{} literal, never something filled from topic configs, since
// max.compaction.lag.ms cannot be 0) gets Kafka's lifecycle defaults
// rather than "delete everything at once".
//
// The cleanup policy is the pair Delete / Compact; when neither is set the
// policy is Kafka's default, delete, so a zero Config never turns
// retention off. Kafka's empty cleanup.policy list (neither) is expressed
// as Delete with RetentionMs and RetentionBytes at -1, which keeps
// everything just the same.
type Config struct {
	// SegmentBytes (segment.bytes, log.segment.bytes) is the largest a
	// segment's .log may grow before the next append rolls a new one.
	SegmentBytes int64
	// SegmentMs (segment.ms, log.roll.ms) rolls the active segment once the
	// appended batches' timestamps are this much newer than its first
	// batch's (or, for batches without timestamps, the segment is this old).
	SegmentMs int64
	// SegmentJitterMs (segment.jitter.ms, log.roll.jitter.{hours,ms}): each
	// segment rolls by time up to this much early, by an amount drawn at
	// random when it is opened and below SegmentMs, so that the segments
	// of partitions created together do not all roll at once. Default 0.
	SegmentJitterMs int64
	// SegmentIndexBytes (segment.index.bytes) bounds each index file; a full
	// index rolls the segment.
	SegmentIndexBytes int
	// IndexIntervalBytes (index.interval.bytes) is the spacing of .index entries.
	IndexIntervalBytes int
	// FlushMessages (flush.messages, log.flush.interval.messages): fsync once
	// this many offsets are unflushed.
	FlushMessages int64
	// FlushMs (flush.ms, log.flush.interval.ms): the Dir's flusher fsyncs a log
	// this long after its last flush.
	FlushMs int64

	// RetentionMs (retention.ms, log.retention.{hours,minutes,ms}): with the
	// delete policy, a segment goes once its largest record timestamp is
	// more than this old. -1: no time limit. Default 7 days.
	RetentionMs int64
	// RetentionBytes (retention.bytes, log.retention.bytes): with the delete
	// policy, the oldest segments go while the log is larger than this by
	// at least their size. -1 (the default): no size limit.
	RetentionBytes int64
	// Compact: cleanup.policy contains "compact"; the log cleaner keeps the
	// newest record of each key.
	Compact bool
	// Delete: cleanup.policy contains "delete"; retention by time and size
	// applies. Taken as true when Compact is false (see above).
	Delete bool
	// DeleteRetentionMs (delete.retention.ms): how long a compacted
	// tombstone (null value) survives after the cleaner first saw it.
	// Default 1 day.
	DeleteRetentionMs int64
	// MinCompactionLagMs (min.compaction.lag.ms): segments with records
	// newer than this are not cleaned yet. Default 0.
	MinCompactionLagMs int64
	// MaxCompactionLagMs (max.compaction.lag.ms): a log whose oldest dirty
	// segment started more than this long ago is cleaned whatever its
	// dirty ratio, and the active segment of a compacted log rolls once it
	// spans this long when that is shorter than SegmentMs. Default
	// math.MaxInt64 (never); Kafka's minimum is 1.
	MaxCompactionLagMs int64
	// MinCleanableDirtyRatio (min.cleanable.dirty.ratio): the cleaner
	// picks a log only when dirty bytes / (clean + dirty bytes) is above
	// this. Default 0.5.
	MinCleanableDirtyRatio float64
	// FileDeleteDelayMs (file.delete.delay.ms): how long segment files
	// renamed *.deleted stay on disk (so reads in flight finish) before
	// they are removed. Default 60 s.
	FileDeleteDelayMs int64

	// MaxDecompressedRecordBytes (max.decompressed.message.bytes): the
	// largest record body a compressed batch may hold where the log
	// decompresses one, in the cleaner and in lookups by timestamp; a
	// larger one fails them with protocol.ErrRecordTooLarge, and a log
	// whose clean failed so is cleaned again once the limit changes.
	// Zero or below: Kafka's default, which limits nothing.
	MaxDecompressedRecordBytes int
}

// recordLimit is MaxDecompressedRecordBytes as the limit handed to the
// record readers of package protocol.
func (c Config) recordLimit() int {
	if c.MaxDecompressedRecordBytes <= 0 {
		return protocol.NoRecordLimit
	}
	return c.MaxDecompressedRecordBytes
}

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * 60 * 60 * 1000
	DefaultSegmentIndexBytes  = 10 << 20
	DefaultIndexIntervalBytes = 4096

	DefaultRetentionMs            = 7 * 24 * 60 * 60 * 1000
	DefaultRetentionBytes         = -1
	DefaultDeleteRetentionMs      = 24 * 60 * 60 * 1000
	DefaultMinCompactionLagMs     = 0
	DefaultMaxCompactionLagMs     = math.MaxInt64
	DefaultMinCleanableDirtyRatio = 0.5
	DefaultFileDeleteDelayMs      = 60000
)

// DefaultConfig returns Kafka's defaults: 1 GiB segments rolled after 7 days,
// 10 MiB indexes with an entry every 4 KiB, no forced flushes, the delete
// policy with 7 days of retention and no size limit, and the cleaner's
// defaults for when compaction is turned on.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           DefaultSegmentBytes,
		SegmentMs:              DefaultSegmentMs,
		SegmentIndexBytes:      DefaultSegmentIndexBytes,
		IndexIntervalBytes:     DefaultIndexIntervalBytes,
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
		RetentionMs:            DefaultRetentionMs,
		RetentionBytes:         DefaultRetentionBytes,
		Delete:                 true,
		DeleteRetentionMs:      DefaultDeleteRetentionMs,
		MinCompactionLagMs:     DefaultMinCompactionLagMs,
		MaxCompactionLagMs:     DefaultMaxCompactionLagMs,
		MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio,
		FileDeleteDelayMs:      DefaultFileDeleteDelayMs,
	}
}

// randomRollJitter draws a segment's roll jitter, as Kafka's
// LogConfig.randomSegmentJitter: below min(SegmentJitterMs, SegmentMs).
func (c Config) randomRollJitter() int64 {
	if c.SegmentJitterMs <= 0 {
		return 0
	}
	segmentMs := c.SegmentMs
	if segmentMs <= 0 {
		segmentMs = DefaultSegmentMs
	}
	return rand.Int64N(min(c.SegmentJitterMs, segmentMs))
}

// maxSegmentMs is how long the active segment may take before it rolls
// (Kafka's LogConfig.maxSegmentMs): segment.ms, or max.compaction.lag.ms
// when the log is compacted and that is shorter, so that no record stays
// in the active segment, which the cleaner never touches, for longer.
func (c Config) maxSegmentMs() int64 {
	if c.Compact {
		return min(c.SegmentMs, c.MaxCompactionLagMs)
	}
	return c.SegmentMs
}

// withDefaults fills from DefaultConfig the fields Kafka does not allow at
// zero (left at zero or below) and the negative ones where zero is valid
// (index.interval.bytes and flush.ms).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes < 0 { // 0 is valid: an index entry per batch
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs < 0 { // 0 is valid: flush at every flusher tick
		c.FlushMs = d.FlushMs
	}
	return c.lifecycleDefaults(d)
}

// lifecycleDefaults applies the rules for the lifecycle fields described on
// Config: a never-filled (all zero) block gets the defaults; otherwise only
// values Kafka refuses do.
func (c Config) lifecycleDefaults(d Config) Config {
	if c.RetentionMs == 0 && c.RetentionBytes == 0 && c.DeleteRetentionMs == 0 && c.MinCompactionLagMs == 0 &&
		c.MaxCompactionLagMs == 0 && c.MinCleanableDirtyRatio == 0 && c.FileDeleteDelayMs == 0 {
		c.RetentionMs, c.RetentionBytes, c.DeleteRetentionMs = d.RetentionMs, d.RetentionBytes, d.DeleteRetentionMs
		c.MaxCompactionLagMs, c.MinCleanableDirtyRatio, c.FileDeleteDelayMs = d.MaxCompactionLagMs, d.MinCleanableDirtyRatio, d.FileDeleteDelayMs
	}
	if !c.Compact {
		c.Delete = true
	}
	if c.RetentionMs < -1 {
		c.RetentionMs = d.RetentionMs
	}
	if c.RetentionBytes < -1 {
		c.RetentionBytes = d.RetentionBytes
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = d.MinCompactionLagMs
	}
	if c.MaxCompactionLagMs < 1 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1) { // also NaN
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = d.FileDeleteDelayMs
	}
	return c
}
