package logstore

// Moving a partition's log to another log dir (Kafka's
// AlterReplicaLogDirs), while the partition keeps serving.
//
// Kafka fills a future log in the destination from the current one with a
// fetcher and swaps them when it has caught up. Gregor copies the files:
//
//  1. With the log's cleanMu held (no cleaning, retention or truncation
//     meanwhile, so every byte already written stays as it is), the
//     segments' .log files are copied into <dest>/<topic>-<p>.<uuid>-future
//     up to the sizes read under the log's lock, in rounds, while appends go
//     on, until less than moveFinalBytes remain.
//  2. With the log's lock held (appends wait), the rest of each .log, every
//     other file of the partition (indexes, producer snapshots, the leader
//     epoch checkpoint, partition.metadata) is copied and everything fsynced.
//  3. The current dir is renamed to …-delete, then the future dir to
//     <topic>-<p>, each rename fsynced; the Log's segments are reopened from
//     the new dir, and the old ones' files are closed after
//     file.delete.delay.ms, so that reads in flight finish.
//
// A crash in step 1 or 2 leaves a …-future dir beside the current one:
// OpenDirs removes it and starts the move again, as Kafka resumes its
// future log. A crash between the two renames of step 3 leaves only the
// future dir, complete: OpenDirs renames it and opens it.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// moveFinalBytes is how much may be left to copy when appends are stopped
// for the last round. A log appended to faster than it can be copied (or
// than the throttle allows) is not moved, as in Kafka, whose future
// replica never catches up.
const moveFinalBytes = 1 << 20

// MoveThrottle bounds the bytes per second that moves copy
// (replica.alter.log.dirs.io.max.bytes.per.second; quota.Throttle).
type MoveThrottle interface {
	Exceeded(now time.Time) bool
	Record(bytes int64, now time.Time)
}

// SetMoveThrottle makes the copying while appends go on keep under t; the
// last round, with appends waiting, is never throttled.
func (ds *Dirs) SetMoveThrottle(t MoveThrottle) { ds.throttle.Store(&t) }

