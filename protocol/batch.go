package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record batch v2 header layout (Kafka's DefaultRecordBatch), big-endian:
//
//	offset  size  field
//	0       8     baseOffset
//	8       4     batchLength (bytes after this field)
//	12      4     partitionLeaderEpoch
//	16      1     magic (2)
//	17      4     crc (CRC-32C of bytes 21..end)
//	21      2     attributes
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records
const (
	BatchHeaderSize = 61
	// LogOverhead is the part of a batch before batchLength counts: baseOffset and batchLength.
	LogOverhead = 12
	crcStart    = 21
)

// Attribute bits of a v2 batch.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Compression codecs as numbered in the attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLz4    = 3
	CompressionZstd   = 4
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ErrShortBatch says the bytes end before the batch they announce.
var ErrShortBatch = errors.New("record batch truncated")

// BatchHeader is the decoded fixed-size header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the whole batch's size in bytes, header included.
func (h *BatchHeader) Size() int { return LogOverhead + int(h.BatchLength) }

// LastOffset is the offset of the batch's last record.
func (h *BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec number in the attributes.
func (h *BatchHeader) Compression() int8 { return int8(h.Attributes & AttrCompressionMask) }

// LastSequence is the sequence of the batch's last record, wrapping like Kafka's.
func (h *BatchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// ParseBatchHeader decodes the header at the start of b. It checks only that
// the header is there and that the announced length fits in b; use
// ValidateBatch for the full checks.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < BatchHeaderSize {
		return h, ErrShortBatch
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[0:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[8:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	h.Magic = int8(b[16])
	h.CRC = binary.BigEndian.Uint32(b[17:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[21:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[53:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[57:]))
	if h.BatchLength < BatchHeaderSize-LogOverhead {
		return h, fmt.Errorf("record batch length %d is below the header size", h.BatchLength)
	}
	if int64(h.BatchLength)+LogOverhead > int64(len(b)) {
		return h, ErrShortBatch
	}
	return h, nil
}

// BatchCRC computes the CRC-32C a batch's header should carry.
func BatchCRC(batch []byte) uint32 { return crc32.Checksum(batch[crcStart:], crc32c) }

// SetBaseOffset writes a new base offset into a batch in place; the CRC does
// not cover it.
func SetBaseOffset(batch []byte, off int64) { binary.BigEndian.PutUint64(batch[0:], uint64(off)) }

// SetPartitionLeaderEpoch writes the leader epoch into a batch in place; the
// CRC does not cover it.
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[12:], uint32(epoch))
}

// SetLogAppendTime marks a batch as LogAppendTime with maxTimestamp ts and
// recomputes its CRC.
func SetLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[21:]) | AttrTimestampType
	binary.BigEndian.PutUint16(batch[21:], attrs)
	binary.BigEndian.PutUint64(batch[35:], uint64(ts))
	binary.BigEndian.PutUint32(batch[17:], BatchCRC(batch))
}

// SetCreateTime marks a batch as CreateTime with maxTimestamp ts and
// recomputes its CRC (Kafka's setMaxTimestamp(CREATE_TIME, ts)).
func SetCreateTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[21:]) &^ AttrTimestampType
	binary.BigEndian.PutUint16(batch[21:], attrs)
	binary.BigEndian.PutUint64(batch[35:], uint64(ts))
	binary.BigEndian.PutUint32(batch[17:], BatchCRC(batch))
}
