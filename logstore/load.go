package logstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// loadState is what the Dir knows about a partition from its checkpoints.
type loadState struct {
	clean         bool  // the dir was shut down cleanly
	recoveryPoint int64 // -1: unknown (recover everything)
	logStart      int64 // -1: unknown
	highWatermark int64 // -1: unknown
	logger        *slog.Logger
}

// createLog makes a new partition directory with an empty first segment.
// With epoch >= 0 its leader-epoch-checkpoint already says that epoch
// starts at offset 0; otherwise the checkpoint is empty, as Kafka creates
// it. The files are fsynced, then the directory once; the caller fsyncs
// the parent.
func createLog(dir string, tp TopicPartition, topicID [16]byte, cfg Config, epoch int32, logger *slog.Logger) (*Log, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	meta := "version: 0\ntopic_id: " + UUIDString(topicID)
	if err := replaceFile(filepath.Join(dir, partitionMetaFile), []byte(meta)); err != nil {
		return nil, err
	}
	l := newLog(dir, tp, topicID, cfg, logger)
	l.epochs = &epochCache{path: filepath.Join(dir, leaderEpochFile)}
	if l.epochs.assign(epoch, 0) {
		if err := replaceFile(l.epochs.path, l.epochs.bytes()); err != nil {
			return nil, err
		}
	} else if err := os.WriteFile(l.epochs.path, nil, 0o644); err != nil {
		return nil, err
	}
	seg, err := createSegment(dir, 0, cfg, l.logger)
	if err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		seg.closeFiles()
		return nil, err
	}
	l.segs.Store(&[]*segment{seg})
	return l, nil
}

// newLog is a Log without segments; a nil logger is slog.Default().
func newLog(dir string, tp TopicPartition, topicID [16]byte, cfg Config, logger *slog.Logger) *Log {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{tp: tp, dir: dir, topicID: topicID, cfg: cfg.withDefaults(), producers: newProducerState(), txns: newTxnState(), logger: logger}
	l.lastFlush.Store(time.Now().UnixMilli())
	l.notCompact.Store(!l.cfg.Compact)
	return l
}

// readPartitionMetadata returns the topic id in partition.metadata (zero
// when the file is missing).
func readPartitionMetadata(dir string) ([16]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return [16]byte{}, nil
	}
	if err != nil {
		return [16]byte{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id:"); ok {
			return ParseUUID(strings.TrimSpace(v))
		}
	}
	return [16]byte{}, fmt.Errorf("%s: no topic_id", filepath.Join(dir, partitionMetaFile))
}

