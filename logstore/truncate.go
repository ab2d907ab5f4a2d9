package logstore

// Truncation from the end, for a follower whose log diverged from the new
// leader's (Kafka's UnifiedLog.truncateTo and truncateFullyAndStartAt).
//
// TruncateTo(offset) keeps the segment holding offset and everything
// before it; the segments above are taken out of the list and renamed
// *.deleted (highest first), the kept segment's .log is cut at the batch
// boundary and fsynced and its indexes trimmed, then the leader epochs
// starting at or after the new end are dropped, producer snapshots above
// it removed and producer state rebuilt from the newest snapshot left. The
// offsets move first, in memory: log end, high watermark, recovery point,
// and the log start offset if it was above. Afterwards the Dir's
// checkpoints are written (so no stale recovery point or high watermark
// above the new end survives a crash) and the cleaner's first dirty
// offset is lowered to the new end.
//
// A crash part way leaves whole batches only: each rename or cut leaves a
// prefix of the old log (the renames go from the highest segment down, a
// .log before its indexes, and OpenDir removes *.deleted files and index
// files without a .log), and the cut segment is then the last one, which
// recovery always rescans. On reopen the leader epochs and producer
// snapshots above the recovered end are dropped as on any open.
//
// TruncateFullyAndStartAt(offset) removes the producer snapshots, retires
// every segment (highest first) and starts an empty segment at offset,
// which becomes the log start, log end, high watermark and recovery point;
// the leader epochs are cleared. A crash part way leaves a prefix of the
// old log, or an empty one.
//
// Both wait for a clean or retention pass on the log to end (asking a
// clean in progress to stop), and hold the append lock throughout.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// TruncateTo removes every record at and above offset. An offset inside a
// batch cuts before that batch (the log then ends at the batch's base
// offset); an offset below the first segment empties the log and starts
// it at offset (TruncateFullyAndStartAt). At or above the log end offset
// the records stay, and leader epochs starting at or after the log end
// (assigned to a leadership that wrote nothing) are dropped, as Kafka does.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return errorf(CodeOffsetOutOfRange, "cannot truncate %s to the negative offset %d", l.tp, offset)
	}
	return l.truncate(func() (int64, bool, error) {
		end := l.end.Load()
		switch {
		case offset >= end:
			return end, false, l.writeEpochsIf(l.epochs.truncateFromEnd(end))
		case offset < l.segments()[0].base:
			return offset, true, l.truncateFullyLocked(offset)
		default:
			end, err := l.truncateLocked(offset)
			return end, true, err
		}
	})
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, for a
// follower whose log end lies below the leader's log start offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return errorf(CodeOffsetOutOfRange, "cannot start %s at the negative offset %d", l.tp, offset)
	}
	return l.truncate(func() (int64, bool, error) { return offset, true, l.truncateFullyLocked(offset) })
}

// truncate runs cut, which returns the new log end offset and whether
// anything was cut, holding the log's locks (flushMu too, so that no flush
// raises the recovery point past the new end), then brings the Dir's
// checkpoints and the cleaner's up to date, which must not be done holding
// them (Dir.mu comes first).
func (l *Log) truncate(cut func() (int64, bool, error)) error {
	end, changed, err := func() (int64, bool, error) {
		l.cleanPause.Add(1)
		l.cleanMu.Lock()
		l.cleanPause.Add(-1)
		defer l.cleanMu.Unlock()
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.unusable(); err != nil {
			return 0, false, err
		}
		return cut()
	}()
	owner := l.owner.Load()
	if err != nil || !changed || owner == nil {
		return err
	}
	return errors.Join(owner.cleaner.truncateCheckpoint(l.tp, end), owner.Checkpoint())
}

// truncateLocked is TruncateTo for an offset inside the log (at or above
// the first segment's base, below the log end).
func (l *Log) truncateLocked(offset int64) (int64, error) {
	segs := l.segments()
	i := floorSegment(segs, offset)
	keep := segs[i]
	h, cut, found, err := keep.batchAt(offset, keep.lookup(offset), keep.size.Load())
	if err != nil {
		return 0, l.ioErr("read "+keep.log.Name(), err)
	}
	end := offset
	if !found {
		cut = keep.size.Load() // offset lies after the segment's last batch (a gap)
	} else if h.BaseOffset < offset {
		end = h.BaseOffset
	}

	l.end.Store(end)
	l.hw.Store(min(l.hw.Load(), end))
	l.recoveryPoint.Store(min(l.recoveryPoint.Load(), end))
	l.logStart.Store(min(l.logStart.Load(), end))
	kept := slices.Clone(segs[:i+1])
	l.segs.Store(&kept)
	for j := len(segs) - 1; j > i; j-- {
		if err := segs[j].renameFiles(deletedSuffix, l.step); err != nil {
			return end, l.ioErr("retire "+segs[j].log.Name(), err)
		}
		if err := l.deleteLater(segs[j]); err != nil {
			return end, l.ioErr("delete "+segs[j].log.Name(), err)
		}
	}
	if err := l.step("cut " + keep.log.Name()); err != nil {
		return end, err
	}
	if err := keep.truncateTo(cut, end); err != nil {
		return end, l.ioErr("truncate "+keep.log.Name(), err)
	}
	if err := l.step("write leader-epoch-checkpoint"); err != nil {
		return end, err
	}
	if err := l.writeEpochsIf(l.epochs.truncateFromEnd(end)); err != nil {
		return end, err
	}
	return end, l.rebuildProducerState(end)
}