// waitThrottle waits while the throttle is over its bound.
func (ds *Dirs) waitThrottle(m *move) error {
	t := ds.throttle.Load()
	for t != nil && (*t).Exceeded(time.Now()) {
		if m.canceled.Load() {
			return errMoveCanceled
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// awaitMoveSlot waits until fewer than OpenOptions.MoveThreads logs are
// being copied and takes a slot, as Kafka's num.replica.alter.log.dirs.threads
// bound the fetchers that fill future logs; a move canceled meanwhile
// gives up.
func (ds *Dirs) awaitMoveSlot(m *move) error {
	for {
		select {
		case ds.moveSlots <- struct{}{}:
			return nil
		case <-time.After(10 * time.Millisecond):
			if m.canceled.Load() {
				return errMoveCanceled
			}
		}
	}
}

// throttled records bytes copied against the throttle.
func (ds *Dirs) throttled(n int64) {
	if t := ds.throttle.Load(); t != nil {
		(*t).Record(n, time.Now())
	}
}

// move is a log being copied to another dir.
type move struct {
	tp       TopicPartition
	to       *Dir
	future   string       // the …-future dir
	copied   atomic.Int64 // bytes of .log copied so far
	end      atomic.Int64 // the log end offset the copy has reached
	canceled atomic.Bool
	done     chan struct{}
}

var errMoveCanceled = errors.New("move canceled")

// LogMove is a move in progress, for DescribeLogDirs: the partition, its
// destination, the bytes copied and the offset reached so far.
type LogMove struct {
	Partition TopicPartition
	To        *Dir
	Size      int64
	End       int64
}

// MoveLog asks for the log of tp to live in the log dir at path (an
// absolute path, as Kafka requires), as AlterReplicaLogDirs does: a move
// to another dir starts in the background, a move elsewhere in progress is
// stopped first, and a log already there stays. A partition without a log
// here yet is created in that dir later, and the answer is
// REPLICA_NOT_AVAILABLE, as Kafka's. No move starts while a dir is offline.
func (ds *Dirs) MoveLog(tp TopicPartition, path string) error {
	if len(futureDirName(TopicPartition{Partition: tp.Partition}))+len(tp.Topic) > 255 { // first, as in Kafka
		return errorf(CodeInvalidTopic, "The topic name is too long.")
	}
	to := ds.byPath(path)
	if to == nil {
		return errorf(CodeLogDirNotFound, "Log dir %s is not found in the config.", path)
	}
	if to.Offline() != nil {
		return errorf(CodeKafkaStorageError, "Log dir %s is offline.", path)
	}
	if ds.Cordoned(to) {
		return errorf(CodeInvalidReplicaAssignment, "Log directory %s is cordoned", path)
	}
	for {
		ds.mu.Lock()
		m := ds.moves[tp]
		if m == nil || m.to == to {
			break
		}
		ds.mu.Unlock()
		ds.stopMove(tp)
	}
	defer ds.mu.Unlock()
	if ds.moves[tp] != nil {
		return nil
	}
	l := ds.logLocked(tp)
	if l == nil {
		ds.preferred[tp] = to
		return errorf(CodeReplicaNotAvailable, "Replica for %s is not available here yet; it will be created in %s.", tp, path)
	}
	if l.owner.Load() == to {
		return nil
	}
	if l.owner.Load().Offline() != nil {
		return errorf(CodeKafkaStorageError, "The log of %s is in an offline log dir.", tp)
	}
	// No future log while any dir is offline, as Kafka's LogManager: it
	// could otherwise end up in two dirs.
	for _, d := range ds.dirs {
		if d.Offline() != nil {
			return errorf(CodeKafkaStorageError, "Can not create the future log of %s because log dir %s is offline.", tp, d.path)
		}
	}
	m := &move{tp: tp, to: to, future: filepath.Join(to.path, futureDirName(tp)), done: make(chan struct{})}
	m.end.Store(l.LogStartOffset())
	ds.moves[tp] = m
	go ds.runMove(m, l)
	return nil
}

// stopMove cancels the move of tp, if any, and waits for it to end.
func (ds *Dirs) stopMove(tp TopicPartition) {
	ds.mu.Lock()
	m := ds.moves[tp]
	if m != nil {
		m.canceled.Store(true)
	}
	ds.mu.Unlock()
	if m != nil {
		<-m.done
	}
}

func (ds *Dirs) stopMoves() { ds.stopMovesOf(nil) }

// stopMovesOf stops the moves into d or out of it (every move for nil).
func (ds *Dirs) stopMovesOf(d *Dir) {
	ds.mu.Lock()
	var tps []TopicPartition
	for tp, m := range ds.moves {
		if l := ds.logLocked(tp); d == nil || m.to == d || (l != nil && l.owner.Load() == d) {
			tps = append(tps, tp)
		}
	}
	ds.mu.Unlock()
	for _, tp := range tps {
		ds.stopMove(tp)
	}
}

// Moves lists the moves in progress.
func (ds *Dirs) Moves() []LogMove {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var ms []LogMove
	for _, m := range ds.moves {
		ms = append(ms, LogMove{Partition: m.tp, To: m.to, Size: m.copied.Load(), End: m.end.Load()})
	}
	return ms
}

func (ds *Dirs) runMove(m *move, l *Log) {
	defer close(m.done)
	err := ds.awaitMoveSlot(m)
	if err == nil {
		err = ds.copyAndSwap(m, l)
		<-ds.moveSlots
	}
	ds.mu.Lock()
	delete(ds.moves, m.tp)
	ds.mu.Unlock()
	switch {
	case err == nil:
		ds.logger.Info("logstore: moved log", "partition", m.tp.String(), "to", m.to.path)
	case !errors.Is(err, errMoveCanceled):
		ds.logger.Error("logstore: moving log failed", "partition", m.tp.String(), "to", m.to.path, "err", err)
		ds.failWhere(err)
	}
}

// copyAndSwap does the three steps of the package comment above.
func (ds *Dirs) copyAndSwap(m *move, l *Log) (err error) {
	if err := os.RemoveAll(m.future); err != nil {
		return err
	}
	if err := os.Mkdir(m.future, 0o755); err != nil {
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			err = errors.Join(err, os.RemoveAll(m.future))
		}
	}()
	l.cleanPause.Add(1)
	l.cleanMu.Lock()
	l.cleanPause.Add(-1)
	defer l.cleanMu.Unlock()

	copied := map[int64]int64{} // segment base -> bytes of its .log copied
	buf := make([]byte, 1<<20)
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return errMoveCanceled
		}
		segs, sizes, end := l.segmentSizesLocked()
		l.mu.Unlock()
		left := int64(0)
		for i, s := range segs {
			left += sizes[i] - copied[s.base]
		}
		if left <= moveFinalBytes {
			break
		}
		for i, s := range segs {
			if err := m.copyLog(s, copied, sizes[i], buf, ds); err != nil {
				return err
			}
		}
		m.end.Store(end)
	}

	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || m.canceled.Load() {
		return errMoveCanceled
	}
	segs, sizes, _ := l.segmentSizesLocked()
	for i, s := range segs {
		if err := s.writeIndexes(false); err != nil {
			return storageErr("write indexes", err)
		}
		if err := m.copyLog(s, copied, sizes[i], buf, nil); err != nil {
			return err
		}
	}
	if err := copyOtherFiles(l.dir, m.future, buf); err != nil {
		return err
	}
	if err := syncFiles(m.future); err != nil {
		return err
	}

	moved := make([]*segment, len(segs))
	for i, s := range segs {
		if moved[i], err = reopenSegment(s, m.future, l.cfg); err != nil {
			for _, n := range moved[:i] {
				n.closeFiles()
			}
			return storageErr("open moved segment", err)
		}
	}
	closeMoved := func() {
		for _, n := range moved {
			n.closeFiles()
		}
	}

	ds.mu.Lock()
	defer ds.mu.Unlock()
	if m.canceled.Load() {
		closeMoved()
		return errMoveCanceled
	}
	from := l.owner.Load()
	doomed := filepath.Join(from.path, deleteDirName(l.tp))
	final := filepath.Join(m.to.path, partitionDirName(l.tp))
	if err := os.Rename(l.dir, doomed); err != nil {
		closeMoved()
		return storageErr("rename "+l.dir, err)
	}
	err = syncDir(from.path)
	if err == nil {
		err = os.Rename(m.future, final)
	}
	if err != nil {
		closeMoved()
		if uerr := os.Rename(doomed, l.dir); uerr != nil {
			// The complete copy stays as the future dir, which the next
			// start makes the partition's dir (recoverMoves).
			swapped = true
			err = errors.Join(err, uerr)
		}
		return storageErr("move "+l.dir, err)
	}
	swapped = true
	if err := syncDir(m.to.path); err != nil {
		ds.logger.Error("logstore: fsync after moving a log", "dir", m.to.path, "err", err)
	}
	for _, n := range moved {
		n.setDir(final)
	}
	l.segs.Store(&moved)
	l.dir = final
	l.epochs.path = filepath.Join(final, leaderEpochFile)
	m.to.mu.Lock()
	m.to.logs[l.tp] = l
	m.to.mu.Unlock()
	l.owner.Store(m.to)
	from.mu.Lock()
	delete(from.logs, l.tp)
	from.mu.Unlock()
	from.cleaner.handOver(l.tp, m.to.cleaner)

	delay := time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond
	for _, s := range segs {
		s.setDir(doomed) // its files were renamed with the dir
		from.deleter.later(s, delay)
	}
	time.AfterFunc(delay, func() {
		if err := os.RemoveAll(doomed); err != nil {
			ds.logger.Warn("logstore: could not remove moved log", "dir", doomed, "err", err)
		}
	})
	return errors.Join(from.checkpointIfOpen(), m.to.checkpointIfOpen())
}

