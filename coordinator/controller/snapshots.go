package controller

// Snapshots of the metadata log, taken as a KRaft node takes them: every
// node (voter or observer) writes its own once
// metadata.log.max.record.bytes.between.snapshots of records were applied
// since its last one (Config.SnapshotMaxBytes), or when
// metadata.log.max.snapshot.interval.ms passed since its last one and
// records were applied meanwhile (Config.SnapshotMaxInterval; 0: never by
// time). Raft then drops the log entries the snapshot holds but for its
// trailing ones, kept for followers a little behind, so the log on disk
// and the replay at start stay bounded. Raft's own entry-count trigger is
// off.

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Kafka's defaults.
const (
	defaultSnapshotMaxBytes    = 20 * 1024 * 1024
	defaultSnapshotMaxInterval = time.Hour
)

// snapshotLoop writes a snapshot whenever one is due, until the
// controller closes.
func (c *Controller) snapshotLoop() {
	defer close(c.snapshotsDone)
	interval := c.cfg.SnapshotMaxInterval
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(min(max(interval/4, 10*time.Millisecond), time.Second))
		defer t.Stop()
		tick = t.C
	}
	last := time.Now()
	for {
		select {
		case <-c.closed:
			return
		case <-c.fsm.snapshotDue:
			c.writeSnapshot("bytes", &last)
		case <-tick:
			if time.Since(last) >= interval && c.fsm.unsnapshotted.Load() > 0 {
				c.writeSnapshot("time", &last)
			}
		}
	}
}

func (c *Controller) writeSnapshot(reason string, last *time.Time) {
	pending := c.fsm.unsnapshotted.Load()
	err := c.raft.Snapshot().Error()
	switch {
	case err == nil:
		*last = time.Now()
		c.log.Info("controller: metadata snapshot written", "reason", reason, "bytes.since.last", pending,
			"offset", c.Image().Offset)
	case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
	default:
		c.log.Warn("controller: writing a metadata snapshot failed", "err", err)
	}
}