// truncateFullyLocked is TruncateFullyAndStartAt holding the locks.
func (l *Log) truncateFullyLocked(offset int64) error {
	if err := l.step("remove snapshots"); err != nil {
		return err
	}
	if err := l.removeSnapshotsAbove(-1); err != nil {
		return l.ioErr("remove producer snapshots", err)
	}
	l.end.Store(offset)
	l.hw.Store(offset)
	l.recoveryPoint.Store(offset)
	l.logStart.Store(offset)
	segs := l.segments()
	for j := len(segs) - 1; j >= 0; j-- {
		if err := segs[j].renameFiles(deletedSuffix, l.step); err != nil {
			return l.ioErr("retire "+segs[j].log.Name(), err)
		}
	}
	if err := l.step("create segment"); err != nil {
		return err
	}
	seg, err := createSegment(l.dir, offset, l.cfg, l.logger)
	if err == nil {
		err = syncDir(l.dir)
	}
	if err != nil {
		return l.ioErr("create segment", err)
	}
	l.segs.Store(&[]*segment{seg})
	for _, s := range segs {
		if err := l.deleteLater(s); err != nil {
			return l.ioErr("delete "+s.log.Name(), err)
		}
	}
	if err := l.step("write leader-epoch-checkpoint"); err != nil {
		return err
	}
	l.epochs.set(nil)
	if err := l.writeEpochsIf(true); err != nil {
		return err
	}
	l.producers = newProducerState()
	l.txns.reset(nil)
	l.lastSnapOffset = offset
	return nil
}

// rebuildProducerState drops the producer snapshots above end and loads
// the state as of end again: the newest snapshot left, then the batches
// after it (Kafka's rebuildProducerState).
func (l *Log) rebuildProducerState(end int64) error {
	if err := l.step("remove snapshots"); err != nil {
		return err
	}
	if err := l.removeSnapshotsAbove(end); err != nil {
		return l.ioErr("remove producer snapshots", err)
	}
	l.producers = newProducerState()
	l.lastSnapOffset = 0
	return l.loadProducerState(nil)
}

// removeSnapshotsAbove deletes the producer snapshots taken above end.
func (l *Log) removeSnapshotsAbove(end int64) error {
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	for _, off := range offs {
		if off > end {
			if err := removeSnapshot(l.dir, off); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeEpochsIf rewrites leader-epoch-checkpoint when changed is set.
func (l *Log) writeEpochsIf(changed bool) error {
	if !changed {
		return nil
	}
	if err := l.epochs.write(); err != nil {
		return l.ioErr("write leader-epoch-checkpoint", err)
	}
	return nil
}

func (l *Log) step(what string) error {
	if l.testStep == nil {
		return nil
	}
	return l.testStep(what)
}

// truncateTo cuts the segment's .log at pos, a batch boundary, below which
// every batch ends before offset end, and fsyncs it; the index entries of
// the batches cut go, and the appender state (largest timestamp, bytes
// since the last index entry, roll time) is worked out again from what
// is left, as Kafka's LogSegment.truncateTo.
func (s *segment) truncateTo(pos, end int64) error {
	s.ensureLoaded()
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.mu.Lock()
	s.size.Store(pos)
	if err := s.log.Truncate(pos); err != nil {
		s.mu.Unlock()
		return err
	}
	n := sort.Search(len(s.idx.entries), func(i int) bool { return int64(s.idx.entries[i].pos) >= pos })
	s.idx.entries = s.idx.entries[:n]
	s.idx.written, s.idx.truncate = min(s.idx.written, n), true
	n = sort.Search(len(s.tidx.entries), func(i int) bool { return s.base+int64(s.tidx.entries[i].rel) >= end })
	s.tidx.entries = s.tidx.entries[:n]
	s.tidx.written, s.tidx.truncate = min(s.tidx.written, n), true
	s.txn.truncateTo(end)
	s.maxTs, s.maxTsOffset = s.tidx.lastEntry()
	s.rollTs = -1
	s.mu.Unlock()
	if _, err := s.scanTail(); err != nil {
		return fmt.Errorf("rescan after truncation: %w", err)
	}
	if err := s.log.Sync(); err != nil {
		return err
	}
	return s.persistIndexes(true)
}
