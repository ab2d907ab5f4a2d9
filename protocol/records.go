package protocol

// Records inside a v2 batch (Kafka's DefaultRecord). After the batch header
// come recordCount records, each:
//
//	length          varint   bytes that follow in this record
//	attributes      int8     unused, 0
//	timestampDelta  varlong  added to the batch's baseTimestamp
//	offsetDelta     varint   added to the batch's baseOffset
//	keyLength       varint   -1 for a null key
//	key             bytes
//	valueLength     varint   -1 for a null value
//	value           bytes
//	headerCount     varint
//	headers         per header: keyLength varint (>= 0), key,
//	                valueLength varint (-1: null), value
//
// Varints are zig-zag encoded as in protobuf (encoding/binary's Varint);
// varint fields are int32 of at most 5 bytes, varlong fields at most 10.
// For a compressed batch the same records are the decompressed payload.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// NoRecordLimit is the record-size limit that limits nothing.
const NoRecordLimit = math.MaxInt32

// ErrRecordTooLarge is the cause of the INVALID_RECORD error for a record of
// a compressed batch whose body is larger than the limit the reader was
// given: Kafka's max.decompressed.message.bytes, which bounds each record
// where the broker decompresses (produce, cleaning, lookups by timestamp).
// The records of an uncompressed batch are not held to it, as in Kafka,
// where max.message.bytes already bounds them.
var ErrRecordTooLarge = errors.New("record exceeds the configured maximum record size")

func recordTooLarge(i int32, size, limit int) error {
	return &BatchError{Code: CodeInvalidRecord, Msg: fmt.Sprintf("record %d has a body of %d bytes, above max.decompressed.message.bytes %d", i, size, limit), Err: ErrRecordTooLarge}
}

// Record is one record of a batch, as Records hands it out.
type Record struct {
	Offset     int64 // baseOffset + offsetDelta
	Timestamp  int64 // baseTimestamp + delta, or maxTimestamp for LogAppendTime
	Attributes int8
	Key        []byte // nil for a null key
	Value      []byte // nil for a null value (a tombstone)
	Headers    []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte // nil for a null value
}

// Records calls fn for each record of one v2 batch, decompressing it if
// needed. It checks the structure of the records but not the CRC nor the
// client rules of ValidateBatch, so it also reads compacted batches, whose
// offsets have gaps. The Record and the memory its slices point to are
// reused once fn returns: copy what you keep. An error from fn stops the
// walk and is returned.
func Records(batch []byte, fn func(r *Record) error) error {
	return RecordsWithin(batch, NoRecordLimit, fn)
}

// RecordsWithin is Records for a reader bound by max.decompressed.message.bytes:
// a compressed batch's record whose body is above maxRecord stops the walk
// with an ErrRecordTooLarge BatchError.
func RecordsWithin(batch []byte, maxRecord int, fn func(r *Record) error) error {
	n, err := nextBatchSize(batch)
	if err != nil {
		return err
	}
	h, err := ParseBatchHeader(batch[:n])
	if err != nil {
		return &BatchError{Code: CodeCorruptMessage, Msg: "bad header", Err: err}
	}
	data := batch[BatchHeaderSize:n]
	limit := NoRecordLimit
	if codec := h.Compression(); codec != CompressionNone {
		limit = maxRecord
		buf := getBuffer()
		defer putBuffer(buf)
		*buf, err = AppendDecompressed((*buf)[:0], codec, data, DefaultMaxUncompressedBatch)
		if err != nil {
			return &BatchError{Code: ErrorCode(err), Msg: "records do not decompress", Err: err}
		}
		data = *buf
	}
	var rec Record
	_, err = walkRecords(&h, data, limit, func(r rawRecord) error {
		rec = Record{
			Offset:     h.BaseOffset + int64(r.offsetDelta),
			Timestamp:  h.BaseTimestamp + r.timestampDelta,
			Attributes: r.attributes,
			Key:        r.key,
			Value:      r.value,
			Headers:    rec.Headers[:0],
		}
		if h.Attributes&AttrTimestampType != 0 {
			rec.Timestamp = h.MaxTimestamp
		}
		for hs := r.headers; len(hs) > 0; {
			var k, v []byte
			k, v, hs, _ = nextHeader(hs) // checked by walkRecords
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
		}
		return fn(&rec)
	})
	return err
}

// rawRecord is a record as parsed, before the batch's bases are added.
type rawRecord struct {
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headers        []byte // headerCount headers, encoded
}

