package logstore

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// snapshotsToKeep is how many producer snapshots a partition keeps.
const snapshotsToKeep = 2

// Log is one partition's log. Appends are serialised; reads run
// concurrently with them and see only whole, published batches.
type Log struct {
	tp      TopicPartition
	dir     string
	topicID [16]byte
	logger  *slog.Logger // its Dir's (OpenOptions.Logger)

	segs          atomic.Pointer[[]*segment] // ascending base offsets; never empty
	end           atomic.Int64               // log end offset
	logStart      atomic.Int64
	hw            atomic.Int64
	recoveryPoint atomic.Int64 // everything below is fsynced
	lastFlush     atomic.Int64 // unix ms of the last flush

	flushMu sync.Mutex // serialises Flush calls

	// cleanMu is held while the cleaner rewrites this log's segments or
	// retention deletes them (one at a time); cleanAbort asks a clean in
	// progress to stop (DeleteLog), and so does notCompact (the cleanup
	// policy no longer has compact, as Kafka's LogManager.updateTopicConfig
	// aborts the cleaning). owner is the Dir the log belongs to (delayed
	// file deletion, checkpoints).
	cleanMu    sync.Mutex
	cleanAbort atomic.Bool
	notCompact atomic.Bool  // !cfg.Compact
	cleanPause atomic.Int32 // truncations waiting for cleanMu: a clean in progress stops
	owner      atomic.Pointer[Dir]

	mu             sync.Mutex // appends, rolls, config, close
	cfg            Config
	producers      *producerState
	txns           *txnState // open transactions, first unstable offset (own lock, after mu)
	epochs         *epochCache
	lastSnapOffset int64
	closed         bool
	gone           atomic.Bool // set as the files close: read errors from now on are not the disk's (failure.go)
	scratch        []appendedBatch

	recoveredSegments int // segments scanned by recovery when opened (for tests)

	// testStep, when set, is called before each file operation of a
	// truncation; an error stops it there, as a crash would (for tests).
	testStep func(what string) error
}

// AppendOptions says how Append stamps the batches.
type AppendOptions struct {
	// LogAppendTime, when >= 0, marks every batch LogAppendTime with this
	// maxTimestamp (recomputing the CRC); use -1 to keep CreateTime.
	LogAppendTime int64
	// LeaderEpoch, when >= 0, is written into every batch's
	// partitionLeaderEpoch and recorded in leader-epoch-checkpoint the first
	// time it is seen; -1 keeps the epochs the batches carry.
	LeaderEpoch int32
	// RequireTxnVerification makes a transactional batch that would open
	// a transaction need TxnVerification, the token StartTxnVerification
	// gave before the transaction coordinator confirmed the partition is
	// in the transaction (txn_verify.go). Set for clients' produce.
	RequireTxnVerification bool
	TxnVerification        uint64
	// MarkerTxnVersion is the transaction.version of the transaction an
	// end-transaction marker ends (WriteTxnMarkers v2, KIP-1228). From 2
	// the coordinator bumped the epoch at the end, so the marker's epoch
	// must be above the producer's: a late marker cannot end the
	// producer's next transaction, begun at that epoch. A marker at the
	// producer's epoch with no transaction open is a retry of one already
	// written (KAFKA-19999): accepted as a Duplicate, nothing appended.
	// Below 2 the epoch may equal the producer's, as before KIP-890.
	MarkerTxnVersion int16
}

// AppendResult reports where an append went.
type AppendResult struct {
	BaseOffset, LastOffset int64
	LogAppendTime          int64 // -1 unless stamped; a duplicate's: the original batch's maxTimestamp
	LogStartOffset         int64
	Duplicate              bool // idempotent retry: nothing appended, offsets are the original batch's (a retried marker's: the log's last offset)
}

// TopicID is the topic's Kafka Uuid, from partition.metadata.
func (l *Log) TopicID() [16]byte { return l.topicID }

