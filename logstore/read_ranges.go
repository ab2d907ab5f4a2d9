package logstore

import (
	"io"
	"os"
	"syscall"
)

// FileRange is a stretch of a segment file holding whole batches, for a
// reader that sends it without copying it through user space (sendfile).
//
// The bytes of the range never change: segments are append-only and a
// segment that retention or compaction removes is first renamed and closed
// only after file.delete.delay.ms, so the open file stays readable for that
// long. A sender should still use the file through Raw (File's
// syscall.RawConn, whose Control holds the descriptor open while in use)
// and treat an error as a lost connection, in case the delay has passed.
type FileRange struct {
	File     *os.File
	Raw      syscall.RawConn
	Pos, Len int64
}

// RangeResult is what ReadRanges returns: Read's answer with the batches
// left in the file.
type RangeResult struct {
	Range FileRange // Len 0 when there are no batches
	// NextOffset is the offset after the last batch in Range (the offset
	// asked for when Range is empty).
	NextOffset int64
	// The log's offsets when the read began.
	LogStartOffset, LogEndOffset, HighWatermark int64
}

// ReadRanges is Read without the copy: the same batches, as a file range.
// It reads batch headers only, starting near the end of the byte window
// (found through the offset index) rather than from the first batch.
func (l *Log) ReadRanges(offset int64, maxBytes int, maxOffset int64) (RangeResult, error) {
	res := RangeResult{NextOffset: offset, HighWatermark: l.hw.Load()}
	res.LogEndOffset = l.end.Load() // load the end before any segment size
	res.LogStartOffset = l.logStart.Load()
	if offset < res.LogStartOffset || offset > res.LogEndOffset {
		return res, errorf(CodeOffsetOutOfRange, "offset %d is outside [%d, %d] of %s",
			offset, res.LogStartOffset, res.LogEndOffset, l.tp)
	}
	if maxOffset > res.LogEndOffset || maxOffset < 0 {
		maxOffset = res.LogEndOffset
	}
	if offset >= maxOffset {
		return res, nil
	}
	segs := l.segments()
	for i := floorSegment(segs, offset); i < len(segs); i++ {
		s := segs[i]
		size := s.size.Load()
		pos := s.lookup(offset)
		if pos > size {
			pos = 0
		}
		h, at, found, err := s.batchAt(offset, pos, size)
		if err != nil {
			return res, l.ioErr("read "+s.log.Name(), err)
		}
		if !found {
			continue
		}
		if h.LastOffset() >= maxOffset {
			return res, nil
		}
		end := min(size, at+int64(max(maxBytes, h.Size())))
		cut, next, err := s.lastFit(at, end, size, maxOffset)
		if err != nil {
			return res, l.ioErr("read "+s.log.Name(), err)
		}
		res.Range = FileRange{File: s.log, Raw: s.raw, Pos: at, Len: cut - at}
		res.NextOffset = next
		return res, nil
	}
	return res, nil
}

// lastFit finds where the batches from position at (a batch whose last
// offset is below maxOffset) stop: the end of the last whole batch that
// ends by position end and whose last offset is below maxOffset, and the
// offset after it. The walk starts at the last indexed batch before end,
// and steps back through the index when that batch does not qualify.
//
// Only the batch at at is known to be whole: the bytes after it may be
// cut by a truncation running under the reader's feet (size was loaded
// before it), so a walk from a later index entry that finds no whole
// batch steps back too, and a walk stops at the first unreadable batch
// after one that qualified.
func (s *segment) lastFit(at, end, size, maxOffset int64) (cut, next int64, err error) {
	for upto := end - 1; ; {
		from := max(at, s.floorPosition(upto))
		cut, next, ok, err := s.walkFit(from, end, size, maxOffset)
		if ok || from == at {
			return cut, next, err
		}
		upto = from - 1 // the batch at from did not qualify: look earlier
	}
}

// walkFit walks the batches from position from and returns the end of
// the last one that qualifies; ok is false when not even the first does.
func (s *segment) walkFit(from, end, size, maxOffset int64) (cut, next int64, ok bool, err error) {
	sc := borrowScanner(s.log, from, size)
	defer sc.release()
	cut = from
	for sc.pos < end {
		h, pos, err := sc.next()
		if err == io.EOF || (err != nil && ok) {
			return cut, next, ok, nil
		}
		if err != nil {
			return cut, next, ok, err
		}
		if pos+int64(h.Size()) > end || h.LastOffset() >= maxOffset {
			return cut, next, ok, nil
		}
		cut, next, ok = pos+int64(h.Size()), h.LastOffset()+1, true
	}
	return cut, next, ok, nil
}

// floorPosition is the position of the last indexed batch that starts at
// or before pos (0 when there is none). Index entries name batch starts
// that are already written, so the answer is always a batch boundary.
func (s *segment) floorPosition(pos int64) int64 {
	s.ensureLoaded()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.idx.entries
	lo, hi := 0, len(e) // first entry with position > pos
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int64(e[m].pos) <= pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return int64(e[lo-1].pos)
}
