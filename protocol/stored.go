package protocol

// Batches as the log cleaner rewrites them (AppendBatch in build.go builds
// ordinary ones).
//
// KIP-534 delete horizon: attribute bit 6 says that the batch's
// baseTimestamp is the time after which the cleaner may drop its
// tombstones; record timestamps are still baseTimestamp + timestampDelta,
// so the deltas are relative to the horizon.
//
// An empty batch (no records) is what the cleaner keeps of a batch whose
// records all went but whose header must stay (a producer's last sequence,
// the last offset of a cleaning round): Kafka's writeEmptyHeader writes it
// uncompressed, with baseTimestamp -1, the original maxTimestamp and last
// offset delta, and no delete horizon.

import (
	"fmt"
)

// AttrDeleteHorizon marks a batch whose baseTimestamp is the delete horizon
// set by the log cleaner (KIP-534).
const AttrDeleteHorizon = 0x40

// DeleteHorizon returns a batch's delete horizon, if it has one.
func (h *BatchHeader) DeleteHorizon() (int64, bool) {
	if h.Attributes&AttrDeleteHorizon == 0 {
		return NoTimestamp, false
	}
	return h.BaseTimestamp, true
}

// AppendBatchWithDeleteHorizon is AppendBatch for a batch carrying a delete
// horizon: attribute bit 6 is set and baseTimestamp is horizon rather than
// the first record's timestamp. It needs at least one record.
func AppendBatchWithDeleteHorizon(dst []byte, h BatchHeader, horizon int64, records []Record) ([]byte, error) {
	if len(records) == 0 {
		return dst, fmt.Errorf("a batch with a delete horizon needs a record")
	}
	h.Attributes |= AttrDeleteHorizon
	return appendBatch(dst, h, horizon, records)
}

// AppendEmptyBatch appends the header-only batch Kafka's cleaner keeps in
// place of a batch whose records all went (see the top of this file): h's
// offsets, epochs, producer fields and timestamp type, transactional and
// control bits, uncompressed, no records.
func AppendEmptyBatch(dst []byte, h BatchHeader) []byte {
	hdr := h
	hdr.Attributes &= AttrTimestampType | AttrTransactional | AttrControl
	hdr.BaseTimestamp, hdr.RecordCount = NoTimestamp, 0
	start := len(dst)
	dst = appendHeader(dst, &hdr)
	finishBatch(dst[start:])
	return dst
}

// ValidateStoredBatch checks one magic-v2 batch as a log stores it, which
// ValidateBatch (made for client batches) refuses once compacted: any base
// offset, offset gaps, fewer records than lastOffsetDelta+1, even none. It
// checks the framing, magic, CRC and codec, and that the records parse,
// number recordCount and have offset deltas strictly increasing within
// [0, lastOffsetDelta]. Errors are *BatchError.
func ValidateStoredBatch(b []byte) (BatchHeader, error) {
	var h BatchHeader
	n, err := nextBatchSize(b)
	if err != nil {
		return h, err
	}
	if n != len(b) {
		return h, batchErr(CodeCorruptMessage, "%d trailing bytes after the %d-byte batch", len(b)-n, n)
	}
	if h, err = ParseBatchHeader(b); err != nil {
		return h, &BatchError{Code: CodeCorruptMessage, Msg: "bad header", Err: err}
	}
	switch {
	case h.Magic != 2:
		return h, batchErr(CodeCorruptMessage, "magic %d is not 2", h.Magic)
	case h.CRC != BatchCRC(b):
		return h, batchErr(CodeCorruptMessage, "CRC mismatch: header has %#08x, bytes give %#08x", h.CRC, BatchCRC(b))
	case h.Compression() > CompressionZstd:
		return h, batchErr(CodeUnsupportedCompressionType, "unknown compression codec %d", h.Compression())
	case h.LastOffsetDelta < 0 || h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1:
		return h, batchErr(CodeInvalidRecord, "%d records cannot have last offset delta %d", h.RecordCount, h.LastOffsetDelta)
	}
	records := b[BatchHeaderSize:]
	if codec := h.Compression(); codec != CompressionNone {
		buf := getBuffer()
		defer putBuffer(buf)
		if *buf, err = AppendDecompressed((*buf)[:0], codec, records, DefaultMaxUncompressedBatch); err != nil {
			return h, &BatchError{Code: CodeInvalidRecord, Msg: "records do not decompress", Err: err}
		}
		records = *buf
	}
	prev := int32(-1)
	_, err = walkRecords(&h, records, NoRecordLimit, func(r rawRecord) error {
		if r.offsetDelta <= prev || r.offsetDelta > h.LastOffsetDelta {
			return batchErr(CodeInvalidRecord, "offset delta %d after %d in a batch with last delta %d", r.offsetDelta, prev, h.LastOffsetDelta)
		}
		prev = r.offsetDelta
		return nil
	})
	return h, err
}
