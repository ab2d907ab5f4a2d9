package logstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// segment is one .log file with its .index and .timeindex, and its
// .txnindex when it holds aborted transactions' markers.
type segment struct {
	base   int64
	dir    string
	suffix string // added to the file names: "", or .cleaned/.swap/.deleted while being swapped or deleted
	log    *os.File
	raw    syscall.RawConn // log's, made once for FileRange
	size   atomic.Int64    // bytes of whole batches readers may see
	logger *slog.Logger    // its log's

	ioMu        sync.Mutex   // serialises writes of the index files (persistIndexes)
	mu          sync.RWMutex // guards the fields below
	loaded      bool         // indexes read into memory
	idx         offsetIndex
	tidx        timeIndex
	txn         txnIndex // read when the segment is opened, not when loaded
	maxTs       int64    // largest batch maxTimestamp so far, -1 none
	maxTsOffset int64    // last offset of the batch that had it

	// Appender state, guarded by Log.mu.
	bytesSinceIndex int64
	rollTs          int64 // maxTimestamp of the first batch, -1 none
	created         time.Time
	rollJitterMs    int64 // taken off SegmentMs for this segment
}

// appendedBatch describes one batch of an append for the indexes.
type appendedBatch struct {
	lastOffset int64
	maxTs      int64
	size       int64
}

func indexEntries(maxBytes, entrySize int) int { return max(maxBytes, 0) / entrySize }

// openSegmentFiles opens (creating if need be) the three files of a segment.
func openSegmentFiles(dir string, base int64, cfg Config, create bool, logger *slog.Logger) (*segment, error) {
	return openSegmentFilesSuffix(dir, base, "", cfg, create, logger)
}

// openSegmentFilesSuffix is openSegmentFiles for files named with an extra
// suffix (.cleaned for a segment the cleaner writes).
func openSegmentFilesSuffix(dir string, base int64, suffix string, cfg Config, create bool, logger *slog.Logger) (*segment, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_TRUNC
	}
	lf, err := os.OpenFile(segmentPath(dir, base, logSuffix+suffix), flags, 0o644)
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, dir: dir, suffix: suffix, log: lf, maxTs: -1, maxTsOffset: base, rollTs: -1, created: time.Now(),
		rollJitterMs: cfg.randomRollJitter(), logger: logger}
	if s.raw, err = lf.SyscallConn(); err != nil {
		lf.Close()
		return nil, err
	}
	s.idx = offsetIndex{base: base, maxEntries: indexEntries(cfg.SegmentIndexBytes, offsetEntrySize)}
	s.tidx = timeIndex{base: base, maxEntries: indexEntries(cfg.SegmentIndexBytes, timeEntrySize)}
	s.idx.path = segmentPath(dir, base, indexSuffix+suffix)
	s.tidx.path = segmentPath(dir, base, timeIndexSuffix+suffix)
	s.txn.path = segmentPath(dir, base, txnIndexSuffix+suffix)
	if create { // the index files exist, empty, from the start; a .txnindex once needed
		err = errors.Join(createEmpty(s.idx.path), createEmpty(s.tidx.path), removeIfExists(s.txn.path))
	}
	if err == nil {
		var st os.FileInfo
		if st, err = lf.Stat(); err == nil {
			s.size.Store(st.Size())
		}
	}
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// createEmpty creates or empties a file, leaving it closed.
func createEmpty(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// createSegment makes a new, empty segment.
func createSegment(dir string, base int64, cfg Config, logger *slog.Logger) (*segment, error) {
	s, err := openSegmentFiles(dir, base, cfg, true, logger)
	if err != nil {
		return nil, err
	}
	s.loaded = true
	return s, nil
}

// loadIndexes reads both indexes and checks them against the log: every
// position inside it, offsets from the base on. The caller rebuilds the
// segment when this fails.
func (s *segment) loadIndexes() error {
	if err := s.idx.load(); err != nil {
		return err
	}
	if err := s.tidx.load(); err != nil {
		return err
	}
	if e, ok := s.idx.last(); ok && int64(e.pos) >= s.size.Load() {
		return fmt.Errorf("index %s: position %d beyond the log's %d bytes", s.idx.path, e.pos, s.size.Load())
	}
	s.maxTs, s.maxTsOffset = s.tidx.lastEntry()
	s.loaded = true
	return nil
}

// ensureLoaded reads the indexes of a segment opened lazily. An index found
// corrupt this late is dropped (lookups then scan from the start) and
// rebuilt at the next recovery.
func (s *segment) ensureLoaded() {
	s.mu.RLock()
	ok := s.loaded
	s.mu.RUnlock()
	if ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return
	}
	if err := s.loadIndexes(); err != nil {
		s.logger.Warn("logstore: ignoring corrupt index", "segment", s.log.Name(), "err", err)
		s.idx.entries, s.tidx.entries = nil, nil
		s.maxTs, s.maxTsOffset = -1, s.base
		s.loaded = true
	}
}

