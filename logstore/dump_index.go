package logstore

// Dumping .index and .timeindex files, each entry checked against the
// segment's .log the way Kafka's DumpLogSegments checks it.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gregor-broker/gregor/protocol"
)

// indexedSegment is what checking an index file needs: its raw bytes, the
// base offset and the segment's .log.
type indexedSegment struct {
	base    int64
	raw     []byte
	log     *os.File
	logSize int64
}

func openIndexed(path, suffix string) (*indexedSegment, error) {
	base, err := segmentBase(path, suffix)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(segmentPath(filepath.Dir(path), base, logSuffix))
	if err != nil {
		return nil, fmt.Errorf("%s: its segment is needed to check it: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &indexedSegment{base: base, raw: raw, log: f, logSize: st.Size()}, nil
}

// entries is how many whole entries the file holds; a partial last entry
// is reported as damage.
func (s *indexedSegment) entries(size int, r *DumpReport) int {
	if extra := len(s.raw) % size; extra != 0 {
		r.fail("%s: %d bytes after the last whole %d-byte entry", r.Path, extra, size)
	}
	return len(s.raw) / size
}

func dumpOffsetIndex(w *bufio.Writer, path string, opts DumpOptions, r *DumpReport) error {
	s, err := openIndexed(path, indexSuffix)
	if err != nil {
		return err
	}
	defer s.log.Close()
	if opts.IndexSanityOnly {
		return sanityCheck(w, path, r, func(f *os.File) error {
			x := offsetIndex{indexFile: indexFile{path: f.Name()}, base: s.base}
			if err := x.load(); err != nil {
				return err
			}
			if e, ok := x.last(); ok && int64(e.pos) >= s.logSize {
				return fmt.Errorf("position %d beyond the log's %d bytes", e.pos, s.logSize)
			}
			return nil
		})
	}
	n := s.entries(offsetEntrySize, r)
	if n == 0 {
		fmt.Fprintf(w, "%s is empty.\n", path)
		return nil
	}
	for i := 0; i < n; i++ {
		e := decodeOffsetEntry(s.raw[i*offsetEntrySize:])
		if i > 0 && e.rel == 0 {
			break // the unused, zeroed tail of a preallocated index
		}
		off := s.base + int64(e.rel)
		if got := s.lastOffsetAt(int64(e.pos)); got != off {
			r.IndexMismatches = append(r.IndexMismatches, DumpPair{off, got})
		}
		if !opts.VerifyIndexOnly {
			fmt.Fprintf(w, "offset: %d position: %d\n", off, e.pos)
		}
	}
	return nil
}

// lastOffsetAt is the last offset of the batch starting at pos, or -1 when
// no whole batch starts there.
func (s *indexedSegment) lastOffsetAt(pos int64) int64 {
	if pos < 0 {
		return -1
	}
	h, _, err := newScanner(s.log, pos, s.logSize, protocol.BatchHeaderSize).next()
	if err != nil {
		return -1
	}
	return h.LastOffset()
}

func dumpTimeIndex(w *bufio.Writer, path string, opts DumpOptions, r *DumpReport) error {
	s, err := openIndexed(path, timeIndexSuffix)
	if err != nil {
		return err
	}
	defer s.log.Close()
	if opts.IndexSanityOnly {
		return sanityCheck(w, path, r, func(f *os.File) error {
			x := timeIndex{indexFile: indexFile{path: f.Name()}, base: s.base}
			return x.load()
		})
	}
	// The offset index, when it loads, says where to start looking for a
	// batch; without it every search starts at the top of the log.
	idx := offsetIndex{indexFile: indexFile{path: segmentPath(filepath.Dir(path), s.base, indexSuffix)}, base: s.base}
	if idx.load() != nil {
		idx.entries = nil
	}
	n := s.entries(timeEntrySize, r)
	prevTs := int64(protocol.NoTimestamp)
	for i := 0; i < n; i++ {
		e := decodeTimeEntry(s.raw[i*timeEntrySize:])
		if i > 0 && e.rel == 0 {
			break // the unused, zeroed tail of a preallocated index
		}
		off := s.base + int64(e.rel)
		_, pos := idx.lookup(off)
		switch last, maxTs, err := s.batchEndingAt(off, pos); {
		case err != nil:
			r.fail("%s: the batch holding offset %d cannot be read: %v", r.Path, off, err)
		case last != off:
			r.OffsetsNotFound = append(r.OffsetsNotFound, DumpPair{off, last})
		default:
			if maxTs != e.ts {
				r.TimestampMismatches = append(r.TimestampMismatches, DumpPair{e.ts, maxTs})
			}
			if prevTs >= e.ts {
				r.OutOfOrderTimestamps = append(r.OutOfOrderTimestamps, DumpPair{e.ts, prevTs})
			}
		}
		if !opts.VerifyIndexOnly {
			fmt.Fprintf(w, "timestamp: %d offset: %d\n", e.ts, off)
		}
		prevTs = e.ts
	}
	return nil
}

// batchEndingAt finds the first batch from pos on whose last offset is at
// least off, and returns that last offset (-1: none) and, when it is off,
// the largest timestamp of the batch's records.
func (s *indexedSegment) batchEndingAt(off, pos int64) (last, maxTs int64, err error) {
	sc := newScanner(s.log, pos, s.logSize, 64<<10)
	for {
		h, at, err := sc.next()
		if err != nil {
			if err == io.EOF || errors.Is(err, errTorn) {
				return -1, 0, nil
			}
			return -1, 0, err
		}
		if h.LastOffset() < off {
			continue
		}
		if h.LastOffset() != off {
			return h.LastOffset(), 0, nil
		}
		batch, err := sc.batch(&h, at)
		if err != nil {
			return -1, 0, err
		}
		maxTs = protocol.NoTimestamp
		err = protocol.Records(batch, func(rec *protocol.Record) error {
			maxTs = max(maxTs, rec.Timestamp)
			return nil
		})
		return off, maxTs, err
	}
}

// sanityCheck runs load, the check Gregor makes when it opens a segment's
// index (a failure there makes it rebuild the index), on the file.
func sanityCheck(w *bufio.Writer, path string, r *DumpReport, load func(*os.File) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := load(f); err != nil {
		r.fail("%s failed sanity check: %v", path, err)
		return nil
	}
	fmt.Fprintf(w, "%s passed sanity check.\n", path)
	return nil
}

// dumpTxnIndex prints a .txnindex (see txn.go): the aborted transactions
// of a segment, 34-byte entries of int16 version, int64 producerId,
// firstOffset, lastOffset, lastStableOffset.
func dumpTxnIndex(w *bufio.Writer, path string, r *DumpReport) error {
	if _, err := segmentBase(path, txnIndexSuffix); err != nil {
		return err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if extra := len(raw) % txnIndexEntrySize; extra != 0 {
		r.fail("%s: %d bytes after the last whole %d-byte entry", r.Path, extra, txnIndexEntrySize)
	}
	for p := raw; len(p) >= txnIndexEntrySize; p = p[txnIndexEntrySize:] {
		fmt.Fprintf(w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			int16(binary.BigEndian.Uint16(p)), int64(binary.BigEndian.Uint64(p[2:])), int64(binary.BigEndian.Uint64(p[10:])),
			int64(binary.BigEndian.Uint64(p[18:])), int64(binary.BigEndian.Uint64(p[26:])))
	}
	return nil
}
