package logstore

import (
	"errors"
	"io"
	"sort"

	"github.com/gregor-broker/gregor/protocol"
)

// ReadResult is what Read returns.
type ReadResult struct {
	// Records holds whole batches, the first being the one that contains
	// the offset asked for (so it may start below it).
	Records []byte
	// NextOffset is the offset after the last batch in Records (the offset
	// asked for when Records is empty).
	NextOffset int64
	// The log's offsets when the read began.
	LogStartOffset, LogEndOffset, HighWatermark int64
}

// Read returns whole batches starting with the one that contains offset,
// up to maxBytes in all, but always at least one batch however large
// (KIP-74), and only batches whose last offset is below maxOffset (pass
// the high watermark, or LogEndOffset for everything; values above the log
// end offset mean the log end offset). Like Kafka it reads from one segment
// per call. An offset below LogStartOffset or above LogEndOffset gives
// OFFSET_OUT_OF_RANGE; LogEndOffset itself gives no records.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (ReadResult, error) {
	rr, err := l.ReadRanges(offset, maxBytes, maxOffset)
	res := ReadResult{NextOffset: rr.NextOffset, LogStartOffset: rr.LogStartOffset, LogEndOffset: rr.LogEndOffset, HighWatermark: rr.HighWatermark}
	if err != nil || rr.Range.Len == 0 {
		return res, err
	}
	res.Records = make([]byte, rr.Range.Len)
	if n, err := rr.Range.File.ReadAt(res.Records, rr.Range.Pos); int64(n) < rr.Range.Len {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return ReadResult{NextOffset: offset}, l.ioErr("read "+rr.Range.File.Name(), err)
	}
	return res, nil
}

// floorSegment is the index of the last segment with base <= offset (0 if none).
func floorSegment(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })
	return max(i-1, 0)
}

// OffsetForTimestamp finds the first record at or after LogStartOffset
// whose timestamp is >= ts (ListOffsets by timestamp): the offset and the
// timestamp of that record. ok is false when every record is older. The
// time index narrows the search to a few batches; inside the batch the
// records are decoded (decompressed if need be) to find the exact one. The
// error is protocol.ErrRecordTooLarge when a compressed batch it must read
// holds a record above the log's MaxDecompressedRecordBytes.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool, err error) {
	start := l.logStart.Load()
	limit := l.Config().recordLimit()
	for _, s := range l.segments() {
		if segMax, _ := s.maxTimestamp(); segMax < ts {
			continue
		}
		s.mu.RLock()
		_, tOff := s.tidx.lookup(ts)
		_, pos := s.idx.lookup(max(tOff, start))
		s.mu.RUnlock()
		if off, t, found, err := searchTimestamp(s, pos, ts, start, limit); found || err != nil {
			return off, t, found, err
		}
	}
	return -1, -1, false, nil
}

// searchTimestamp scans the batches of s from pos for the first record with
// timestamp >= ts and offset >= minOffset.
func searchTimestamp(s *segment, pos, ts, minOffset int64, maxRecord int) (int64, int64, bool, error) {
	sc := borrowScanner(s.log, pos, s.size.Load())
	defer sc.release()
	for {
		h, at, err := sc.next()
		if err != nil {
			return -1, -1, false, nil
		}
		if h.MaxTimestamp < ts || h.LastOffset() < minOffset {
			continue
		}
		batch, err := sc.batch(&h, at)
		if err != nil {
			return -1, -1, false, nil
		}
		rOff, rTs, found := int64(-1), int64(-1), false
		if recs, err := recordsOf(&h, batch); err == nil {
			err = forEachRecord(&h, recs, maxRecord, func(off, t int64) bool {
				if t >= ts && off >= minOffset {
					rOff, rTs, found = off, t, true
					return false
				}
				return true
			})
			if errors.Is(err, protocol.ErrRecordTooLarge) {
				return -1, -1, false, err
			}
		} else {
			// Undecodable records: answer with the batch, which is known to
			// hold a timestamp >= ts.
			rOff, rTs, found = max(h.BaseOffset, minOffset), h.MaxTimestamp, true
		}
		if found {
			return rOff, rTs, true, nil
		}
	}
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp (ListOffsets MAX_TIMESTAMP; the first such record if
// several share it), or -1, -1 when no record has a timestamp. The error is
// OffsetForTimestamp's.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64, err error) {
	var best *segment
	bestTs, bestOff := int64(-1), int64(-1)
	for _, s := range l.segments() {
		if t, off := s.maxTimestamp(); t > bestTs {
			best, bestTs, bestOff = s, t, off
		}
	}
	if best == nil {
		return -1, -1, nil
	}
	sc := borrowScanner(best.log, best.lookup(bestOff), best.size.Load())
	defer sc.release()
	for {
		h, at, err := sc.next()
		if err != nil {
			return bestOff, bestTs, nil
		}
		if h.MaxTimestamp != bestTs {
			continue
		}
		batch, err := sc.batch(&h, at)
		if err != nil {
			return h.BaseOffset, bestTs, nil
		}
		recs, err := recordsOf(&h, batch)
		if err != nil {
			return h.BaseOffset, bestTs, nil
		}
		found := h.BaseOffset
		err = forEachRecord(&h, recs, l.Config().recordLimit(), func(off, t int64) bool {
			if t == bestTs {
				found = off
				return false
			}
			return true
		})
		if errors.Is(err, protocol.ErrRecordTooLarge) {
			return -1, -1, err
		}
		return found, bestTs, nil
	}
}

// ReplayCommitted calls fn with the log's batches from its start offset
// to the high watermark it has when called, a megabyte or so at a time:
// how a coordinator loads its partition. When retention or cleaning
// moves the start meanwhile, it goes on from the new start.
func (l *Log) ReplayCommitted(fn func(batches []byte) error) error {
	hw := l.HighWatermark()
	for off := l.LogStartOffset(); off < hw; {
		res, err := l.Read(off, 1<<20, hw)
		if err != nil {
			if le, ok := err.(*Error); ok && le.Code == CodeOffsetOutOfRange && off < l.LogStartOffset() {
				off = l.LogStartOffset()
				continue
			}
			return err
		}
		if len(res.Records) == 0 || res.NextOffset <= off {
			return nil
		}
		if err := fn(res.Records); err != nil {
			return err
		}
		off = res.NextOffset
	}
	return nil
}
