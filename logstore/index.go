package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

// offsetIndex is a segment's .index: entries in memory, mirrored to the file
// one write per entry. Guarded by its segment's mu.
type offsetIndex struct {
	f          *os.File
	base       int64
	maxEntries int
	entries    []offsetEntry
	scratch    [offsetEntrySize]byte
}

type offsetEntry struct {
	rel int32 // offset - base
	pos int32 // byte position of the batch in the .log
}

// timeIndex is a segment's .timeindex, like offsetIndex.
type timeIndex struct {
	f          *os.File
	base       int64
	maxEntries int
	entries    []timeEntry
	scratch    [timeEntrySize]byte
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

func openIndexFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

// readIndexFile reads a whole index file, checking that it is a whole
// number of entries.
func readIndexFile(f *os.File, entrySize int) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size()%int64(entrySize) != 0 {
		return nil, fmt.Errorf("index %s: size %d is not a multiple of %d", f.Name(), st.Size(), entrySize)
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// load reads the file into memory. It fails when the file is not a valid
// index: a partial entry, or offsets or positions that do not increase.
func (x *offsetIndex) load() error {
	buf, err := readIndexFile(x.f, offsetEntrySize)
	if err != nil {
		return err
	}
	x.entries = make([]offsetEntry, 0, len(buf)/offsetEntrySize)
	for i := 0; i < len(buf); i += offsetEntrySize {
		e := decodeOffsetEntry(buf[i:])
		if e.rel < 0 || e.pos < 0 {
			return fmt.Errorf("index %s: negative entry at %d", x.f.Name(), i)
		}
		if n := len(x.entries); n > 0 && (e.rel <= x.entries[n-1].rel || e.pos <= x.entries[n-1].pos) {
			return fmt.Errorf("index %s: entries out of order at %d", x.f.Name(), i)
		}
		x.entries = append(x.entries, e)
	}
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

// append adds an entry for a batch whose last offset is off at position pos.
func (x *offsetIndex) append(off, pos int64) error {
	rel := int32(off - x.base)
	if e, ok := x.last(); ok && rel <= e.rel {
		return fmt.Errorf("index %s: offset %d is not above the last entry", x.f.Name(), off)
	}
	binary.BigEndian.PutUint32(x.scratch[0:], uint32(rel))
	binary.BigEndian.PutUint32(x.scratch[4:], uint32(pos))
	if _, err := x.f.WriteAt(x.scratch[:], int64(len(x.entries))*offsetEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, offsetEntry{rel, int32(pos)})
	return nil
}

// reset empties the index (memory and file).
func (x *offsetIndex) reset() error {
	x.entries = x.entries[:0]
	return x.f.Truncate(0)
}

func (x *timeIndex) load() error {
	buf, err := readIndexFile(x.f, timeEntrySize)
	if err != nil {
		return err
	}
	x.entries = make([]timeEntry, 0, len(buf)/timeEntrySize)
	for i := 0; i < len(buf); i += timeEntrySize {
		e := decodeTimeEntry(buf[i:])
		if e.rel < 0 {
			return fmt.Errorf("time index %s: negative offset at %d", x.f.Name(), i)
		}
		if n := len(x.entries); n > 0 && (e.ts <= x.entries[n-1].ts || e.rel < x.entries[n-1].rel) {
			return fmt.Errorf("time index %s: entries out of order at %d", x.f.Name(), i)
		}
		x.entries = append(x.entries, e)
	}
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

// maybeAppend adds (ts, off) when ts is above the last entry's timestamp.
func (x *timeIndex) maybeAppend(ts, off int64) error {
	lastTs, lastOff := x.lastEntry()
	if ts <= lastTs {
		return nil
	}
	if len(x.entries) > 0 && off < lastOff {
		return fmt.Errorf("time index %s: offset %d below the last entry's %d", x.f.Name(), off, lastOff)
	}
	rel := int32(off - x.base)
	binary.BigEndian.PutUint64(x.scratch[0:], uint64(ts))
	binary.BigEndian.PutUint32(x.scratch[8:], uint32(rel))
	if _, err := x.f.WriteAt(x.scratch[:], int64(len(x.entries))*timeEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, timeEntry{ts, rel})
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

func (x *timeIndex) reset() error {
	x.entries = x.entries[:0]
	return x.f.Truncate(0)
}