// loadTxnIndex reads the segment's .txnindex into memory.
func (s *segment) loadTxnIndex() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txn.load()
}

// lookup returns the position to start scanning from for offset.
func (s *segment) lookup(offset int64) int64 {
	s.ensureLoaded()
	s.mu.RLock()
	_, pos := s.idx.lookup(offset)
	s.mu.RUnlock()
	return pos
}

// maxTimestamp returns the largest batch timestamp in the segment and the
// last offset of the batch holding it ((-1, base) when there is none).
func (s *segment) maxTimestamp() (int64, int64) {
	s.ensureLoaded()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxTs, s.maxTsOffset
}

// append writes data (whole batches, described by batches) at the end of
// the segment and adds index entries; it does not publish the new size.
func (s *segment) append(data []byte, batches []appendedBatch, indexInterval int) (int64, error) {
	pos := s.size.Load()
	if _, err := s.log.WriteAt(data, pos); err != nil {
		_ = s.log.Truncate(pos)
		return pos, err
	}
	if pos == 0 && len(batches) > 0 {
		s.rollTs = batches[0].maxTs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range batches {
		if err := s.indexBatch(b, pos, indexInterval); err != nil {
			return pos, err
		}
		pos += b.size
	}
	return pos, nil
}

// indexBatch is Kafka's per-batch index rule, shared by append and recovery.
func (s *segment) indexBatch(b appendedBatch, pos int64, indexInterval int) error {
	if b.maxTs > s.maxTs {
		s.maxTs, s.maxTsOffset = b.maxTs, b.lastOffset
	}
	if s.bytesSinceIndex > int64(indexInterval) {
		if err := s.idx.append(b.lastOffset, pos); err != nil {
			return err
		}
		if err := s.tidx.maybeAppend(s.maxTs, s.maxTsOffset); err != nil {
			return err
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += b.size
	return nil
}

// recoverResult is what scanning a segment learned.
type recoverResult struct {
	truncated  int64 // bytes cut from the end
	nextOffset int64 // offset after the last valid batch (base when empty)
}

// recover rebuilds the indexes from the log, checking each batch's length,
// magic and CRC, and cuts the log at the first batch that fails. onBatch
// sees every valid batch in order.
func (s *segment) recover(indexInterval int, onBatch func(h *protocol.BatchHeader, batch []byte)) (recoverResult, error) {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	res, err := s.rebuild(indexInterval, onBatch)
	if err != nil {
		return res, err
	}
	// Written now (not fsynced): the files must not keep stale entries.
	return res, s.persistIndexes(false)
}

// rebuild is recover without writing the index files.
func (s *segment) rebuild(indexInterval int, onBatch func(h *protocol.BatchHeader, batch []byte)) (recoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := recoverResult{nextOffset: s.base}
	s.idx.reset()
	s.tidx.reset()
	s.maxTs, s.maxTsOffset, s.bytesSinceIndex, s.rollTs = -1, s.base, 0, -1
	st, err := s.log.Stat()
	if err != nil {
		return res, err
	}
	sc := newScanner(s.log, 0, st.Size(), 1<<20)
	valid := int64(0)
	for {
		h, pos, err := sc.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			var batch []byte
			if batch, err = sc.batch(&h, pos); err == nil && protocol.BatchCRC(batch) != h.CRC {
				err = errTorn
			}
			if err == nil && (h.BaseOffset < res.nextOffset || !s.idx.canAppend(h.LastOffset())) {
				err = errTorn // offsets must increase and fit the segment
			}
			if err == nil {
				if valid == 0 {
					s.rollTs = h.MaxTimestamp
				}
				if err = s.indexBatch(appendedBatch{h.LastOffset(), h.MaxTimestamp, int64(h.Size())}, pos, indexInterval); err != nil {
					return res, err
				}
				if onBatch != nil {
					onBatch(&h, batch)
				}
				valid = pos + int64(h.Size())
				res.nextOffset = h.LastOffset() + 1
				continue
			}
		}
		if !errors.Is(err, errTorn) {
			return res, err
		}
		s.logger.Warn("logstore: invalid batch found during recovery, truncating", "segment", s.log.Name(), "position", pos)
		break
	}
	res.truncated = st.Size() - valid
	if res.truncated > 0 {
		if err := s.log.Truncate(valid); err != nil {
			return res, err
		}
	}
	s.size.Store(valid)
	if err := s.tidx.maybeAppend(s.maxTs, s.maxTsOffset); err != nil {
		return res, err
	}
	s.loaded = true
	return res, nil
}

// scanTail finds the offset after the segment's last batch by walking the
// headers from its last index entry, and picks up the max timestamp of the
// batches after it. It is used for the active segment on a clean open.
func (s *segment) scanTail() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.base
	start := int64(0)
	if e, ok := s.idx.last(); ok {
		start = int64(e.pos)
	}
	size := s.size.Load()
	sc := newScanner(s.log, start, size, 64<<10)
	for {
		h, pos, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if pos == 0 {
			s.rollTs = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.LastOffset()
		}
		next = h.LastOffset() + 1
	}
	s.bytesSinceIndex = size - start
	if s.rollTs < 0 && size > 0 {
		h, _, err := newScanner(s.log, 0, size, protocol.BatchHeaderSize).next()
		if err != nil {
			return 0, err
		}
		s.rollTs = h.MaxTimestamp
	}
	return next, nil
}

// finish adds the last time index entry, as Kafka does when a segment
// stops being active (roll) or is closed, and writes the index entries not
// yet in the files (without fsync).
func (s *segment) finish() error {
	s.mu.Lock()
	if !s.loaded {
		s.mu.Unlock()
		return nil
	}
	err := s.tidx.maybeAppend(s.maxTs, s.maxTsOffset)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.writeIndexes(false)
}

// sync fsyncs the .log, then writes the pending index entries and fsyncs
// the index files if they changed since their last fsync. Only after this
// may the recovery point move past the segment's data.
func (s *segment) sync() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	return s.writeIndexes(true)
}