// TopicPartition is the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir is the partition directory (which a move to another log dir
// changes, under mu).
func (l *Log) Dir() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dir
}

// SetConfig changes the log's settings; segments made from now on use them.
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	l.cfg = cfg.withDefaults()
	l.notCompact.Store(!l.cfg.Compact)
	l.mu.Unlock()
}

// Config returns the log's settings.
func (l *Log) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.end.Load() }

// SetHighWatermark records the high watermark (kept in
// replication-offset-checkpoint), clamped to [LogStartOffset, LogEndOffset].
func (l *Log) SetHighWatermark(hw int64) {
	hw = min(max(hw, l.logStart.Load()), l.end.Load())
	l.hw.Store(hw)
	l.txns.highWatermark(hw)
}

// HighWatermark is the last value set by SetHighWatermark (or loaded).
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// RecoveryPoint is the offset below which everything is known to be on disk.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Size is the bytes of all segments' .log files.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// Append writes one or more validated magic-v2 batches, assigning them the
// next offsets (rewriting each baseOffset in place, and the leader epoch and
// LogAppendTime per opts). Idempotent batches are checked against their
// producer's state first; a retry of one of the producer's last 5 batches
// is answered from memory with Duplicate set, and a sequence or epoch error
// fails the whole append (nothing is written). Errors carry a Kafka code
// (see ErrorCode).
func (l *Log) Append(batches []byte, opts AppendOptions) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := AppendResult{LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if err := l.unusable(); err != nil {
		return res, err
	}
	if len(batches) == 0 {
		return res, errorf(CodeCorruptMessage, "no record batches")
	}
	if int64(len(batches)) > l.cfg.SegmentBytes {
		return res, errorf(CodeRecordListTooLarge, "%d bytes of batches exceed segment.bytes %d", len(batches), l.cfg.SegmentBytes)
	}

	// Pass 1: headers, offsets, producer checks. Nothing changes yet.
	next := l.end.Load()
	res.BaseOffset = next
	l.scratch = l.scratch[:0]
	l.producers.begin()
	maxTs := int64(-1)
	for p := 0; p < len(batches); {
		h, err := protocol.ParseBatchHeader(batches[p:])
		if err != nil || h.Magic != 2 || h.LastOffsetDelta < 0 {
			return res, errorf(CodeCorruptMessage, "bad record batch at byte %d: %v", p, err)
		}
		size := h.Size()
		if opts.LogAppendTime >= 0 {
			// The batch as it will be stored, which its producer's state remembers.
			h.MaxTimestamp = opts.LogAppendTime
		}
		if h.ProducerID >= 0 {
			if m, dup := l.producers.checkDuplicate(&h); dup {
				// As Kafka's UnifiedLog.append: the original batch's
				// offsets and, as its log append time, the stored
				// batch's maxTimestamp, whatever the timestamp type.
				return AppendResult{BaseOffset: m.firstOffset(), LastOffset: m.lastOffset, LogAppendTime: m.maxTimestamp,
					LogStartOffset: res.LogStartOffset, Duplicate: true}, nil
			}
			if err := l.producers.validate(&h, next, batches[p:p+size], &opts); err == errMarkerRetry {
				res.BaseOffset, res.LastOffset, res.Duplicate = next-1, next-1, true
				return res, nil
			} else if err != nil {
				return res, err
			}
		}
		maxTs = max(maxTs, h.MaxTimestamp)
		l.scratch = append(l.scratch, appendedBatch{lastOffset: next + int64(h.LastOffsetDelta), maxTs: h.MaxTimestamp, size: int64(size)})
		next += int64(h.LastOffsetDelta) + 1
		p += size
	}
	res.LastOffset = next - 1

	// Pass 2: stamp the batches, then write them in one call.
	off := res.BaseOffset
	for p, i := 0, 0; p < len(batches); i++ {
		b := batches[p : p+int(l.scratch[i].size)]
		protocol.SetBaseOffset(b, off)
		if opts.LeaderEpoch >= 0 {
			protocol.SetPartitionLeaderEpoch(b, opts.LeaderEpoch)
		}
		if opts.LogAppendTime >= 0 {
			protocol.SetLogAppendTime(b, opts.LogAppendTime)
		}
		off = l.scratch[i].lastOffset + 1
		p += len(b)
	}
	if err := l.writeTxnLocked(batches, l.scratch, maxTs); err != nil {
		return res, err
	}
	l.producers.commit()
	if opts.LogAppendTime >= 0 {
		res.LogAppendTime = opts.LogAppendTime
	}
	if err := l.applyTxnEvents(l.active()); err != nil {
		return res, l.ioErr("transaction index of "+l.tp.String(), err)
	}
	return res, l.afterWriteLocked(batches)
}

