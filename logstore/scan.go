package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gregor-broker/gregor/protocol"
)

// errTorn says the bytes at a position are not a whole, valid batch.
var errTorn = errors.New("torn or corrupt record batch")

// decodeHeader decodes the fixed 61-byte header at the start of b without
// requiring the rest of the batch to be there (protocol.ParseBatchHeader
// does). b must hold at least protocol.BatchHeaderSize bytes.
func decodeHeader(b []byte) protocol.BatchHeader {
	_ = b[protocol.BatchHeaderSize-1]
	return protocol.BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  binary.BigEndian.Uint32(b[17:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[21:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[23:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[27:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[35:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[43:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[51:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[53:])),
		RecordCount:          int32(binary.BigEndian.Uint32(b[57:])),
	}
}

// sane reports whether a header read from disk can be a v2 batch: magic 2,
// a length covering at least the header, offsets that do not go backwards.
func sane(h *protocol.BatchHeader) bool {
	return h.Magic == 2 && h.BatchLength >= protocol.BatchHeaderSize-protocol.LogOverhead &&
		h.LastOffsetDelta >= 0 && h.BaseOffset >= 0
}

// scanner walks the batches of a file region [pos, end) through a read
// window, so that a header-only walk costs one read per window rather than
// one per batch.
type scanner struct {
	f      *os.File
	pos    int64 // position of the next batch
	end    int64
	chunk  int
	buf    []byte
	bufPos int64
}

func newScanner(f *os.File, pos, end int64, chunk int) *scanner {
	return &scanner{f: f, pos: pos, end: end, chunk: chunk, bufPos: -1}
}

// Read paths borrow small scanners from a pool, so that a fetch does not
// allocate a window each time.
const pooledChunk = 16 << 10

var scannerPool = sync.Pool{New: func() any { return &scanner{buf: make([]byte, 0, pooledChunk)} }}

func borrowScanner(f *os.File, pos, end int64) *scanner {
	s := scannerPool.Get().(*scanner)
	s.f, s.pos, s.end, s.chunk, s.bufPos, s.buf = f, pos, end, pooledChunk, -1, s.buf[:0]
	return s
}

// release returns a borrowed scanner; windows that grew past the pooled
// size are dropped.
func (s *scanner) release() {
	if cap(s.buf) > pooledChunk {
		s.buf = make([]byte, 0, pooledChunk)
	}
	s.f = nil
	scannerPool.Put(s)
}

// window returns n bytes at pos, from the window when they are in it.
func (s *scanner) window(pos int64, n int) ([]byte, error) {
	if s.bufPos >= 0 && pos >= s.bufPos && pos+int64(n) <= s.bufPos+int64(len(s.buf)) {
		off := pos - s.bufPos
		return s.buf[off : off+int64(n)], nil
	}
	want := int64(max(n, s.chunk))
	want = min(want, s.end-pos)
	if want < int64(n) {
		return nil, errTorn
	}
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.f.ReadAt(s.buf, pos)
	s.buf = s.buf[:got]
	s.bufPos = pos
	if got < n {
		if err == nil || err == io.EOF {
			err = errTorn
		}
		return nil, err
	}
	return s.buf[:n], nil
}

// next returns the header and position of the next batch and moves past
// it. It returns io.EOF at the end of the region and errTorn when what is
// there is not a plausible batch (short header, bad magic, length running
// past the end).
func (s *scanner) next() (protocol.BatchHeader, int64, error) {
	if s.pos >= s.end {
		return protocol.BatchHeader{}, s.pos, io.EOF
	}
	b, err := s.window(s.pos, protocol.BatchHeaderSize)
	if err != nil {
		return protocol.BatchHeader{}, s.pos, err
	}
	h := decodeHeader(b)
	if !sane(&h) || s.pos+int64(h.Size()) > s.end {
		return h, s.pos, errTorn
	}
	pos := s.pos
	s.pos += int64(h.Size())
	return h, pos, nil
}

// batch returns the whole batch of header h at pos; the bytes are valid
// until the next call.
func (s *scanner) batch(h *protocol.BatchHeader, pos int64) ([]byte, error) {
	return s.window(pos, h.Size())
}

// maxDecompressed bounds what decompressing one batch may produce when we
// need its records (ListOffsets by timestamp).
const maxDecompressed = 128 << 20

// recordsOf returns the record section of a batch, decompressed if need be.
func recordsOf(h *protocol.BatchHeader, batch []byte) ([]byte, error) {
	recs := batch[protocol.BatchHeaderSize:]
	if h.Compression() == protocol.CompressionNone {
		return recs, nil
	}
	return protocol.Decompress(h.Compression(), recs, maxDecompressed)
}

// forEachRecord calls fn with the offset and timestamp of each record of a
// batch (recs from recordsOf) until fn returns false. LogAppendTime batches
// give every record the batch's maxTimestamp, as Kafka does. A record of a
// compressed batch whose body is above maxRecord stops it with
// protocol.ErrRecordTooLarge (max.decompressed.message.bytes).
func forEachRecord(h *protocol.BatchHeader, recs []byte, maxRecord int, fn func(offset, ts int64) bool) error {
	logAppend := h.Attributes&protocol.AttrTimestampType != 0
	compressed := h.Compression() != protocol.CompressionNone
	for i := int32(0); i < h.RecordCount && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return fmt.Errorf("record %d: bad length", i)
		}
		if compressed && length > int64(maxRecord) {
			return fmt.Errorf("record %d of the batch at offset %d has a body of %d bytes, above max.decompressed.message.bytes %d: %w", i, h.BaseOffset, length, maxRecord, protocol.ErrRecordTooLarge)
		}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(body) < 1 {
			return fmt.Errorf("record %d: empty", i)
		}
		tsDelta, n1 := binary.Varint(body[1:])
		if n1 <= 0 {
			return fmt.Errorf("record %d: bad timestamp delta", i)
		}
		offDelta, n2 := binary.Varint(body[1+n1:])
		if n2 <= 0 {
			return fmt.Errorf("record %d: bad offset delta", i)
		}
		ts := h.BaseTimestamp + tsDelta
		if logAppend {
			ts = h.MaxTimestamp
		}
		if !fn(h.BaseOffset+offDelta, ts) {
			return nil
		}
	}
	return nil
}