// openLog loads an existing partition directory, recovering it when the
// last shutdown was not clean.
func openLog(dir string, tp TopicPartition, cfg Config, st loadState) (*Log, error) {
	topicID, err := readPartitionMetadata(dir)
	if err != nil {
		return nil, err
	}
	l := newLog(dir, tp, topicID, cfg, st.logger)
	if l.epochs, err = loadEpochCache(dir); err != nil {
		return nil, err
	}
	bases, missingIndex, hasTxnIndex, err := scanPartitionDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	fail := func(err error) (*Log, error) {
		for _, s := range segs {
			s.closeFiles()
		}
		return nil, err
	}
	badTxnIndex := map[int64]bool{}
	for _, base := range bases {
		s, err := openSegmentFiles(dir, base, l.cfg, false, l.logger)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
		if hasTxnIndex[base] {
			if err := s.loadTxnIndex(); err != nil {
				l.logger.Warn("logstore: rebuilding transaction index", "segment", s.log.Name(), "err", err)
				badTxnIndex[base] = true
			}
		}
	}
	if len(segs) == 0 {
		s, err := createSegment(dir, max(st.logStart, 0), l.cfg, l.logger)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
	}

	// Which segments to scan: after an unclean shutdown, all from the one
	// holding the recovery point; always those whose indexes are missing
	// or do not check out.
	firstRecover := len(segs)
	if !st.clean {
		firstRecover = 0
		if st.recoveryPoint >= 0 {
			firstRecover = floorSegment(segs, st.recoveryPoint)
		}
	}
	end := int64(-1)
	rebuilt := map[*segment]bool{} // their .txnindex is rebuilt by loadProducerState
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		recover := i >= firstRecover || missingIndex[s.base] || badTxnIndex[s.base]
		if !recover {
			if err := checkIndexes(s, i == len(segs)-1); err != nil {
				l.logger.Warn("logstore: rebuilding index", "segment", s.log.Name(), "err", err)
				recover = true
			}
		}
		if !recover {
			continue
		}
		l.recoveredSegments++
		rebuilt[s] = true
		res, err := s.recover(l.cfg.IndexIntervalBytes, func(h *protocol.BatchHeader, _ []byte) {
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		})
		if err != nil {
			return fail(storageErr("recover "+s.log.Name(), err))
		}
		if i == len(segs)-1 {
			end = res.nextOffset
		}
		if res.truncated > 0 && i < len(segs)-1 {
			// Everything after a torn batch is lost: drop the later segments.
			for _, later := range segs[i+1:] {
				if err := later.removeFiles(); err != nil {
					return fail(storageErr("remove segment", err))
				}
			}
			segs = segs[:i+1]
			end = res.nextOffset
			break
		}
	}
	last := segs[len(segs)-1]
	if end < 0 {
		var err error
		end, err = last.scanTail()
		if errors.Is(err, errTorn) { // a torn tail despite a clean shutdown
			l.recoveredSegments++
			rebuilt[last] = true
			var res recoverResult
			res, err = last.recover(l.cfg.IndexIntervalBytes, nil)
			end = res.nextOffset
		}
		if err != nil {
			return fail(storageErr("read "+last.log.Name(), err))
		}
	}
	last.ensureLoaded()
	l.segs.Store(&segs)
	l.end.Store(end)
	if st.logStart > end {
		// The records up to the log start are gone (a lost tail, removed
		// files): start over empty there rather than hand out offsets
		// below it again, as Kafka's LogLoader does.
		l.logger.Warn("logstore: log end offset below the log start offset, deleting every segment",
			"log", tp.String(), "end", end, "start", st.logStart)
		if err := l.truncateFullyLocked(st.logStart); err != nil {
			return fail(err)
		}
		return l, nil
	}
	l.logStart.Store(min(max(st.logStart, segs[0].base), end))
	l.hw.Store(min(max(st.highWatermark, l.logStart.Load()), end))
	rp := end
	if st.recoveryPoint >= 0 {
		rp = min(st.recoveryPoint, end)
	}
	if !st.clean && st.recoveryPoint < 0 {
		rp = 0
	}
	l.recoveryPoint.Store(rp)

	cutStart := l.epochs.truncateFromStart(l.logStart.Load())
	if l.epochs.truncateFromEnd(end) || cutStart || l.recoveredSegments > 0 {
		if err := l.epochs.write(); err != nil {
			return fail(storageErr("write leader-epoch-checkpoint", err))
		}
	}
	if err := l.loadProducerState(rebuilt); err != nil {
		return fail(err)
	}
	for s := range rebuilt {
		if err := s.writeIndexes(false); err != nil {
			return fail(storageErr("write transaction index of "+s.log.Name(), err))
		}
	}
	return l, nil
}

// scanPartitionDir lists the segment base offsets in a partition dir after
// finishing or undoing an interrupted swap (.deleted, .cleaned and .swap
// files, see swap.go), and removes leftovers: temporary files and index
// files without a .log. It also reports which segments lack an index, and
// which have a .txnindex.
func scanPartitionDir(dir string) (bases []int64, missing, txnIndexes map[int64]bool, err error) {
	if err := completeSwaps(dir); err != nil {
		return nil, nil, nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	logs := map[int64]bool{}
	indexes := map[int64]int{} // .index and .timeindex
	txnIndexes = map[int64]bool{}
	indexed := map[int64]bool{} // offsets with index files: those without a .log go
	for _, de := range ents {
		name := de.Name()
		if !de.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, nil, nil, err
			}
		}
		if off, ok := parseOffsetName(name, logSuffix); ok {
			logs[off] = true
		}
		if off, ok := parseOffsetName(name, txnIndexSuffix); ok {
			txnIndexes[off], indexed[off] = true, true
		}
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			if off, ok := parseOffsetName(name, suffix); ok {
				indexes[off]++
				indexed[off] = true
			}
		}
	}
	missing = map[int64]bool{}
	for off := range logs {
		bases = append(bases, off)
		if indexes[off] < 2 {
			missing[off] = true
		}
	}
	for off := range indexed {
		if !logs[off] {
			delete(txnIndexes, off)
			for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := os.Remove(segmentPath(dir, off, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, nil, nil, err
				}
			}
		}
	}
	slices.Sort(bases)
	return bases, missing, txnIndexes, nil
}