// walkRecords parses count records from data, noting in the BatchInfo
// whether their offset deltas number them 0, 1, 2...; a record whose body
// is above maxRecord bytes is refused (ErrRecordTooLarge). It calls fn, if
// not nil, for each record, and does not allocate unless it fails.
func walkRecords(h *BatchHeader, data []byte, maxRecord int, fn func(rawRecord) error) (BatchInfo, error) {
	info := BatchInfo{MinTimestamp: NoTimestamp, MaxTimestamp: NoTimestamp, UncompressedSize: len(data)}
	off := 0
	for i := int32(0); i < h.RecordCount; i++ {
		if off == len(data) {
			return info, batchErr(CodeInvalidRecord, "batch declares %d records but holds %d", h.RecordCount, i)
		}
		size, n := varint32(data[off:])
		if n <= 0 || size < 0 || int(size) > len(data)-off-n {
			return info, batchErr(CodeInvalidRecord, "record %d: invalid length", i)
		}
		if int(size) > maxRecord {
			return info, recordTooLarge(i, int(size), maxRecord)
		}
		off += n
		r, ok := parseRecord(data[off : off+int(size)])
		if !ok {
			return info, batchErr(CodeInvalidRecord, "record %d: invalid record structure", i)
		}
		off += int(size)
		info.Misnumbered = info.Misnumbered || r.offsetDelta != i
		if ts := h.BaseTimestamp + r.timestampDelta; ts != NoTimestamp {
			if info.MaxTimestamp == NoTimestamp || ts > info.MaxTimestamp {
				info.MaxTimestamp = ts
			}
			if info.MinTimestamp == NoTimestamp || ts < info.MinTimestamp {
				info.MinTimestamp = ts
			}
		}
		if r.key == nil {
			info.NullKeys++
		}
		if fn != nil {
			if err := fn(r); err != nil {
				return info, err
			}
		}
	}
	if off != len(data) {
		return info, batchErr(CodeInvalidRecord, "%d trailing bytes after the last of %d records", len(data)-off, h.RecordCount)
	}
	return info, nil
}

// parseRecord parses the body of one record (after its length), which it
// must fill exactly.
func parseRecord(b []byte) (r rawRecord, ok bool) {
	if len(b) == 0 {
		return r, false
	}
	r.attributes = int8(b[0])
	b = b[1:]
	var n int
	if r.timestampDelta, n = varint64(b); n <= 0 {
		return r, false
	}
	b = b[n:]
	if r.offsetDelta, n = varint32(b); n <= 0 {
		return r, false
	}
	b = b[n:]
	if r.key, b, ok = nullableBytes(b); !ok {
		return r, false
	}
	if r.value, b, ok = nullableBytes(b); !ok {
		return r, false
	}
	count, n := varint32(b)
	if n <= 0 || count < 0 {
		return r, false
	}
	r.headers = b[n:]
	rest := r.headers
	for ; count > 0; count-- {
		if _, _, rest, ok = nextHeader(rest); !ok {
			return r, false
		}
	}
	return r, len(rest) == 0
}

// nextHeader parses one header from b. Header keys are never null.
func nextHeader(b []byte) (key, value, rest []byte, ok bool) {
	size, n := varint32(b)
	if n <= 0 || size < 0 || int(size) > len(b)-n {
		return nil, nil, b, false
	}
	key, b = b[n:n+int(size)], b[n+int(size):]
	if value, rest, ok = nullableBytes(b); !ok {
		return nil, nil, b, false
	}
	return key, value, rest, true
}

// nullableBytes reads a varint length and that many bytes; a negative
// length is null, as in Kafka.
func nullableBytes(b []byte) (v, rest []byte, ok bool) {
	size, n := varint32(b)
	if n <= 0 || int(size) > len(b)-n {
		return nil, b, false
	}
	if size < 0 {
		return nil, b[n:], true
	}
	return b[n : n+int(size) : n+int(size)], b[n+int(size):], true
}

// varint32 decodes a zig-zag varint of at most 5 bytes that fits an int32;
// n <= 0 means it does not.
func varint32(b []byte) (v int32, n int) {
	switch {
	case len(b) > 0 && b[0] < 0x80: // one byte: most lengths and deltas
		return int32(b[0]>>1) ^ -int32(b[0]&1), 1
	case len(b) > 1 && b[1] < 0x80: // two bytes: lengths up to 8 KiB
		u := uint32(b[0]&0x7f) | uint32(b[1])<<7
		return int32(u>>1) ^ -int32(u&1), 2
	}
	x, n := binary.Varint(b)
	if n <= 0 || n > 5 || x < math.MinInt32 || x > math.MaxInt32 {
		return 0, -1
	}
	return int32(x), n
}

// varint64 decodes a zig-zag varint; n <= 0 means it does not fit.
func varint64(b []byte) (v int64, n int) {
	switch {
	case len(b) > 0 && b[0] < 0x80:
		return int64(b[0]>>1) ^ -int64(b[0]&1), 1
	case len(b) > 1 && b[1] < 0x80:
		u := uint64(b[0]&0x7f) | uint64(b[1])<<7
		return int64(u>>1) ^ -int64(u&1), 2
	}
	return binary.Varint(b)
}

// Decompression buffers, pooled so that validating compressed batches
// allocates only when a batch is larger than any seen recently.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 4 << 20

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		*b = nil
	}
	buffers.Put(b)
}

// DataRecords calls fn for each record of the data batches in b (a log
// read), skipping control batches: how a coordinator replays its topic.
func DataRecords(b []byte, fn func(r *Record) error) error {
	return EachBatch(b, func(h BatchHeader, batch []byte) error {
		if h.Attributes&AttrControl != 0 {
			return nil
		}
		return Records(batch, fn)
	})
}
