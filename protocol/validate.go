package protocol

// Validation of record batches that clients produce.
//
// Gregor stores batches as they arrive, so every batch a client sends is
// checked here once, before it is appended, in the order Apache Kafka checks
// it (ByteBufferLogInputStream framing, ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords, LogValidator.validateBatch, then the
// record iterator), and each failure carries the error code Kafka would put
// in the produce response:
//
//	CORRUPT_MESSAGE (2)               the bytes are damaged: batch length too
//	                                  small or beyond the data, bytes after
//	                                  the batch, magic not 0..2, CRC-32C
//	                                  mismatch. Retriable: clients resend.
//	INVALID_RECORD (87)               the CRC is right but the client wrote
//	                                  something Kafka refuses: magic 0/1,
//	                                  baseOffset != 0, recordCount <= 0,
//	                                  lastOffsetDelta+1 != recordCount,
//	                                  control batch, producerId >= 0 with
//	                                  baseSequence < 0, records that do not
//	                                  parse or do not number recordCount,
//	                                  a compressed payload that does not
//	                                  decompress (or lz4 that Kafka's
//	                                  decoder cannot read).
//	                                  Not retriable.
//	UNSUPPORTED_COMPRESSION_TYPE (76) codec 5..7.
//	MESSAGE_TOO_LARGE (10)            the records of a compressed batch
//	                                  decompress to more than the limit
//	                                  (Kafka has none; we need one).
//
// Checks that depend on topic configuration (message.max.bytes, timestamps
// against message.timestamp.*.max.ms, keys on compacted topics, zstd with
// produce < v7) are the broker's; ValidateBatchInfo returns what they need.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kafka error codes used by batch validation (kerr in franz-go has them all).
const (
	CodeUnknownServerError         int16 = -1
	CodeCorruptMessage             int16 = 2
	CodeMessageTooLarge            int16 = 10
	CodeUnsupportedCompressionType int16 = 76
	CodeInvalidRecord              int16 = 87
)

// DefaultMaxUncompressedBatch bounds what ValidateBatch and Records let a
// compressed batch expand to.
const DefaultMaxUncompressedBatch = 64 << 20

// NoTimestamp is Kafka's "no timestamp" value (-1).
const NoTimestamp = -1

const (
	magicOffset       = 16
	legacyMinLength   = 14 // smallest batchLength of any magic (v0 message)
	minV2BatchLength  = BatchHeaderSize - LogOverhead
	legacyMagicLatest = 1
)

// BatchError is a batch refused with a Kafka error code.
type BatchError struct {
	Code int16  // Kafka error code for the produce response
	Msg  string // for humans
	Err  error  // underlying cause, if any
}

func (e *BatchError) Error() string {
	s := codeName(e.Code) + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *BatchError) Unwrap() error { return e.Err }

func codeName(code int16) string {
	switch code {
	case CodeCorruptMessage:
		return "CORRUPT_MESSAGE"
	case CodeMessageTooLarge:
		return "MESSAGE_TOO_LARGE"
	case CodeUnsupportedCompressionType:
		return "UNSUPPORTED_COMPRESSION_TYPE"
	case CodeInvalidRecord:
		return "INVALID_RECORD"
	}
	return fmt.Sprintf("error %d", code)
}

func batchErr(code int16, format string, args ...any) error {
	return &BatchError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ErrorCode maps an error from this package to the Kafka error code a
// response should carry: 0 for nil, a BatchError's Code, CORRUPT_MESSAGE for
// ErrShortBatch, MESSAGE_TOO_LARGE for ErrDecompressedTooLarge,
// INVALID_RECORD for ErrRecordTooLarge, and UNKNOWN_SERVER_ERROR for
// anything else.
func ErrorCode(err error) int16 {
	var be *BatchError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &be):
		return be.Code
	case errors.Is(err, ErrShortBatch):
		return CodeCorruptMessage
	case errors.Is(err, ErrDecompressedTooLarge):
		return CodeMessageTooLarge
	case errors.Is(err, ErrRecordTooLarge):
		return CodeInvalidRecord
	}
	return CodeUnknownServerError
}