// checkIndexes sanity-checks a segment's indexes on a clean open: whole
// entries, and last entries that point into the log. The active segment's
// indexes are loaded; the others are checked from their last entries and
// loaded when first used.
func checkIndexes(s *segment, active bool) error {
	if active {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.loadIndexes()
	}
	check := func(path string, entrySize int, entry func(b []byte) error) error {
		f, err := os.Open(path) // index files stay closed but while read or written
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Size()%int64(entrySize) != 0 {
			return fmt.Errorf("%s: size %d is not a multiple of %d", path, st.Size(), entrySize)
		}
		if st.Size() == 0 {
			return nil
		}
		b := make([]byte, entrySize)
		if _, err := f.ReadAt(b, st.Size()-int64(entrySize)); err != nil && err != io.EOF {
			return err
		}
		return entry(b)
	}
	err := check(s.idx.path, offsetEntrySize, func(b []byte) error {
		rel, pos := int32(binaryBE32(b)), int64(int32(binaryBE32(b[4:])))
		if rel < 0 || pos < 0 || pos >= s.size.Load() {
			return fmt.Errorf("%s: last entry (%d, %d) outside the log", s.idx.path, rel, pos)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return check(s.tidx.path, timeEntrySize, func(b []byte) error {
		if rel := int32(binaryBE32(b[8:])); rel < 0 {
			return fmt.Errorf("%s: last entry has offset below the base", s.tidx.path)
		}
		return nil
	})
}

func binaryBE32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// loadProducerState restores producer state from the newest valid snapshot
// at or below the log end offset and replays the batches after it; with no
// usable snapshot it replays the whole log. The open transactions follow.
// The segments in rebuild (recovered: their .txnindex was emptied) get an
// entry for every aborted transaction whose marker they hold; for them the
// snapshot must be at or below their base offsets, so that the replay
// sees the transactions their markers end.
func (l *Log) loadProducerState(rebuild map[*segment]bool) error {
	end := l.end.Load()
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return storageErr("list snapshots", err)
	}
	limit := end
	for s := range rebuild {
		limit = min(limit, s.base)
	}
	from := l.logStart.Load()
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > limit && off <= end {
			continue // good, but newer than the replay must start
		}
		if off > end || off < l.logStart.Load() {
			if err := removeSnapshot(l.dir, off); err != nil {
				return storageErr("remove snapshot", err)
			}
			continue
		}
		data, err := os.ReadFile(segmentPath(l.dir, off, snapshotSuffix))
		var producers map[int64]*producerEntry
		if err == nil {
			producers, err = decodeSnapshot(data)
		}
		if err != nil {
			l.logger.Warn("logstore: discarding producer snapshot", "dir", l.dir, "offset", off, "err", err)
			if err := removeSnapshot(l.dir, off); err != nil {
				return storageErr("remove snapshot", err)
			}
			continue
		}
		l.producers.producers = producers
		l.lastSnapOffset = off
		from = off
		break
	}
	for s := range rebuild {
		s.mu.Lock()
		s.txn.reset()
		s.mu.Unlock()
	}
	l.producers.begin()
	l.txns.reset(l.producers.producers)
	segs := l.segments()
	for i := floorSegment(segs, from); i < len(segs); i++ {
		s := segs[i]
		var index *segment
		if rebuild[s] {
			index = s
		}
		sc := newScanner(s.log, s.lookup(from), s.size.Load(), 256<<10)
		for {
			h, at, err := sc.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return storageErr("replay "+s.log.Name(), err)
			}
			if h.BaseOffset < from || h.ProducerID < 0 {
				continue
			}
			var batch []byte
			if h.Attributes&protocol.AttrControl != 0 {
				if batch, err = sc.batch(&h, at); err != nil {
					return storageErr("replay "+s.log.Name(), err)
				}
			}
			l.producers.replay(&h, batch)
			if len(l.producers.events) > 0 {
				if err := l.applyTxnEvents(index); err != nil {
					return storageErr("rebuild transaction index of "+s.log.Name(), err)
				}
			}
		}
	}
	return nil
}
