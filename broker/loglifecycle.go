package broker

import (
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/logstore"
)

// setLifecycle fills the log's retention, cleanup-policy, compaction and
// file-deletion settings from a topic's effective values (value returns a
// topic config's value: its override or the broker default).
func setLifecycle(l *logstore.Config, value func(name string) string) {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(value(name), 10, 64)
		return n
	}
	l.RetentionMs = num("retention.ms")
	l.RetentionBytes = num("retention.bytes")
	l.Compact, l.Delete = false, false
	for _, p := range splitList(value("cleanup.policy")) {
		l.Compact = l.Compact || p == "compact"
		l.Delete = l.Delete || p == "delete"
	}
	l.DeleteRetentionMs = num("delete.retention.ms")
	l.MinCompactionLagMs = num("min.compaction.lag.ms")
	l.MaxCompactionLagMs = num("max.compaction.lag.ms")
	l.MinCleanableDirtyRatio, _ = strconv.ParseFloat(value("min.cleanable.dirty.ratio"), 64)
	l.FileDeleteDelayMs = num("file.delete.delay.ms")
}

// applyDirSettings passes the live broker config's retention-check
// interval, producer id expiration, recovery threads and log-cleaner
// settings to the log dir, those that differ from old (nil: all);
// log.cleaner.enable false runs no cleaner thread. The cleaner restarts
// only when its own settings change.
func (b *Broker) applyDirSettings(old *Config) {
	c := b.liveConfig()
	if old == nil || old.RetentionCheckIntervalMs != c.RetentionCheckIntervalMs {
		b.dir.SetRetentionCheckInterval(time.Duration(c.RetentionCheckIntervalMs) * time.Millisecond)
	}
	if old == nil || old.ProducerIDExpirationMs != c.ProducerIDExpirationMs || old.ProducerIDExpirationCheckIntervalMs != c.ProducerIDExpirationCheckIntervalMs {
		b.dir.SetProducerIDExpiration(time.Duration(c.ProducerIDExpirationMs)*time.Millisecond,
			time.Duration(c.ProducerIDExpirationCheckIntervalMs)*time.Millisecond)
	}
	if old == nil || old.RecoveryThreads != c.RecoveryThreads {
		b.dir.SetRecoveryThreads(c.RecoveryThreads)
	}
	threads := c.CleanerThreads
	if !c.CleanerEnable {
		threads = 0
	}
	if old == nil || old.CleanerDedupeBufferSize != c.CleanerDedupeBufferSize || old.CleanerThreads != c.CleanerThreads {
		b.dir.SetCleanerDedupeBufferSize(c.CleanerDedupeBufferSize, max(threads, 1))
	}
	if old == nil || old.CleanerThreads != c.CleanerThreads || old.CleanerBackoffMs != c.CleanerBackoffMs || old.CleanerDedupeBufferSize != c.CleanerDedupeBufferSize {
		b.dir.SetCleaner(threads, time.Duration(c.CleanerBackoffMs)*time.Millisecond)
	}
}