// nextBatchSize returns the size of the batch at the start of b, checking
// what framing needs: the length field, the magic, and that the batch fits.
func nextBatchSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, &BatchError{Code: CodeCorruptMessage, Msg: fmt.Sprintf("%d bytes cannot hold a batch length", len(b)), Err: ErrShortBatch}
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	if length < legacyMinLength {
		return 0, batchErr(CodeCorruptMessage, "record batch length %d is below the minimum %d", length, legacyMinLength)
	}
	if len(b) <= magicOffset {
		return 0, &BatchError{Code: CodeCorruptMessage, Msg: "batch ends before its magic byte", Err: ErrShortBatch}
	}
	switch magic := int8(b[magicOffset]); {
	case magic >= 0 && magic <= legacyMagicLatest:
		// Kafka's ProduceRequest.validateRecords: InvalidRecordException.
		return 0, batchErr(CodeInvalidRecord, "record batch has magic %d; produce v3 and later must carry magic 2", magic)
	case magic != 2:
		return 0, batchErr(CodeCorruptMessage, "invalid magic %d", magic)
	}
	if length < minV2BatchLength {
		return 0, batchErr(CodeCorruptMessage, "record batch length %d is below the v2 header size %d", length, minV2BatchLength)
	}
	if int64(length)+LogOverhead > int64(len(b)) {
		return 0, &BatchError{Code: CodeCorruptMessage,
			Msg: fmt.Sprintf("batch of %d bytes, only %d present", int64(length)+LogOverhead, len(b)), Err: ErrShortBatch}
	}
	return int(length) + LogOverhead, nil
}

// SplitBatches cuts a records field (a concatenation of magic-v2 batches)
// into one slice per batch, each with its capacity clipped to its length.
// It checks framing only; ValidateBatch checks each batch. Empty input gives
// no batches.
func SplitBatches(b []byte) ([][]byte, error) {
	var batches [][]byte
	if err := eachBatch(b, func(batch []byte) { batches = append(batches, batch) }); err != nil {
		return nil, err
	}
	return batches, nil
}

// IteratorBatchSize is the size of the batch b starts with as Kafka's
// batch iterator over a produce request's records reads it
// (ByteBufferLogInputStream.nextBatch): 0 when b holds no whole batch
// (fewer bytes than a length and magic, or a batch cut short), where the
// iterator ends without an error; CORRUPT_MESSAGE for a length below the
// smallest message's or a magic outside 0..2. It does not allocate unless
// it fails.
func IteratorBatchSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, nil
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	if length < legacyMinLength {
		return 0, batchErr(CodeCorruptMessage, "record batch length %d is below the minimum %d", length, legacyMinLength)
	}
	if len(b) <= magicOffset {
		return 0, nil
	}
	if magic := int8(b[magicOffset]); magic < 0 || magic > 2 {
		return 0, batchErr(CodeCorruptMessage, "invalid magic %d", magic)
	}
	if size := int64(length) + LogOverhead; size <= int64(len(b)) {
		return int(size), nil
	}
	return 0, nil
}