// writeTxnLocked is writeLocked for batches that may start transactions:
// the first unstable offset is lowered before they become readable, and
// worked out again from the producer state if the write fails.
func (l *Log) writeTxnLocked(batches []byte, descs []appendedBatch, maxTs int64) error {
	first := firstTxnData(batches)
	if first == math.MaxInt64 {
		return l.writeLocked(batches, descs, maxTs)
	}
	l.txns.beginWrite(first)
	err := l.writeLocked(batches, descs, maxTs)
	if err != nil {
		l.txns.reset(l.producers.producers)
	}
	return err
}

// writeLocked puts whole batches, already carrying their final offsets and
// described by descs, at the end of the log, rolling a new segment first
// (based at the first batch's offset) when the active one should roll, and
// publishes them: the segment's size and the log end offset move past the
// last batch. Append and AppendReplicated share it.
func (l *Log) writeLocked(batches []byte, descs []appendedBatch, maxTs int64) error {
	first := decodeHeader(batches).BaseOffset
	last := descs[len(descs)-1].lastOffset
	seg := l.active()
	if l.shouldRoll(seg, int64(len(batches)), maxTs, last) {
		var err error
		if seg, err = l.roll(max(first, l.end.Load())); err != nil {
			return err
		}
	}
	newSize, err := seg.append(batches, descs, l.cfg.IndexIntervalBytes)
	if err != nil {
		return l.ioErr("append to "+seg.log.Name(), err)
	}
	seg.size.Store(newSize)
	l.end.Store(last + 1)
	return nil
}

// afterWriteLocked records the leader epochs of batches just written and
// fsyncs when flush.messages is reached.
func (l *Log) afterWriteLocked(batches []byte) error {
	if err := l.noteEpochs(batches); err != nil {
		return err
	}
	if l.end.Load()-l.recoveryPoint.Load() >= l.cfg.FlushMessages {
		return l.syncLocked()
	}
	return nil
}

// AssignLeaderEpoch records that epoch starts at the log end offset, as
// Kafka does when a replica becomes leader (Partition.makeLeader), so the
// leader-epoch-checkpoint names the epoch before any record carries it. An
// epoch not newer than the latest known is ignored.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.epochs.assign(epoch, l.end.Load()) {
		return nil
	}
	if err := l.epochs.write(); err != nil {
		return l.ioErr("write leader-epoch-checkpoint", err)
	}
	return nil
}

// noteEpochs records in leader-epoch-checkpoint the first offset of each
// new leader epoch among appended batches, by Kafka's rules (a follower's
// batches may contradict epochs it assigned itself as a leader).
func (l *Log) noteEpochs(batches []byte) error {
	changed := false
	for p := 0; p < len(batches); {
		h := decodeHeader(batches[p:])
		if l.epochs.assignReplicated(h.PartitionLeaderEpoch, h.BaseOffset) {
			changed = true
		}
		p += h.Size()
	}
	if !changed {
		return nil
	}
	if err := l.epochs.write(); err != nil {
		return l.ioErr("write leader-epoch-checkpoint", err)
	}
	return nil
}