// writeIndexes is persistIndexes for callers not holding ioMu.
func (s *segment) writeIndexes(sync bool) error {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	return s.persistIndexes(sync)
}

// persistIndexes writes the index entries added since the last write to
// the index files (cutting them after a reset), opening each file only for
// that, and fsyncs them when sync is set. The entries are copied under mu
// and written outside it, so appends and lookups do not wait for the disk.
// The caller holds ioMu.
func (s *segment) persistIndexes(sync bool) error {
	s.mu.RLock()
	if !s.loaded { // nothing added since the files were written
		s.mu.RUnlock()
		return nil
	}
	oPath, oFrom, oN, oCut := s.idx.path, s.idx.written, len(s.idx.entries), s.idx.truncate
	oData := pending(&s.idx.indexFile, s.idx.entries, offsetEntrySize, putOffsetEntry)
	tPath, tFrom, tN, tCut := s.tidx.path, s.tidx.written, len(s.tidx.entries), s.tidx.truncate
	tData := pending(&s.tidx.indexFile, s.tidx.entries, timeEntrySize, putTimeEntry)
	xPath, xFrom, xN, xCut := s.txn.path, s.txn.written, len(s.txn.entries), s.txn.truncate
	xData := pending(&s.txn.indexFile, s.txn.entries, txnIndexEntrySize, putAbortedTxn)
	s.mu.RUnlock()
	if err := s.idx.write(oPath, oData, oFrom, oN, offsetEntrySize, oCut, sync); err != nil {
		return err
	}
	if err := s.tidx.write(tPath, tData, tFrom, tN, timeEntrySize, tCut, sync); err != nil {
		return err
	}
	if err := s.txn.persist(xPath, xData, xFrom, xN, xCut, sync); err != nil {
		return err
	}
	s.mu.Lock()
	s.idx.written, s.tidx.written, s.txn.written = oN, tN, xN
	s.idx.truncate = s.idx.truncate && !oCut
	s.tidx.truncate = s.tidx.truncate && !tCut
	s.txn.truncate = s.txn.truncate && !xCut
	s.mu.Unlock()
	return nil
}