// segmentSizesLocked returns the segments, the bytes of whole batches in
// each and the log end offset, as of now; the caller holds l.mu.
func (l *Log) segmentSizesLocked() ([]*segment, []int64, int64) {
	segs := l.segments()
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size.Load()
	}
	return segs, sizes, l.end.Load()
}

// copyLog copies the .log of s into the future dir from copied[s.base] up
// to size, checking between chunks whether the move was canceled, and
// keeping under the throttle of ds unless it is nil.
func (m *move) copyLog(s *segment, copied map[int64]int64, size int64, buf []byte, ds *Dirs) error {
	from := copied[s.base]
	dst, err := os.OpenFile(segmentPath(m.future, s.base, logSuffix), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer dst.Close()
	for from < size {
		if m.canceled.Load() {
			return errMoveCanceled
		}
		n := min(int64(len(buf)), size-from)
		if ds != nil {
			if err := ds.waitThrottle(m); err != nil {
				return err
			}
			ds.throttled(n)
		}
		if _, err := s.log.ReadAt(buf[:n], from); err != nil {
			return storageErr("read "+s.log.Name(), err)
		}
		if _, err := dst.WriteAt(buf[:n], from); err != nil {
			return storageErr("write "+dst.Name(), err)
		}
		from += n
		copied[s.base] = from
		m.copied.Add(n)
	}
	return nil
}

// copyOtherFiles copies every file of a partition dir but the .log files
// (copied already) and the leftovers of deletions and temporary writes.
func copyOtherFiles(src, dst string, buf []byte) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, logSuffix) || strings.HasSuffix(name, deletedSuffix) ||
			strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name), buf); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, buf []byte) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyBuffer(out, in, buf)
	return errors.Join(err, out.Close())
}

