package protocol

import (
	"encoding/binary"
	"fmt"
)

// Control batches (attributes transactional|control) carry one record that
// ends a transaction on a partition (Kafka's EndTransactionMarker). The
// record's key is (int16 version 0, int16 type: 0 abort, 1 commit) and its
// value (int16 version 0, int32 coordinator epoch); the batch has the
// producer's id and epoch, base sequence -1, and is never compressed.
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// EndTxnMarker is what a control batch says: commit or abort, and the epoch
// of the transaction coordinator that wrote it.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// AppendEndTxnMarker appends a control batch ending producerID's
// transaction, at base offset 0, stamped timestampMs.
func AppendEndTxnMarker(dst []byte, producerID int64, producerEpoch int16, m EndTxnMarker, timestampMs int64) []byte {
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], controlTypeAbort)
	if m.Commit {
		binary.BigEndian.PutUint16(key[2:], controlTypeCommit)
	}
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	h := BatchHeader{
		Attributes:    AttrTransactional | AttrControl,
		ProducerID:    producerID,
		ProducerEpoch: producerEpoch,
		BaseSequence:  -1,
	}
	out, err := AppendBatch(dst, h, []Record{{Offset: 0, Timestamp: timestampMs, Key: key, Value: value}})
	if err != nil {
		panic(err) // one uncompressed record at offset 0 always encodes
	}
	return out
}

// ParseEndTxnMarker reads the marker of a control batch.
func ParseEndTxnMarker(batch []byte) (EndTxnMarker, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if h.Attributes&AttrControl == 0 {
		return EndTxnMarker{}, fmt.Errorf("batch at offset %d is not a control batch", h.BaseOffset)
	}
	var m EndTxnMarker
	var found bool
	err = Records(batch, func(r *Record) error {
		if found {
			return fmt.Errorf("control batch at offset %d has more than one record", h.BaseOffset)
		}
		found = true
		if len(r.Key) < 4 || len(r.Value) < 6 {
			return fmt.Errorf("control record at offset %d is too short", r.Offset)
		}
		switch binary.BigEndian.Uint16(r.Key[2:]) {
		case controlTypeAbort:
		case controlTypeCommit:
			m.Commit = true
		default:
			return fmt.Errorf("control record at offset %d has unknown type %d", r.Offset, binary.BigEndian.Uint16(r.Key[2:]))
		}
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("control batch at offset %d has no record", h.BaseOffset)
	}
	return m, err
}
