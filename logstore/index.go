package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

// indexFile is the on-disk side of an index. The entries live in memory;
// the file is opened only to read it (loading) and to write the entries
// added since the last write (segment.persistIndexes, on flush, roll,
// close and after recovery), so an index holds no file descriptor. Until
// such a write the file lags behind memory, which a crash may expose: the
// recovery point only moves after a sync that wrote the indexes first, and
// recovery rebuilds the indexes of every segment from the recovery point on.
// written and truncate are guarded by the segment's mu; unsynced by its ioMu.
type indexFile struct {
	path     string
	written  int  // entries already in the file
	truncate bool // the file may hold more than written entries (after reset)
	unsynced bool // written since the last fsync
}

// pending returns the bytes to write: entries from written on, encoded.
func pending[E any](x *indexFile, entries []E, size int, put func([]byte, E)) []byte {
	if x.written >= len(entries) {
		return nil
	}
	buf := make([]byte, (len(entries)-x.written)*size)
	for i, e := range entries[x.written:] {
		put(buf[i*size:], e)
	}
	return buf
}

// write puts data at entry from of the file, cuts the file after total
// entries when cut is set, and fsyncs it when sync is set and anything
// written so far is not yet synced. The file is closed again before return.
// path is passed in, read under the segment's mu (renameFiles changes it).
func (x *indexFile) write(path string, data []byte, from, total, size int, cut, sync bool) error {
	if len(data) == 0 && !cut {
		if !sync || !x.unsynced {
			return nil
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if errors.Is(err, os.ErrNotExist) { // removed since: nothing left to sync
			x.unsynced = false
			return nil
		}
		if err != nil {
			return err
		}
		if err = f.Sync(); err == nil {
			x.unsynced = false
		}
		return errors.Join(err, f.Close())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		_, err = f.WriteAt(data, int64(from*size))
		x.unsynced = true
	}
	if err == nil && cut {
		err = f.Truncate(int64(total * size))
		x.unsynced = true
	}
	if err == nil && sync {
		if err = f.Sync(); err == nil {
			x.unsynced = false
		}
	}
	return errors.Join(err, f.Close())
}

// readIndexFile reads a whole index file, checking that it is a whole
// number of entries.
func readIndexFile(path string, entrySize int) ([]byte, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(buf)%entrySize != 0 {
		return nil, fmt.Errorf("index %s: size %d is not a multiple of %d", path, len(buf), entrySize)
	}
	return buf, nil
}

// offsetIndex is a segment's .index: entries in memory, written to the
// file in batches (see indexFile). Guarded by its segment's mu.
type offsetIndex struct {
	indexFile
	base       int64
	maxEntries int
	entries    []offsetEntry
}

type offsetEntry struct {
	rel int32 // offset - base
	pos int32 // byte position of the batch in the .log
}

// timeIndex is a segment's .timeindex, like offsetIndex.
type timeIndex struct {
	indexFile
	base       int64
	maxEntries int
	entries    []timeEntry
}

type timeEntry struct {
	ts  int64
	rel int32
}

// decodeOffsetEntry and decodeTimeEntry decode one entry at the start of b.
func decodeOffsetEntry(b []byte) offsetEntry {
	return offsetEntry{int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))}
}

func decodeTimeEntry(b []byte) timeEntry {
	return timeEntry{int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))}
}

// putOffsetEntry and putTimeEntry encode one entry at the start of b.
func putOffsetEntry(b []byte, e offsetEntry) {
	binary.BigEndian.PutUint32(b, uint32(e.rel))
	binary.BigEndian.PutUint32(b[4:], uint32(e.pos))
}

func putTimeEntry(b []byte, e timeEntry) {
	binary.BigEndian.PutUint64(b, uint64(e.ts))
	binary.BigEndian.PutUint32(b[8:], uint32(e.rel))
}