// shouldRoll is Kafka's LogSegment.shouldRoll: the offsets no longer fit
// a 4-byte relative offset (a follower's batch after a long gap, even into
// an empty segment), or the segment is not empty and the append would
// overflow segment.bytes, segment.ms (max.compaction.lag.ms when shorter
// and the log is compacted, Config.maxSegmentMs) less the segment's
// jitter has passed since the first batch (by the batches' timestamps, or by the clock when
// they have none), or an index is full.
func (l *Log) shouldRoll(s *segment, appendBytes, maxTs, lastOffset int64) bool {
	if !s.idx.canAppend(lastOffset) {
		return true
	}
	size := s.size.Load()
	if size == 0 {
		return false // an empty segment takes anything else
	}
	var waited int64
	if s.rollTs >= 0 {
		waited = maxTs - s.rollTs
	} else {
		waited = time.Since(s.created).Milliseconds()
	}
	return size > l.cfg.SegmentBytes-appendBytes || waited > l.cfg.maxSegmentMs()-s.rollJitterMs ||
		s.idx.full() || s.tidx.full()
}

// roll closes the active segment for appends (final time index entry,
// fsync) and starts a new one at base (the log end offset, or above it when
// a follower's next batch starts after a gap left by compaction), taking a
// producer snapshot at the log end offset.
func (l *Log) roll(base int64) (*segment, error) {
	old := l.active()
	if err := old.finish(); err != nil {
		return nil, l.ioErr("roll "+old.log.Name(), err)
	}
	if err := old.sync(); err != nil {
		return nil, l.ioErr("fsync "+old.log.Name(), err)
	}
	if base > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(base)
	}
	seg, err := createSegment(l.dir, base, l.cfg, l.logger)
	if err != nil {
		return nil, l.ioErr("create segment", err)
	}
	segs := append(slices.Clone(l.segments()), seg)
	l.segs.Store(&segs)
	if err := l.snapshotLocked(); err != nil {
		return nil, err
	}
	return seg, nil
}

// snapshotLocked writes a producer snapshot at the log end offset if there
// is none there yet.
func (l *Log) snapshotLocked() error {
	end := l.end.Load()
	if end <= l.lastSnapOffset {
		return nil
	}
	if err := writeSnapshot(l.dir, end, l.producers.producers, snapshotsToKeep); err != nil {
		return l.ioErr("write producer snapshot", err)
	}
	l.lastSnapOffset = end
	return nil
}

// Flush fsyncs everything appended so far and moves the recovery point to
// the log end offset.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	end := l.end.Load()
	segs := l.segments()
	l.mu.Unlock()
	return l.syncUpTo(segs, end)
}

// syncLocked is Flush for callers holding l.mu.
func (l *Log) syncLocked() error { return l.syncUpTo(l.segments(), l.end.Load()) }

// syncUpTo fsyncs the segments that may hold data at or above the recovery
// point and then raises the recovery point to end.
func (l *Log) syncUpTo(segs []*segment, end int64) error {
	rp := l.recoveryPoint.Load()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= rp {
			continue // wholly below the recovery point
		}
		if err := s.sync(); err != nil {
			return l.ioErr("fsync "+s.log.Name(), err)
		}
	}
	for {
		cur := l.recoveryPoint.Load()
		if end <= cur || l.recoveryPoint.CompareAndSwap(cur, end) {
			break
		}
	}
	l.lastFlush.Store(time.Now().UnixMilli())
	return nil
}

// Close flushes the log, writes the last time index entries and a producer
// snapshot, and closes the files. The Log is unusable afterwards.
func (l *Log) Close() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, s := range l.segments() {
		note(s.finish())
	}
	note(l.syncLocked())
	note(l.snapshotLocked())
	l.closed = true
	l.gone.Store(true)
	for _, s := range l.segments() {
		note(s.closeFiles())
	}
	return firstErr
}

// crash closes the files without writing anything more, as if the process
// died (for tests).
func (l *Log) crash() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.gone.Store(true)
	for _, s := range l.segments() {
		s.closeFiles()
	}
}
