package logstore

import "math"

// Config holds the per-partition settings, named after Kafka's topic configs
// (and the broker-wide log.* defaults they fall back to).
type Config struct {
	// SegmentBytes (segment.bytes, log.segment.bytes) is the largest a
	// segment's .log may grow before the next append rolls a new one.
	SegmentBytes int64
	// SegmentMs (segment.ms, log.roll.ms) rolls the active segment once the
	// appended batches' timestamps are this much newer than its first
	// batch's (or, for batches without timestamps, the segment is this old).
	SegmentMs int64
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
}

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * 60 * 60 * 1000
	DefaultSegmentIndexBytes  = 10 << 20
	DefaultIndexIntervalBytes = 4096
)

// DefaultConfig returns Kafka's defaults: 1 GiB segments rolled after 7 days,
// 10 MiB indexes with an entry every 4 KiB, and no forced flushes.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          DefaultSegmentMs,
		SegmentIndexBytes:  DefaultSegmentIndexBytes,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,
	}
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
	return c
}