// syncFiles fsyncs every file in dir, then dir itself.
func syncFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return storageErr("fsync "+f.Name(), err)
		}
	}
	return syncDir(dir)
}

// reopenSegment opens the copy of s in dir with s's state in memory: its
// indexes (already written to the copied files) and the appender's fields.
func reopenSegment(s *segment, dir string, cfg Config) (*segment, error) {
	n, err := openSegmentFiles(dir, s.base, cfg, false, s.logger)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n.loaded = s.loaded
	n.idx.entries, n.idx.written = s.idx.entries, s.idx.written
	n.tidx.entries, n.tidx.written = s.tidx.entries, s.tidx.written
	n.txn.entries, n.txn.written = s.txn.entries, s.txn.written
	n.maxTs, n.maxTsOffset = s.maxTs, s.maxTsOffset
	n.bytesSinceIndex, n.rollTs, n.created, n.rollJitterMs = s.bytesSinceIndex, s.rollTs, s.created, s.rollJitterMs
	n.size.Store(s.size.Load())
	return n, nil
}

// setDir points the segment at its files in dir, where they were moved.
func (s *segment) setDir(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dir = dir
	s.idx.path = segmentPath(dir, s.base, indexSuffix+s.suffix)
	s.tidx.path = segmentPath(dir, s.base, timeIndexSuffix+s.suffix)
	s.txn.path = segmentPath(dir, s.base, txnIndexSuffix+s.suffix)
}

// checkpointIfOpen writes the dir's checkpoints unless it is closed.
func (d *Dir) checkpointIfOpen() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	return d.checkpointLocked()
}

// recoverMoves deals with the …-future dirs a crash left (see the package
// comment above): one beside its partition's current dir is removed and
// its move returned to be started again; one whose partition has no
// current dir any more is complete and becomes the partition's dir.
func (ds *Dirs) recoverMoves(owner map[TopicPartition]*Dir, defaults Config) (map[TopicPartition]*Dir, error) {
	restart := map[TopicPartition]*Dir{}
	for _, d := range ds.Online() {
		ents, err := dirEntries(d.path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.HasSuffix(e.Name(), futureDirSuffix) {
				continue
			}
			path := filepath.Join(d.path, e.Name())
			tp, ok := parseFutureDirName(e.Name())
			if !ok || owner[tp] != nil {
				if err := os.RemoveAll(path); err != nil {
					return nil, err
				}
				if ok && owner[tp] != d {
					restart[tp] = d
				}
				continue
			}
			if len(ds.Online()) < len(ds.dirs) {
				// Its log may be in the dir that failed to open: the
				// copy may not be whole, so it is neither adopted nor
				// removed until every dir opens.
				ds.logger.Warn("logstore: leaving a moved log's copy while a log dir is offline", "dir", path)
				continue
			}
			if err := d.adoptMovedLog(path, tp, defaults); err != nil {
				return nil, fmt.Errorf("finishing the move of %s to %s: %w", tp, d.path, err)
			}
			owner[tp] = d
		}
	}
	return restart, nil
}

// adoptMovedLog renames a complete future dir to the partition's dir and
// opens the log in it, recovering it whole.
func (d *Dir) adoptMovedLog(future string, tp TopicPartition, defaults Config) error {
	final := filepath.Join(d.path, partitionDirName(tp))
	if err := os.Rename(future, final); err != nil {
		return err
	}
	if err := syncDir(d.path); err != nil {
		return err
	}
	l, err := openLog(final, tp, defaults, loadState{recoveryPoint: -1, logStart: -1, highWatermark: -1, logger: d.logger})
	if err != nil {
		return err
	}
	l.owner.Store(d)
	d.mu.Lock()
	d.logs[tp] = l
	d.mu.Unlock()
	return nil
}