// EachBatch calls fn with the header and bytes of each batch of a records
// field or log read, in order, checking framing only; an error from fn
// stops the walk and is returned.
func EachBatch(b []byte, fn func(h BatchHeader, batch []byte) error) error {
	for len(b) > 0 {
		n, err := nextBatchSize(b)
		if err != nil {
			return err
		}
		h, err := ParseBatchHeader(b[:n])
		if err != nil {
			return err
		}
		if err := fn(h, b[:n:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func eachBatch(b []byte, fn func(batch []byte)) error {
	for len(b) > 0 {
		n, err := nextBatchSize(b)
		if err != nil {
			return err
		}
		fn(b[:n:n])
		b = b[n:]
	}
	return nil
}

// ValidateBatch checks one magic-v2 batch from a client, occupying exactly b,
// as Kafka does before appending it (the comment atop validate.go lists the
// checks and their codes). Errors are *BatchError. It does not allocate for an
// uncompressed batch. It demands baseOffset 0, as Kafka does of clients, so
// batches read back from a log or fetched from a leader are not for it:
// ParseBatchHeader and BatchCRC check those.
func ValidateBatch(b []byte) (BatchHeader, error) {
	h, _, err := ValidateBatchInfo(b, DefaultMaxUncompressedBatch, NoRecordLimit)
	return h, err
}

// BatchInfo is what validation learns by walking the records, for the
// checks that depend on topic configuration.
type BatchInfo struct {
	// MinTimestamp and MaxTimestamp span the record timestamps (base
	// timestamp plus delta) other than NoTimestamp; both are NoTimestamp if
	// no record has one. Kafka checks every record timestamp against
	// message.timestamp.{before,after}.max.ms, and for CreateTime topics
	// rewrites the header's maxTimestamp to MaxTimestamp.
	MinTimestamp, MaxTimestamp int64
	// NullKeys counts records without a key; a compacted topic refuses such
	// a batch with INVALID_RECORD.
	NullKeys int32
	// UncompressedSize is the size of the records section once decompressed.
	UncompressedSize int
	// Misnumbered is set when the records' offset deltas are not 0, 1,
	// 2...: Kafka's LogValidator rebuilds such a batch (Renumber).
	Misnumbered bool
}

// ValidateBatchInfo is ValidateBatch with limits on what a compressed
// batch decompresses to: its records (beyond maxUncompressed:
// MESSAGE_TOO_LARGE) and each record's body (beyond maxRecord:
// INVALID_RECORD with ErrRecordTooLarge, Kafka's
// max.decompressed.message.bytes). An uncompressed batch, already in
// memory, is held to neither: max.message.bytes alone bounds it, as in
// Kafka. It also returns what it learned about the records.
func ValidateBatchInfo(b []byte, maxUncompressed, maxRecord int) (BatchHeader, BatchInfo, error) {
	var h BatchHeader
	n, err := nextBatchSize(b)
	if err != nil {
		return h, BatchInfo{}, err
	}
	if n != len(b) {
		return h, BatchInfo{}, batchErr(CodeCorruptMessage, "%d trailing bytes after the %d-byte batch", len(b)-n, n)
	}
	if h, err = ParseBatchHeader(b); err != nil { // cannot fail after nextBatchSize
		return h, BatchInfo{}, &BatchError{Code: CodeCorruptMessage, Msg: "bad header", Err: err}
	}
	if err := checkHeader(b, &h); err != nil {
		return h, BatchInfo{}, err
	}
	records := b[BatchHeaderSize:]
	recordLimit := NoRecordLimit
	if codec := h.Compression(); codec != CompressionNone {
		if codec == CompressionLz4 {
			if err := checkKafkaLz4Frame(records); err != nil {
				return h, BatchInfo{}, &BatchError{Code: CodeInvalidRecord, Msg: "records do not decompress", Err: err}
			}
		}
		recordLimit = maxRecord
		buf := getBuffer()
		defer putBuffer(buf)
		*buf, err = AppendDecompressed((*buf)[:0], codec, records, maxUncompressed)
		switch {
		case errors.Is(err, ErrDecompressedTooLarge):
			return h, BatchInfo{}, batchErr(CodeMessageTooLarge, "records decompress to more than %d bytes", maxUncompressed)
		case err != nil:
			return h, BatchInfo{}, &BatchError{Code: CodeInvalidRecord, Msg: "records do not decompress", Err: err}
		}
		records = *buf
	}
	info, err := walkRecords(&h, records, recordLimit, nil)
	return h, info, err
}

// checkHeader applies the header checks of UnifiedLog and LogValidator for
// client appends, after framing.
func checkHeader(b []byte, h *BatchHeader) error {
	switch {
	case h.BaseOffset != 0:
		return batchErr(CodeInvalidRecord, "baseOffset of a produced batch must be 0, not %d", h.BaseOffset)
	case h.CRC != BatchCRC(b):
		return batchErr(CodeCorruptMessage, "CRC mismatch: header has %#08x, bytes give %#08x", h.CRC, BatchCRC(b))
	case h.Compression() > CompressionZstd:
		return batchErr(CodeUnsupportedCompressionType, "unknown compression codec %d", h.Compression())
	case h.LastOffsetDelta < 0:
		return batchErr(CodeInvalidRecord, "invalid lastOffsetDelta %d", h.LastOffsetDelta)
	case h.RecordCount <= 0:
		return batchErr(CodeInvalidRecord, "invalid record count %d", h.RecordCount)
	case int64(h.LastOffsetDelta)+1 != int64(h.RecordCount):
		return batchErr(CodeInvalidRecord, "lastOffsetDelta %d does not match record count %d", h.LastOffsetDelta, h.RecordCount)
	case h.Attributes&AttrControl != 0:
		return batchErr(CodeInvalidRecord, "clients may not write control batches")
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return batchErr(CodeInvalidRecord, "invalid sequence %d for producer id %d", h.BaseSequence, h.ProducerID)
	}
	return nil
}
