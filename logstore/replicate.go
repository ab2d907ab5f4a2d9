package logstore

// A follower's side of replication: appending the batches fetched from the
// leader exactly as the leader's log holds them, and answering the leader
// epoch questions truncation is decided by.
//
// Kafka's UnifiedLog.appendAsFollower takes the offsets and leader epochs
// the batches carry; it checks each batch's framing and CRC (not its
// records: the leader validated those), refuses offsets that do not
// increase, and refuses a first batch that starts below the log end
// offset. It accepts one that starts above it: a compacted leader log has
// gaps. Producer state is updated without any sequence or epoch check, so
// that if this replica becomes leader it deduplicates retries of batches
// the old leader took.

import (
	"errors"
	"fmt"
	"math"

	"github.com/gregor-broker/gregor/protocol"
)

// ErrUnexpectedAppendOffset is in the chain of the error AppendReplicated
// returns when the first batch to append starts below the log end offset
// but ends at or above it (Kafka's UnexpectedAppendOffsetException). Its
// code is OFFSET_OUT_OF_RANGE.
var ErrUnexpectedAppendOffset = errors.New("replicated batch starts below the log end offset")

// AppendReplicated appends batches fetched from the leader, byte for byte:
// offsets, leader epochs and CRCs are kept. Leading batches wholly below
// the log end offset are skipped and a partial batch at the end is
// ignored; the first batch appended must start at or after the log end
// offset. Every batch is checked first (framing, magic 2, CRC, offsets
// increasing), so bad input appends nothing: CORRUPT_MESSAGE. A first
// batch straddling the log end offset fails with ErrUnexpectedAppendOffset,
// except on an empty log (log end = log start), which restarts at that
// batch's offset and appends it, as Kafka's Partition does when the
// leader's log start lies inside a batch. The batches are written in
// groups that fit segment.bytes, rolling segments as Append does; a single
// batch larger than segment.bytes is RECORD_LIST_TOO_LARGE.
//
// The result spans the batches appended: BaseOffset..LastOffset, which is
// the empty range LogEndOffset..LogEndOffset-1 when nothing was.
func (l *Log) AppendReplicated(batches []byte) (AppendResult, error) {
	res, restartAt, err := l.appendReplicated(batches)
	if restartAt < 0 {
		return res, err
	}
	if err := l.TruncateFullyAndStartAt(restartAt); err != nil {
		return res, err
	}
	res, _, err = l.appendReplicated(batches)
	return res, err
}

