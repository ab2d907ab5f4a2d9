package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// AppendBatch appends to dst a v2 record batch holding records, encoded
// with the layout drawn in batch.go and records.go. From h it takes the
// fields a writer chooses: BaseOffset, PartitionLeaderEpoch, Attributes
// (codec, timestamp type, transactional, control), ProducerID,
// ProducerEpoch and BaseSequence. It derives the rest from the records:
// each record's offsetDelta is its Offset minus h.BaseOffset (so offsets
// may have gaps, as in a compacted batch), BaseTimestamp is the first
// record's timestamp, MaxTimestamp the largest (h.MaxTimestamp under
// LogAppendTime), LastOffsetDelta that of the last record unless
// h.LastOffsetDelta is larger (a compacted batch keeps its original last
// offset). The payload is compressed with the codec in h.Attributes and the
// CRC computed last. Records' Attributes are written as 0, as Kafka does.
func AppendBatch(dst []byte, h BatchHeader, records []Record) ([]byte, error) {
	if len(records) == 0 && h.LastOffsetDelta < 0 {
		return dst, fmt.Errorf("a batch needs a record or a last offset delta")
	}
	base := int64(NoTimestamp)
	if len(records) > 0 {
		base = records[0].Timestamp
	}
	return appendBatch(dst, h, base, records)
}

// appendBatch encodes records into a batch whose baseTimestamp is base:
// the first record's timestamp, or a delete horizon (stored.go).
func appendBatch(dst []byte, h BatchHeader, base int64, records []Record) ([]byte, error) {
	lastDelta := h.LastOffsetDelta
	maxTs := int64(NoTimestamp)
	raw := getBuffer()
	defer putBuffer(raw)
	body := (*raw)[:0]
	for i := range records {
		r := &records[i]
		delta := r.Offset - h.BaseOffset
		if delta < 0 || delta > 1<<31-1 || (i > 0 && r.Offset <= records[i-1].Offset) {
			return dst, fmt.Errorf("record offset %d does not fit a batch based at %d", r.Offset, h.BaseOffset)
		}
		lastDelta = max(lastDelta, int32(delta))
		if maxTs == NoTimestamp || r.Timestamp > maxTs {
			maxTs = r.Timestamp
		}
		body = appendRecord(body, r.Timestamp-base, int32(delta), r)
	}
	*raw = body
	if h.Attributes&AttrTimestampType != 0 {
		maxTs = h.MaxTimestamp
	}
	h.LastOffsetDelta, h.BaseTimestamp, h.MaxTimestamp, h.RecordCount = lastDelta, base, maxTs, int32(len(records))
	start := len(dst)
	dst = appendHeader(dst, &h)
	if codec := int8(h.Attributes & AttrCompressionMask); codec != CompressionNone {
		var err error
		if dst, err = AppendCompressed(dst, codec, body); err != nil {
			return dst[:start], err
		}
	} else {
		dst = append(dst, body...)
	}
	finishBatch(dst[start:])
	return dst, nil
}

// appendHeader appends the 61-byte header of h (magic 2) with the length
// and CRC left zero for finishBatch.
func appendHeader(dst []byte, h *BatchHeader) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, 2)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	return binary.BigEndian.AppendUint32(dst, uint32(h.RecordCount))
}

// finishBatch sets the length and CRC of a whole batch.
func finishBatch(batch []byte) {
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-LogOverhead))
	binary.BigEndian.PutUint32(batch[17:], BatchCRC(batch))
}

// appendRecord appends one record in the DefaultRecord layout.
func appendRecord(dst []byte, tsDelta int64, offsetDelta int32, r *Record) []byte {
	var scratch [binary.MaxVarintLen64]byte
	size := 1 + binary.PutVarint(scratch[:], tsDelta) + binary.PutVarint(scratch[:], int64(offsetDelta)) +
		nullableSize(r.Key) + nullableSize(r.Value) + binary.PutVarint(scratch[:], int64(len(r.Headers)))
	for _, hd := range r.Headers {
		size += binary.PutVarint(scratch[:], int64(len(hd.Key))) + len(hd.Key) + nullableSize(hd.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, 0)
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, hd := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(hd.Key)))
		dst = append(dst, hd.Key...)
		dst = appendNullable(dst, hd.Value)
	}
	return dst
}

func nullableSize(b []byte) int {
	var scratch [binary.MaxVarintLen64]byte
	if b == nil {
		return binary.PutVarint(scratch[:], -1)
	}
	return binary.PutVarint(scratch[:], int64(len(b))) + len(b)
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// Renumber returns a copy of the single v2 batch in batch whose records'
// offset deltas are 0, 1, 2... in their order, rebuilt as Kafka's
// LogValidator rebuilds a produced batch whose records are numbered
// otherwise: the header's fields (baseOffset 0) and codec, at its default
// level, and each record's timestamp, key, value and headers.
func Renumber(batch []byte) ([]byte, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, err
	}
	var records []Record
	err = Records(batch, func(r *Record) error {
		kept := Record{Offset: int64(len(records)), Timestamp: r.Timestamp, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
		for _, hd := range r.Headers {
			kept.Headers = append(kept.Headers, Header{Key: hd.Key, Value: bytes.Clone(hd.Value)})
		}
		records = append(records, kept)
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.BaseOffset = 0
	return AppendBatch(nil, h, records)
}
