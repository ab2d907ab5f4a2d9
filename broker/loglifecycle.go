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
	if !l.Compact && !l.Delete { // the empty list: keep everything
		l.Delete, l.RetentionMs, l.RetentionBytes = true, -1, -1
	}
	l.DeleteRetentionMs = num("delete.retention.ms")
	l.MinCompactionLagMs = num("min.compaction.lag.ms")
	l.MaxCompactionLagMs = num("max.compaction.lag.ms")
	l.MinCleanableDirtyRatio, _ = strconv.ParseFloat(value("min.cleanable.dirty.ratio"), 64)
	l.FileDeleteDelayMs = num("file.delete.delay.ms")
}

// applyDirSettings passes the live broker config's retention-check and
// checkpoint intervals, producer id expiration, recovery threads and log-cleaner
// settings to the log dirs, those that differ from old (nil: all);
// log.cleaner.enable false runs no cleaner thread. The cleaner restarts
// only when its own settings change. Each log dir has its own cleaner:
// log.cleaner.threads and the dedupe buffer are shared out among the dirs,
// at least one thread each, as Kafka's one cleaner serves them all, and
// they share one throttle (log.cleaner.io.max.bytes.per.second).
func (b *Broker) applyDirSettings(old *Config) {
	c := b.liveConfig()
	b.cleanerThrottle.SetRate(c.CleanerIOMaxBytesPerSec)
	dirs := b.dirs.Online() // an offline dir runs nothing
	for _, d := range dirs {
		if old == nil || old.RetentionCheckIntervalMs != c.RetentionCheckIntervalMs {
			d.SetRetentionCheckInterval(time.Duration(c.RetentionCheckIntervalMs) * time.Millisecond)
		}
		if old == nil || old.Checkpoints != c.Checkpoints {
			d.SetCheckpointIntervals(c.Checkpoints)
		}
		if old == nil || old.ProducerIDExpirationMs != c.ProducerIDExpirationMs || old.ProducerIDExpirationCheckIntervalMs != c.ProducerIDExpirationCheckIntervalMs {
			d.SetProducerIDExpiration(time.Duration(c.ProducerIDExpirationMs)*time.Millisecond,
				time.Duration(c.ProducerIDExpirationCheckIntervalMs)*time.Millisecond)
		}
		if old == nil || old.RecoveryThreads != c.RecoveryThreads {
			d.SetRecoveryThreads(c.RecoveryThreads)
		}
		threads := (c.CleanerThreads + len(dirs) - 1) / len(dirs)
		if !c.CleanerEnable {
			threads = 0
		}
		buffer := c.CleanerDedupeBufferSize / int64(len(dirs))
		if old == nil || old.CleanerDedupeBufferSize != c.CleanerDedupeBufferSize || old.CleanerThreads != c.CleanerThreads {
			d.SetCleanerDedupeBufferSize(buffer, max(threads, 1))
		}
		if old == nil {
			d.SetCleanerThrottle(b.cleanerThrottle)
		}
		if old == nil || old.CleanerThreads != c.CleanerThreads || old.CleanerBackoffMs != c.CleanerBackoffMs || old.CleanerDedupeBufferSize != c.CleanerDedupeBufferSize {
			d.SetCleaner(threads, time.Duration(c.CleanerBackoffMs)*time.Millisecond)
		}
	}
}