// appendReplicated is AppendReplicated without the restart of an empty
// log; it reports where the log should restart (-1: no need).
func (l *Log) appendReplicated(batches []byte) (AppendResult, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.end.Load()
	res := AppendResult{BaseOffset: end, LastOffset: end - 1, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if err := l.unusable(); err != nil {
		return res, -1, err
	}
	descs, from, err := checkReplicated(batches, end)
	var straddle *straddleError
	if errors.As(err, &straddle) {
		if end == l.logStart.Load() {
			return res, straddle.first, err
		}
		return res, -1, &Error{Code: CodeOffsetOutOfRange, Msg: err.Error(), Cause: ErrUnexpectedAppendOffset}
	}
	if err != nil || len(descs) == 0 {
		return res, -1, err
	}
	res.BaseOffset = decodeHeader(batches[from:]).BaseOffset
	for len(descs) > 0 {
		// A group fits one segment: segment.bytes, and offsets within a
		// 4-byte relative offset of its first.
		first := decodeHeader(batches[from:]).BaseOffset
		n, size, maxTs := 0, int64(0), int64(-1)
		for n < len(descs) && size+descs[n].size <= l.cfg.SegmentBytes && descs[n].lastOffset-first <= math.MaxInt32 {
			size += descs[n].size
			maxTs = max(maxTs, descs[n].maxTs)
			n++
		}
		if n == 0 { // a batch's own offsets always fit
			return res, -1, errorf(CodeRecordListTooLarge, "a %d-byte batch exceeds segment.bytes %d", descs[0].size, l.cfg.SegmentBytes)
		}
		group := batches[from : from+int(size)]
		if err := l.writeTxnLocked(group, descs[:n], maxTs); err != nil {
			return res, -1, err
		}
		res.LastOffset = descs[n-1].lastOffset
		l.producers.begin()
		for p := 0; p < len(group); {
			h := decodeHeader(group[p:])
			l.producers.replay(&h, group[p:p+h.Size()])
			p += h.Size()
		}
		if err := l.applyTxnEvents(l.active()); err != nil {
			return res, -1, l.ioErr("transaction index of "+l.tp.String(), err)
		}
		if err := l.afterWriteLocked(group); err != nil {
			return res, -1, err
		}
		descs, from = descs[n:], from+int(size)
	}
	return res, -1, nil
}

// straddleError says the first batch to append starts below the log end
// offset and ends at or above it.
type straddleError struct{ first, last, end int64 }

func (e *straddleError) Error() string {
	return fmt.Sprintf("the first replicated batch, offsets %d..%d, spans the log end offset %d", e.first, e.last, e.end)
}

// checkReplicated checks the batches a leader sent and describes those to
// append: the leading ones wholly below end are skipped (from is where the
// rest starts) and a partial batch at the end is left out.
func checkReplicated(batches []byte, end int64) (descs []appendedBatch, from int, err error) {
	prevLast := int64(-1)
	for p := 0; len(batches)-p >= protocol.BatchHeaderSize; {
		h := decodeHeader(batches[p:])
		if h.Magic != 2 || h.BatchLength < protocol.BatchHeaderSize-protocol.LogOverhead {
			return nil, 0, errorf(CodeCorruptMessage, "replicated batch at byte %d: magic %d, length %d", p, h.Magic, h.BatchLength)
		}
		size := h.Size()
		if size > len(batches)-p {
			break // partial: the fetch stopped inside it
		}
		b := batches[p : p+size]
		switch {
		case protocol.BatchCRC(b) != h.CRC:
			return nil, 0, errorf(CodeCorruptMessage, "replicated batch at offset %d: CRC mismatch", h.BaseOffset)
		case h.BaseOffset < 0 || h.LastOffsetDelta < 0 || h.RecordCount < 0 ||
			int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 || h.BaseOffset >= math.MaxInt64-int64(h.LastOffsetDelta):
			return nil, 0, errorf(CodeCorruptMessage, "replicated batch at byte %d: offsets %d+%d, %d records",
				p, h.BaseOffset, h.LastOffsetDelta, h.RecordCount)
		case h.BaseOffset <= prevLast:
			return nil, 0, errorf(CodeCorruptMessage, "replicated batch at offset %d does not follow offset %d", h.BaseOffset, prevLast)
		}
		prevLast = h.LastOffset()
		switch {
		case len(descs) == 0 && h.LastOffset() < end:
			from = p + size // already here
		case len(descs) == 0 && h.BaseOffset < end:
			return nil, 0, &straddleError{h.BaseOffset, h.LastOffset(), end}
		default:
			descs = append(descs, appendedBatch{lastOffset: h.LastOffset(), maxTs: h.MaxTimestamp, size: int64(size)})
		}
		p += size
	}
	return descs, from, nil
}

// LatestEpoch is the latest leader epoch in leader-epoch-checkpoint, -1
// when there is none.
func (l *Log) LatestEpoch() int32 {
	return l.epochs.read().latest()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log, as Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest known epoch at or below
// epoch, and the start offset of the first epoch above it, or the log end
// offset when epoch is the latest. (-1, -1) when epoch is -1 or above the
// latest, or no epoch is known. An epoch below the earliest known gives
// (epoch, start of the earliest). Like the other readers of the epochs
// below, it does not wait for an append; as in Kafka, the epochs and the
// log end are read one after the other.
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	return l.epochs.read().endOffsetFor(epoch, l.end.Load())
}

// EpochForOffset is the leader epoch that offset was written in, by
// leader-epoch-checkpoint (Kafka's LeaderEpochFileCache.epochForOffset),
// or -1 when no known epoch starts at or before it.
func (l *Log) EpochForOffset(offset int64) int32 {
	return l.epochs.read().epochFor(offset)
}

// EarliestEpoch is the earliest known leader epoch if it starts at or
// before the log start offset, else -1: the epoch Kafka's ListOffsets
// gives with the earliest offset.
func (l *Log) EarliestEpoch() int32 {
	es := l.epochs.read()
	if len(es) == 0 || es[0].StartOffset > l.logStart.Load() {
		return -1
	}
	return es[0].Epoch
}