// closeFiles closes the .log, the one file a segment keeps open.
func (s *segment) closeFiles() error {
	if s.log == nil {
		return nil
	}
	return s.log.Close()
}

// segmentFileSuffixes are a segment's files, in the order they are renamed:
// the .log first, so that a .log.swap beside a .index.cleaned tells the
// loader that the rename to .swap did not finish (see swap.go).
var segmentFileSuffixes = [...]string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix}

// removeFiles closes and deletes the segment's files.
func (s *segment) removeFiles() error {
	err := s.closeFiles()
	for _, suffix := range segmentFileSuffixes {
		if e := os.Remove(segmentPath(s.dir, s.base, suffix+s.suffix)); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	return err
}

// renameFiles changes the extra suffix of the segment's files (Kafka's
// LogSegment.changeFileSuffixes), calling step before each rename so that
// tests can stop the process between any two of them. Open handles keep
// working: readers in flight are not disturbed.
func (s *segment) renameFiles(to string, step func(string) error) error {
	s.mu.Lock() // index files are opened by path under mu
	defer s.mu.Unlock()
	for _, suffix := range segmentFileSuffixes {
		from := segmentPath(s.dir, s.base, suffix+s.suffix)
		if err := step("rename " + filepath.Base(from) + " to " + to); err != nil {
			return err
		}
		if err := os.Rename(from, segmentPath(s.dir, s.base, suffix+to)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	s.suffix = to
	s.idx.path = segmentPath(s.dir, s.base, indexSuffix+to)
	s.tidx.path = segmentPath(s.dir, s.base, timeIndexSuffix+to)
	s.txn.path = segmentPath(s.dir, s.base, txnIndexSuffix+to)
	return nil
}

// lastModified is the .log file's modification time in unix ms (0 if unknown).
func (s *segment) lastModified() int64 {
	st, err := s.log.Stat()
	if err != nil {
		return 0
	}
	return st.ModTime().UnixMilli()
}

// largestTimestamp is Kafka's LogSegment.largestTimestamp: the largest
// record timestamp, or the file's modification time when no record has one.
func (s *segment) largestTimestamp() int64 {
	if ts, _ := s.maxTimestamp(); ts >= 0 {
		return ts
	}
	return s.lastModified()
}

// batchAt finds the first batch at or after pos (a batch boundary) whose
// last offset is >= offset, scanning at most up to end. found is false when
// there is none.
func (s *segment) batchAt(offset, pos, end int64) (h protocol.BatchHeader, at int64, found bool, err error) {
	sc := borrowScanner(s.log, pos, end)
	defer sc.release()
	for {
		h, at, err = sc.next()
		if err == io.EOF {
			return h, at, false, nil
		}
		if err != nil {
			return h, at, false, err
		}
		if h.LastOffset() >= offset {
			return h, at, true, nil
		}
	}
}

// indexBytes is the size of the segment's .index and .timeindex.
func (s *segment) indexBytes() (int64, int64) {
	s.ensureLoaded()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return int64(len(s.idx.entries)) * offsetEntrySize, int64(len(s.tidx.entries)) * timeEntrySize
}

// firstBatchTimestamp is the maxTimestamp of the segment's first batch
// (Kafka's LogSegment.getFirstBatchTimestamp), -1 when it has none.
func (s *segment) firstBatchTimestamp() int64 {
	if s.size.Load() < protocol.BatchHeaderSize {
		return -1
	}
	b := make([]byte, protocol.BatchHeaderSize)
	if _, err := s.log.ReadAt(b, 0); err != nil {
		return -1
	}
	return decodeHeader(b).MaxTimestamp
}