// load reads the file into memory. It fails when the file is not a valid
// index: a partial entry, or offsets or positions that do not increase.
func (x *offsetIndex) load() error {
	buf, err := readIndexFile(x.path, offsetEntrySize)
	if err != nil {
		return err
	}
	x.entries = make([]offsetEntry, 0, len(buf)/offsetEntrySize)
	for i := 0; i < len(buf); i += offsetEntrySize {
		e := decodeOffsetEntry(buf[i:])
		if e.rel < 0 || e.pos < 0 {
			return fmt.Errorf("index %s: negative entry at %d", x.path, i)
		}
		if n := len(x.entries); n > 0 && (e.rel <= x.entries[n-1].rel || e.pos <= x.entries[n-1].pos) {
			return fmt.Errorf("index %s: entries out of order at %d", x.path, i)
		}
		x.entries = append(x.entries, e)
	}
	x.written, x.truncate = len(x.entries), false
	return nil
}

// lookup returns the last entry with offset <= target, or (base, 0).
func (x *offsetIndex) lookup(target int64) (int64, int64) {
	lo, hi := 0, len(x.entries) // find the first entry > target
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.base+int64(x.entries[m].rel) <= target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return x.base, 0
	}
	e := x.entries[lo-1]
	return x.base + int64(e.rel), int64(e.pos)
}

func (x *offsetIndex) last() (offsetEntry, bool) {
	if len(x.entries) == 0 {
		return offsetEntry{}, false
	}
	return x.entries[len(x.entries)-1], true
}

func (x *offsetIndex) full() bool { return len(x.entries) >= x.maxEntries }

// canAppend reports whether off fits the 4-byte relative offset.
func (x *offsetIndex) canAppend(off int64) bool {
	rel := off - x.base
	return rel >= 0 && rel <= math.MaxInt32
}

// append adds an entry for a batch whose last offset is off at position
// pos, in memory; the file gets it at the next persistIndexes.
func (x *offsetIndex) append(off, pos int64) error {
	rel := int32(off - x.base)
	if e, ok := x.last(); ok && rel <= e.rel {
		return fmt.Errorf("index %s: offset %d is not above the last entry", x.path, off)
	}
	x.entries = append(x.entries, offsetEntry{rel, int32(pos)})
	return nil
}

// reset empties the index; the file is cut at the next persistIndexes.
func (x *offsetIndex) reset() {
	x.entries = x.entries[:0]
	x.written, x.truncate = 0, true
}

func (x *timeIndex) load() error {
	buf, err := readIndexFile(x.path, timeEntrySize)
	if err != nil {
		return err
	}
	x.entries = make([]timeEntry, 0, len(buf)/timeEntrySize)
	for i := 0; i < len(buf); i += timeEntrySize {
		e := decodeTimeEntry(buf[i:])
		if e.rel < 0 {
			return fmt.Errorf("time index %s: negative offset at %d", x.path, i)
		}
		if n := len(x.entries); n > 0 && (e.ts <= x.entries[n-1].ts || e.rel < x.entries[n-1].rel) {
			return fmt.Errorf("time index %s: entries out of order at %d", x.path, i)
		}
		x.entries = append(x.entries, e)
	}
	x.written, x.truncate = len(x.entries), false
	return nil
}

// lastEntry is the last (timestamp, offset), or (-1, base) when empty, as
// Kafka's TimeIndex.lastEntry.
func (x *timeIndex) lastEntry() (int64, int64) {
	if len(x.entries) == 0 {
		return -1, x.base
	}
	e := x.entries[len(x.entries)-1]
	return e.ts, x.base + int64(e.rel)
}

// full keeps the last slot free for the entry written on roll, as Kafka does.
func (x *timeIndex) full() bool { return len(x.entries) >= x.maxEntries-1 }

// maybeAppend adds (ts, off) in memory when ts is above the last entry's
// timestamp.
func (x *timeIndex) maybeAppend(ts, off int64) error {
	lastTs, lastOff := x.lastEntry()
	if ts <= lastTs {
		return nil
	}
	if len(x.entries) > 0 && off < lastOff {
		return fmt.Errorf("time index %s: offset %d below the last entry's %d", x.path, off, lastOff)
	}
	x.entries = append(x.entries, timeEntry{ts, int32(off - x.base)})
	return nil
}

// lookup returns the last entry with timestamp <= target, or (-1, base).
func (x *timeIndex) lookup(target int64) (int64, int64) {
	lo, hi := 0, len(x.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.entries[m].ts <= target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return -1, x.base
	}
	e := x.entries[lo-1]
	return e.ts, x.base + int64(e.rel)
}

func (x *timeIndex) reset() {
	x.entries = x.entries[:0]
	x.written, x.truncate = 0, true
}
