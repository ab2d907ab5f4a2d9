package logstore

// Retention and DeleteRecords: the log start offset moves forward, and
// whole segments below it or past the topic's retention limits go.
//
// Every retention check (log.retention.check.interval.ms) the Dir runs
// Kafka's UnifiedLog.deleteOldSegments on each log without the compact
// policy, and the cleaner's threads run it on the compacted logs after
// each attempt to clean (cleaner.go), as Kafka's: segments wholly below
// the log start offset always go; with the delete policy also the oldest
// segments while the log is larger than retention.bytes by at least their
// size, and those whose largest timestamp is more than retention.ms old.
// Segments are taken from the start of the log only, stopping at the first
// that is kept, and never one reaching past the high watermark. When every
// segment is to go, a new empty segment is rolled first so the log always
// has one (Kafka deletes the active segment this way once all of it has
// expired). The log start offset moves to the first remaining segment,
// the leader epoch cache is cut from the start, producer snapshots below it
// are removed, and the segment files are renamed *.deleted and removed
// file.delete.delay.ms later, so reads already holding them finish.

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// DefaultRetentionCheckInterval is log.retention.check.interval.ms's default.
const DefaultRetentionCheckInterval = 5 * time.Minute

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords),
// never back, and writes log-start-offset-checkpoint; the segments wholly
// below the new start are deleted by the next retention pass, which it
// starts (a compacted log's by the cleaner's next pass). offset -1 means the high watermark (DeleteRecordsRequest's
// HIGH_WATERMARK). An offset above the high watermark, or negative, is
// refused with OFFSET_OUT_OF_RANGE. It returns the log start offset (the
// low watermark of the DeleteRecords response).
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	if err := l.unusable(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	hw := l.hw.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		l.mu.Unlock()
		return l.logStart.Load(), errorf(CodeOffsetOutOfRange,
			"cannot move the log start offset of %s to %d: it is above the high watermark %d", l.tp, offset, hw)
	}
	moved := offset > l.logStart.Load()
	var err error
	if moved {
		err = l.moveStartLocked(offset)
	}
	start := l.logStart.Load()
	l.mu.Unlock()
	if owner := l.owner.Load(); moved && owner != nil {
		err = errors.Join(err, owner.logStartMoved())
	}
	return start, err
}

// moveStartLocked raises the log start offset and cuts the leader epoch
// cache from the start, as Kafka's maybeIncrementLogStartOffset.
func (l *Log) moveStartLocked(start int64) error {
	l.logStart.Store(start)
	if l.recoveryPoint.Load() < start {
		l.recoveryPoint.Store(start) // nothing below it is read again
	}
	if l.epochs.truncateFromStart(start) {
		if err := l.epochs.write(); err != nil {
			return l.ioErr("write leader-epoch-checkpoint", err)
		}
	}
	return nil
}

// deleteOldSegments is one retention pass over the log at time now (unix
// ms); it reports how many segments went. Callers hold l.cleanMu.
func (l *Log) deleteOldSegments(now int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unusable() != nil {
		return 0, nil
	}
	cfg := l.cfg
	total := 0
	run := func(shouldDelete func(s, next *segment) bool) error {
		n := l.deletableLocked(shouldDelete)
		if n == 0 {
			return nil
		}
		total += n
		return l.deleteSegmentsLocked(n)
	}
	start := l.logStart.Load()
	err := run(func(_, next *segment) bool { return next != nil && next.base <= start })
	if err == nil && cfg.Delete && cfg.RetentionBytes >= 0 {
		if over := l.Size() - cfg.RetentionBytes; over >= 0 {
			err = run(func(s, _ *segment) bool {
				if over-s.size.Load() < 0 {
					return false
				}
				over -= s.size.Load()
				return true
			})
		}
	}
	if err == nil && cfg.Delete && cfg.RetentionMs >= 0 {
		err = run(func(s, _ *segment) bool { return now-s.largestTimestamp() > cfg.RetentionMs })
	}
	return total, err
}

// deletableLocked counts the segments from the start of the log that
// shouldDelete accepts, stopping at the first it refuses, at one reaching
// past the high watermark, and before an empty last segment (Kafka's
// UnifiedLog.deletableSegments).
func (l *Log) deletableLocked(shouldDelete func(s, next *segment) bool) int {
	segs := l.segments()
	hw, end := l.hw.Load(), l.end.Load()
	n := 0
	for i, s := range segs {
		var next *segment
		upper := end
		if i+1 < len(segs) {
			next, upper = segs[i+1], segs[i+1].base
		}
		if hw < upper || (next == nil && s.size.Load() == 0) || !shouldDelete(s, next) {
			break
		}
		n++
	}
	return n
}

// deleteSegmentsLocked takes the first n segments out of the log (rolling
// a new segment first when that is all of them), moves the log start to
// the first one left and hands the files to the delayed deleter.
func (l *Log) deleteSegmentsLocked(n int) error {
	if n == len(l.segments()) {
		if _, err := l.roll(l.end.Load()); err != nil {
			return err
		}
	}
	segs := l.segments()
	doomed, rest := segs[:n], slices.Clone(segs[n:])
	l.segs.Store(&rest)
	var errs []error
	if first := rest[0].base; first > l.logStart.Load() {
		errs = append(errs, l.moveStartLocked(first))
	}
	for _, s := range doomed {
		errs = append(errs, l.retireSegment(s))
	}
	errs = append(errs, l.removeSnapshotsBelow(l.logStart.Load()))
	if err := errors.Join(errs...); err != nil {
		return l.ioErr("delete segments of "+l.tp.String(), err)
	}
	return nil
}

// retireSegment renames a segment no longer in the list to *.deleted and
// schedules the removal of its files.
func (l *Log) retireSegment(s *segment) error {
	err := s.renameFiles(deletedSuffix, noStep)
	return errors.Join(err, l.deleteLater(s))
}

// deleteLater removes a retired segment's files after
// file.delete.delay.ms (at once for a log outside a Dir).
func (l *Log) deleteLater(s *segment) error {
	owner := l.owner.Load()
	if owner == nil {
		return s.removeFiles()
	}
	owner.deleter.later(s, time.Duration(l.cfg.FileDeleteDelayMs)*time.Millisecond)
	return nil
}

// removeSnapshotsBelow deletes the producer snapshots older than the log start.
func (l *Log) removeSnapshotsBelow(start int64) error {
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	for _, off := range offs {
		if off < start {
			if err := removeSnapshot(l.dir, off); err != nil {
				return err
			}
		}
	}
	return nil
}

func noStep(string) error { return nil }

// fileDeleter removes the files of retired segments after their delay
// (Kafka's asynchronous segment deletion). A crash before then leaves the
// *.deleted files, which OpenDir removes.
type fileDeleter struct {
	mu      sync.Mutex
	pending map[*segment]*time.Timer
	closed  bool
}

func newFileDeleter() *fileDeleter { return &fileDeleter{pending: map[*segment]*time.Timer{}} }

// later removes s's files after delay (at once when delay <= 0 or the
// deleter is closed).
func (fd *fileDeleter) later(s *segment, delay time.Duration) {
	fd.mu.Lock()
	if fd.closed || delay <= 0 {
		fd.mu.Unlock()
		removeRetired(s)
		return
	}
	fd.pending[s] = time.AfterFunc(delay, func() { fd.run(s) })
	fd.mu.Unlock()
}

func (fd *fileDeleter) run(s *segment) {
	fd.mu.Lock()
	_, ok := fd.pending[s]
	delete(fd.pending, s)
	fd.mu.Unlock()
	if ok {
		removeRetired(s)
	}
}

func removeRetired(s *segment) {
	if err := s.removeFiles(); err != nil {
		s.logger.Warn("logstore: could not remove deleted segment", "segment", filepath.Join(s.dir, offsetName(s.base)), "err", err)
	}
}

// flush removes every pending segment now (on Close no read is in flight
// any more); later calls remove at once.
func (fd *fileDeleter) flush() {
	fd.mu.Lock()
	pending := fd.pending
	fd.pending, fd.closed = map[*segment]*time.Timer{}, true
	fd.mu.Unlock()
	for s, t := range pending {
		t.Stop()
		removeRetired(s)
	}
}

// abandon stops the timers and closes the files without removing them, as
// a crash would (for tests).
func (fd *fileDeleter) abandon() {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	for s, t := range fd.pending {
		t.Stop()
		s.closeFiles()
	}
	fd.pending, fd.closed = map[*segment]*time.Timer{}, true
}

// pendingDeletes is how many retired segments wait for their delay (for tests).
func (fd *fileDeleter) pendingDeletes() int {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return len(fd.pending)
}
